package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/catchbox/catchbox/client"
	"github.com/catchbox/catchbox/internal/totp"
	"github.com/catchbox/catchbox/internal/version"
)

// The client commands (CONTRACT.md section 3) talk to a running server over
// HTTP through the Go client, for shell-based CI:
//
//	link=$(catchbox wait --namespace ci --to alice@ --link)
//
// Exit status: 0 when they print what was asked; 1 when nothing matched within
// the timeout, or the match has no link or code to print; 2 on any other
// failure (the server unreachable, a rejected key or parameter); 64
// (exitUsage) for a command line or setting that cannot be used.
//
// A wait matches only what was received since --since, by default 30 s
// before the command started: a CI job that sent nothing must not pass on
// the mail an earlier job left in the namespace.
const (
	exitNoMatch = 1
	exitFailed  = 2
)

// exitError is a failure with its exit status.
type exitError struct {
	code int
	err  error
}

// Error is the message without the client's "catchbox: " prefix, which main
// prints once.
func (e *exitError) Error() string { return strings.TrimPrefix(e.err.Error(), "catchbox: ") }
func (e *exitError) Unwrap() error { return e.err }

// connection is how the client commands reach the server.
type connection struct {
	URL    string `name:"url" env:"CATCHBOX_URL" default:"http://127.0.0.1:8025" help:"Base URL of the Catchbox server."`
	APIKey string `name:"api-key" env:"CATCHBOX_API_KEY" help:"API key of the organisation (X-Api-Key)."`
}

func (c connection) client() (*client.Client, error) {
	cl, err := client.New(c.URL, c.APIKey)
	if err != nil {
		return nil, &exitError{exitFailed, err}
	}
	return cl, nil
}

// waitCmd is catchbox wait.
type waitCmd struct {
	connection `embed:""`
	Namespace  string `required:"" help:"Namespace to wait in."`
	To         string `help:"A recipient (To, Cc or envelope) starts with this: an address, or its local part and @."`
	Subject    string `help:"The subject contains this (case-insensitive)."`
	From       string `help:"The From address contains this (case-insensitive)."`
	sinceFlag  `embed:""`
	Timeout    time.Duration `default:"60s" help:"How long to wait before giving up (exit status 1)."`
	JSON       bool          `name:"json" xor:"output" help:"Print the email as one JSON object (the API's Email)."`
	Link       bool          `xor:"output" help:"Print only the email's first link."`
	Code       bool          `xor:"output" help:"Print only the email's first one-time code."`
}

func (c *waitCmd) Run() error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	e, err := cl.WaitForEmail(ctx, c.Namespace, client.Filter{To: c.To, Subject: c.Subject, From: c.From, Since: c.since})
	if errors.Is(err, client.ErrWaitEnded) {
		return &exitError{exitNoMatch, fmt.Errorf("no email in namespace %s matched%s within %s (%s)", c.Namespace,
			describe("to", c.To, "subject", c.Subject, "from", c.From), c.Timeout, c.describeSince())}
	}
	if err != nil {
		return &exitError{exitFailed, err}
	}
	switch {
	case c.JSON:
		return printJSON(os.Stdout, e)
	case c.Link:
		if len(e.Links) == 0 {
			return &exitError{exitNoMatch, fmt.Errorf("email %s (%q) has no link", e.ID, e.Subject)}
		}
		fmt.Println(e.Links[0].Href)
	case c.Code:
		if len(e.Codes) == 0 {
			return &exitError{exitNoMatch, fmt.Errorf("email %s (%q) has no code", e.ID, e.Subject)}
		}
		fmt.Println(e.Codes[0])
	default:
		printEmail(os.Stdout, e)
	}
	return nil
}

// smsCmd groups the SMS client commands.
type smsCmd struct {
	Wait smsWaitCmd `cmd:"" help:"Wait for an SMS and print it, or its first code (talks to a running server)."`
}

