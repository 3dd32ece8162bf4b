// Package relay hands outbound mail to the SMTP relay of CATCHBOX_RELAY_URL
// (go-smtp's client) and says what became of each recipient: one connection
// and one mail transaction per attempt, one RCPT per recipient (RFC 5321
// section 3.3), each with its own reply. It records nothing: the delivery job
// (outbound.Deliverer) and the verification mails of destinations make their
// events of the replies.
package relay

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/catchbox/catchbox/internal/config"
)

// Client is the relay of CATCHBOX_RELAY_URL and how to reach it.
type Client struct {
	config.Relay
	// HeloName is the name of the EHLO command: the mail domain.
	HeloName string
	// TLSConfig, when set, is the TLS configuration of the connection (tests
	// give theirs, trusting their own certificate); otherwise the system's
	// roots verify the relay's host name.
	TLSConfig *tls.Config
	// DialTimeout bounds connecting, CommandTimeout each command's reply and
	// DataTimeout the message's (zero: 30 s, 2 min, 5 min).
	DialTimeout, CommandTimeout, DataTimeout time.Duration
}

// Outcome is what a reply means for its recipient (RFC 5321 section 4.2.1).
type Outcome uint8

// The outcomes of a recipient.
const (
	Sent     Outcome = iota + 1 // a 2xx: the relay took the message
	Deferred                    // a 4xx, or no reply: try again later
	Bounced                     // a 5xx: refused for good
)

