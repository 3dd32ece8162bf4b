package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// seedTopics give the seeded subjects a realistic mix: each topic is in one
// message of ten, so "password reset" is a broad search (10% of the inbox)
// while "Order 0042317" matches one message.
var seedTopics = []string{
	"welcome aboard", "password reset", "verify your email", "invoice ready",
	"shipping update", "weekly digest", "security alert", "account locked",
	"payment received", "new sign-in",
}

// seedUsers is how many distinct local parts a namespace receives mail for:
// to_addr_prefix=user0042@ matches one message in seedUsers.
const seedUsers = 1000

// seedReport is the JSON form of the seed subcommand's result.
type seedReport struct {
	SMTP         string   `json:"smtp"`
	Run          string   `json:"run"`
	Namespaces   []string `json:"namespaces_sample"`
	NSCount      int      `json:"namespaces"`
	Messages     int      `json:"messages"`
	Conns        int      `json:"conns"`
	OK           int      `json:"ok"`
	Errors       int      `json:"errors"`
	ErrorSamples []string `json:"error_samples,omitempty"`
	ElapsedSec   float64  `json:"elapsed_s"`
	Rate         float64  `json:"messages_per_s"`
}

// runSeed fills a store through its front door, SMTP, so the search
// benchmark runs on data ingested exactly as users' data is. Message n goes to
// namespace n mod namespaces, to user(n/namespaces mod 1000), with subject
// "Order NNNNNNN <topic n mod 10>".
func runSeed(args []string, stdout io.Writer) error {
	fs := newFlagSet("seed")
	smtpAddr := fs.String("smtp", "127.0.0.1:2525", "SMTP server host:port")
	auth := fs.String("auth", "", "AUTH PLAIN credentials user:pass (none by default)")
	messages := fs.Int("messages", 100000, "messages to send (1 to 2000000)")
	conns := fs.Int("conns", 16, "persistent connections (1 to 256)")
	ns := fs.String("namespace", "default", "namespace to fill when --namespaces is 1")
	namespaces := fs.Int("namespaces", 1, "spread messages over this many namespaces named <ns-prefix>NNNN (created through the API)")
	nsPrefix := fs.String("ns-prefix", "seed", "name prefix of the namespaces created with --namespaces > 1")
	domain := fs.String("mail-domain", "localhost", "mail domain: recipients are userNNNN@<namespace>.<mail-domain>")
	api := fs.String("api", "http://127.0.0.1:8025", "Catchbox HTTP base URL, to create namespaces")
	key := fs.String("key", "", "API key, to create namespaces")
	offset := fs.Int("offset", 0, "number of the first message, to add to an earlier seed without repeating order numbers")
	timeout := fs.Duration("timeout", 2*time.Hour, "give up after this long")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *messages < 1 || *messages > 2000000 {
		return fmt.Errorf("--messages must be between 1 and 2000000")
	}
	if *conns < 1 || *conns > 256 {
		return fmt.Errorf("--conns must be between 1 and 256")
	}
	if *namespaces < 1 || *namespaces > 10000 {
		return fmt.Errorf("--namespaces must be between 1 and 10000")
	}
	names := []string{*ns}
	if *namespaces > 1 {
		names = make([]string, *namespaces)
		for i := range names {
			names[i] = fmt.Sprintf("%s%04d", *nsPrefix, i)
		}
		if err := createNamespaces(*api, *key, names); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	run := newRunID()
	res := load{
		addr:  *smtpAddr,
		auth:  *auth,
		conns: *conns,
		n:     *messages,
		next: func(i int) (string, []byte, error) {
			n := *offset + i
			to := fmt.Sprintf("user%04d@%s.%s", (n/len(names))%seedUsers, names[n%len(names)], *domain)
			subject := fmt.Sprintf("Order %07d %s", n, seedTopics[n%len(seedTopics)])
			msg, err := buildMessage(messageSpec{From: benchFrom, To: to, Subject: subject, Size: sizeSmall, Seq: n})
			return to, msg, err
		},
		progressEvery: max(*messages/20, 1000),
		progress: func(done int, elapsed time.Duration) {
			fmt.Fprintf(os.Stderr, "seed: %d/%d sent in %s (%.0f/s)\n", done, *messages, elapsed.Round(time.Second), float64(done)/elapsed.Seconds())
		},
	}.run(ctx)

	rep := seedReport{
		SMTP: *smtpAddr, Run: run, Namespaces: names[:min(len(names), 3)], NSCount: len(names),
		Messages: *messages, Conns: *conns, OK: res.OK, Errors: res.Errors, ErrorSamples: res.Samples,
		ElapsedSec: res.Elapsed.Seconds(), Rate: float64(res.OK) / res.Elapsed.Seconds(),
	}
	line := fmt.Sprintf("seed smtp=%s namespaces=%d messages=%d conns=%d ok=%d errors=%d elapsed=%.1fs rate=%.1f/s",
		rep.SMTP, rep.NSCount, rep.Messages, rep.Conns, rep.OK, rep.Errors, rep.ElapsedSec, rep.Rate)
	for _, s := range res.Samples {
		line += "\n  error: " + s
	}
	if err := report(stdout, *asJSON, rep, line); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("timed out after %s", *timeout)
	}
	return nil
}

// createNamespaces creates (or updates, which the API allows) each namespace
// through POST /api/namespace/{namespace}/settings.
func createNamespaces(api, key string, names []string) error {
	client := &http.Client{Timeout: 30 * time.Second}
	base := strings.TrimRight(api, "/")
	for _, name := range names {
		req, err := http.NewRequest(http.MethodPost, base+"/api/namespace/"+name+"/settings", bytes.NewReader([]byte(`{}`)))
		if err != nil {
			return fmt.Errorf("build namespace request: %w", err)
		}
		req.Header.Set("X-Api-Key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
			return fmt.Errorf("create namespace %s: %s: %.200s", name, resp.Status, body)
		}
	}
	return nil
}