// smsWaitCmd is catchbox sms wait.
type smsWaitCmd struct {
	connection `embed:""`
	Number     string `required:"" help:"The SMS number, E.164 (+15551234567)."`
	Body       string `help:"The body contains this (case-insensitive)."`
	From       string `help:"The sender starts with this."`
	sinceFlag  `embed:""`
	Timeout    time.Duration `default:"60s" help:"How long to wait before giving up (exit status 1)."`
	JSON       bool          `name:"json" xor:"output" help:"Print the message as one JSON object (the API's SmsMessage)."`
	Code       bool          `xor:"output" help:"Print only the message's first one-time code."`
}

func (c *smsWaitCmd) Run() error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	m, err := cl.WaitForSMS(ctx, c.Number, client.SMSFilter{Body: c.Body, From: c.From, Since: c.since})
	if errors.Is(err, client.ErrWaitEnded) {
		return &exitError{exitNoMatch, fmt.Errorf("no SMS to %s matched%s within %s (%s)", c.Number,
			describe("body", c.Body, "from", c.From), c.Timeout, c.describeSince())}
	}
	if err != nil {
		return &exitError{exitFailed, err}
	}
	switch {
	case c.JSON:
		return printJSON(os.Stdout, m)
	case c.Code:
		if len(m.Codes) == 0 {
			return &exitError{exitNoMatch, fmt.Errorf("SMS %s has no code: %q", m.ID, m.Body)}
		}
		fmt.Println(m.Codes[0])
	default:
		fmt.Printf("From: %s\nTo: %s\nReceived: %s\nId: %s\n", m.FromNumber, m.ToNumber, m.CreatedAt.UTC().Format(time.RFC3339Nano), m.ID)
		printFirst(os.Stdout, m.Links, m.Codes)
		fmt.Printf("\n%s\n", m.Body)
	}
	return nil
}

// otpCmd is catchbox otp.
type otpCmd struct {
	connection `embed:""`
	Secret     string `xor:"source" required:"" placeholder:"BASE32" help:"Base32 shared secret: the code is computed here (6 digits, 30 seconds, SHA1), no server needed."`
	Device     string `xor:"source" required:"" placeholder:"ID" help:"Id of a saved device: the server gives its code."`
}

func (c *otpCmd) Run() error {
	if c.Secret != "" {
		key, err := totp.DecodeSecret(c.Secret)
		if err != nil {
			return &exitError{exitFailed, fmt.Errorf("--secret: %w", err)}
		}
		fmt.Println(totp.Generate(key, totp.DefaultParams, time.Now()).Code)
		return nil
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	otp, err := cl.OTP(ctx, c.Device)
	if err != nil {
		return &exitError{exitFailed, err}
	}
	fmt.Println(otp.Code)
	return nil
}

// versionCmd prints the build's version (internal/version, set at build time:
// make build sets it from git describe).
type versionCmd struct{}

func (versionCmd) Run() error {
	fmt.Println(version.Version)
	return nil
}

// describe writes the filters that were given, for a message.
func describe(pairs ...string) string {
	var parts []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			parts = append(parts, fmt.Sprintf("%s %q", pairs[i], pairs[i+1]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return &exitError{exitFailed, err}
	}
	fmt.Fprintln(w, string(b))
	return nil
}

// printEmail writes an email for people: its header fields, first link and
// code, then its text body.
func printEmail(w io.Writer, e client.Email) {
	from := e.From.Address
	if e.From.Name != "" {
		from = e.From.Name + " <" + e.From.Address + ">"
	}
	var to []string
	for _, a := range e.To {
		to = append(to, a.Address)
	}
	fmt.Fprintf(w, "From: %s\nTo: %s\nSubject: %s\nReceived: %s\nId: %s\n", from, strings.Join(to, ", "), e.Subject,
		e.ReceivedDate.UTC().Format(time.RFC3339Nano), e.ID)
	printFirst(w, e.Links, e.Codes)
	switch {
	case e.Text != "":
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(e.Text, "\r\n"))
	case e.HTML != "":
		fmt.Fprintf(w, "\n(HTML only, %d bytes: use --json to see it)\n", len(e.HTML))
	}
}

func printFirst(w io.Writer, links []client.Link, codes []string) {
	if len(links) > 0 {
		fmt.Fprintf(w, "Link: %s\n", links[0].Href)
	}
	if len(codes) > 0 {
		fmt.Fprintf(w, "Code: %s\n", codes[0])
	}
}