func (o Outcome) String() string {
	switch o {
	case Sent:
		return "sent"
	case Deferred:
		return "deferred"
	case Bounced:
		return "bounced"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Reply is what the relay answered for one recipient, and what it means.
type Reply struct {
	Outcome  Outcome
	Subtype  string // the event's subtype: transient, permanent, connection, relay_<stage>
	Action   string // the RFC 3464 Action the outcome stands for
	Code     string // "250", "451", "550"; "" when no reply came (connection failures)
	Enhanced string // "2.0.0", "4.2.0", "5.1.1"; "" when the reply had none
	Text     string
}

// Result is the outcome of one attempt: a Reply per recipient, in the order
// given, and the relay's queue id of the message when its 250 to the data
// named one.
type Result struct {
	Replies []Reply
	QueueID string
}

// Send makes one attempt at handing msg to the relay for the recipients, with
// from as the envelope sender (RFC 5321 MAIL FROM: the return path). It
// never fails as a whole: each recipient's reply says what became of it. A
// recipient refused at RCPT keeps its own reply; the reply to the data
// applies to every recipient the relay accepted; a connection, TLS or
// authentication failure, or one past the RCPTs, defers every recipient still
// undecided.
func (r *Client) Send(ctx context.Context, from string, rcpts []string, msg []byte) Result {
	res := Result{Replies: make([]Reply, len(rcpts))}
	decided := make([]bool, len(rcpts))
	deferRest := func(stage string, err error) Result {
		rep := failureReply(stage, err)
		for i := range rcpts {
			if !decided[i] {
				res.Replies[i] = rep
			}
		}
		return res
	}
	c, err := r.connect(ctx)
	if err != nil {
		return deferRest("connect", err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()

	if err := c.Mail(from, mailOptions(c, from, rcpts, len(msg))); err != nil {
		return deferRest("MAIL FROM", err)
	}
	var accepted []int
	for i, to := range rcpts {
		err := c.Rcpt(to, nil)
		var se *smtp.SMTPError
		switch {
		case err == nil:
			accepted = append(accepted, i)
		case errors.As(err, &se):
			res.Replies[i], decided[i] = smtpReply(se), true
		default:
			return deferRest("RCPT TO", err)
		}
	}
	if len(accepted) == 0 {
		_ = c.Quit()
		return res
	}
	w, err := c.Data()
	if err != nil {
		return deferRest("DATA", err)
	}
	if _, err := w.Write(msg); err != nil {
		return deferRest("DATA", err)
	}
	resp, err := w.CloseWithResponse()
	if err != nil {
		return deferRest("DATA", err)
	}
	ok := okReply(resp.StatusText)
	for _, i := range accepted {
		res.Replies[i], decided[i] = ok, true
	}
	res.QueueID = queueID(resp.StatusText)
	_ = c.Quit()
	return res
}

// connect dials the relay, says EHLO, starts TLS as configured and
// authenticates when the URL has credentials.
func (r *Client) connect(ctx context.Context) (*smtp.Client, error) {
	dialer := net.Dialer{Timeout: orDefault(r.DialTimeout, 30*time.Second)}
	conn, err := dialer.DialContext(ctx, "tcp", r.Addr())
	if err != nil {
		return nil, err
	}
	tlsConfig := r.TLSConfig
	if tlsConfig == nil {
		tlsConfig = &tls.Config{ServerName: r.Host, MinVersion: tls.VersionTLS12}
	}
	var c *smtp.Client
	switch r.TLS {
	case config.RelayTLS:
		conn = tls.Client(conn, tlsConfig)
		c = smtp.NewClient(conn)
	case config.RelayStartTLS:
		conn.SetDeadline(time.Now().Add(orDefault(r.CommandTimeout, 2*time.Minute)))
		if c, err = smtp.NewClientStartTLS(conn, tlsConfig); err != nil {
			conn.Close()
			return nil, err
		}
		conn.SetDeadline(time.Time{})
	default:
		c = smtp.NewClient(conn)
	}
	c.CommandTimeout = orDefault(r.CommandTimeout, 2*time.Minute)
	c.SubmissionTimeout = orDefault(r.DataTimeout, 5*time.Minute)
	if err := c.Hello(orDefault(r.HeloName, "localhost")); err != nil {
		c.Close()
		return nil, err
	}
	if r.Username != "" {
		if err := c.Auth(sasl.NewPlainClient("", r.Username, r.Password)); err != nil {
			c.Close()
			return nil, fmt.Errorf("authenticate as %s: %w", r.Username, err)
		}
	}
	return c, nil
}

// mailOptions asks for SMTPUTF8 (RFC 6531) when an address needs it and the
// relay offers it, and gives the message's size when the relay takes SIZE.
func mailOptions(c *smtp.Client, from string, rcpts []string, size int) *smtp.MailOptions {
	opts := &smtp.MailOptions{Size: int64(size)} // sent only when the relay offers SIZE
	if ok, _ := c.Extension("SMTPUTF8"); ok && !isASCII(from+strings.Join(rcpts, "")) {
		opts.UTF8 = true
	}
	return opts
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// smtpReply makes a reply to RCPT or to the data an outcome: 2xx sent, 4xx
// deferred, 5xx (and anything else) bounced (RFC 5321 section 4.2.1).
func smtpReply(se *smtp.SMTPError) Reply {
	rep := Reply{Code: strconv.Itoa(se.Code), Enhanced: enhanced(se.EnhancedCode), Text: se.Message}
	switch {
	case se.Code >= 200 && se.Code < 300:
		rep.Outcome, rep.Action = Sent, "relayed"
	case se.Code >= 400 && se.Code < 500:
		rep.Outcome, rep.Subtype, rep.Action = Deferred, "transient", "delayed"
	default:
		rep.Outcome, rep.Subtype, rep.Action = Bounced, "permanent", "failed"
	}
	return rep
}

// failureReply is the outcome of a failure at a stage of the conversation:
// the relay's own reply when it gave one there (a 5xx to MAIL FROM bounces
// every recipient), a deferral otherwise (no reply, a dropped connection, a
// TLS or AUTH failure, a 4xx).
func failureReply(stage string, err error) Reply {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		rep := smtpReply(se)
		if stage == "MAIL FROM" || stage == "DATA" {
			return rep
		}
		// A refused greeting, STARTTLS or AUTH is the relay's trouble or
		// ours, not the recipient's: try again later.
		rep.Outcome, rep.Subtype, rep.Action = Deferred, "relay_"+strings.ToLower(strings.ReplaceAll(stage, " ", "_")), "delayed"
		return rep
	}
	return Reply{Outcome: Deferred, Subtype: "connection", Action: "delayed",
		Text: fmt.Sprintf("relay unreachable at %s: %s", stage, sanitize(err))}
}

// sanitize is an error's text as recorded on an event: one line, bounded.
func sanitize(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

// okReply is the outcome of the relay's 250 to the data: every recipient it
// accepted is sent.
func okReply(text string) Reply {
	rep := Reply{Outcome: Sent, Action: "relayed", Code: "250", Text: text}
	if code, rest, ok := strings.Cut(text, " "); ok && enhancedRE.MatchString(code) {
		rep.Enhanced, rep.Text = code, rest
	}
	return rep
}

var enhancedRE = regexp.MustCompile(`^[245]\.\d{1,3}\.\d{1,3}$`)

func enhanced(c smtp.EnhancedCode) string {
	if c == smtp.NoEnhancedCode || c == (smtp.EnhancedCode{}) {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", c[0], c[1], c[2])
}

// queueIDRE finds the queue id relays put in their 250 to the data: Postfix
// and most others "queued as <id>", some "id=<id>".
var queueIDRE = regexp.MustCompile(`(?i)(?:queued as|\bid=)\s*<?([A-Za-z0-9][A-Za-z0-9._@-]{0,127})>?`)

func queueID(text string) string {
	if m := queueIDRE.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}
