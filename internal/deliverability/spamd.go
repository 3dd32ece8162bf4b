package deliverability

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Spamd is a client of SpamAssassin's spamd, speaking its SPAMC protocol
// version 1.5, as spamd(1) documents it ("PROTOCOL"): one command per
// connection, "<COMMAND> SPAMC/1.5", a Content-length header, an empty line
// and the message; spamd answers "SPAMD/<version> <code> <text>", a Spam
// header "True|False ; <score> / <threshold>", and for REPORT a body with
// the rules hit. No Go client is available here, and the protocol is short.
type Spamd struct {
	// Addr is spamd's host:port.
	Addr string
	// Timeout bounds one command: connecting, sending, spamd's scan and its
	// answer.
	Timeout time.Duration
	// User is sent as the User header: spamd's per-user preferences are
	// looked up by it (none, when spamd runs with --nouser-config).
	User string
}

// SpamdEnv names the variable holding the address of the spamd the tests of
// every package use (.ci/run starts one); without it they skip.
const SpamdEnv = "CATCHBOX_TEST_SPAMD_ADDR"

// MaxScanBytes is the largest message sent to spamd: spamc's own default
// limit (500 KiB). SpamAssassin's scan time grows with size, and spam is
// small; a larger message is not scored.
const MaxScanBytes = 500 << 10

// ErrTooLarge is returned for a message over MaxScanBytes.
var ErrTooLarge = errors.New("message larger than the spamd scan limit")

// SpamVerdict is spamd's answer about one message.
type SpamVerdict struct {
	IsSpam    bool
	Score     float64
	Threshold float64
	// Rules are the rules that hit, as REPORT lists them (CHECK lists none).
	Rules []SpamRule
}

// SpamRule is one SpamAssassin rule that hit.
type SpamRule struct {
	Name        string  `json:"name"`
	Score       float64 `json:"score"`
	Description string  `json:"description,omitempty"`
}

// Check asks spamd for the score only (CHECK).
func (c *Spamd) Check(ctx context.Context, msg []byte) (SpamVerdict, error) {
	v, _, err := c.command(ctx, "CHECK", msg)
	return v, err
}

// Report asks spamd for the score and the rules that hit (REPORT).
func (c *Spamd) Report(ctx context.Context, msg []byte) (SpamVerdict, error) {
	v, body, err := c.command(ctx, "REPORT", msg)
	if err != nil {
		return v, err
	}
	v.Rules = parseReport(body)
	return v, nil
}

// Ping checks spamd answers (PING, "SPAMD/1.5 0 PONG").
func (c *Spamd) Ping(ctx context.Context) error {
	conn, err := c.dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "PING SPAMC/1.5\r\n\r\n"); err != nil {
		return fmt.Errorf("spamd ping: %w", err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("spamd ping: %w", err)
	}
	if !strings.Contains(line, "PONG") {
		return fmt.Errorf("spamd ping: unexpected answer %q", strings.TrimSpace(line))
	}
	return nil
}

// dial connects to spamd; the connection must be done within Timeout.
func (c *Spamd) dial(ctx context.Context) (net.Conn, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", c.Addr)
	if err != nil {
		return nil, fmt.Errorf("connect to spamd %s: %w", c.Addr, err)
	}
	conn.SetDeadline(time.Now().Add(timeout))
	return conn, nil
}

// command sends one command with the message and reads spamd's answer.
func (c *Spamd) command(ctx context.Context, cmd string, msg []byte) (SpamVerdict, string, error) {
	if len(msg) > MaxScanBytes {
		return SpamVerdict{}, "", ErrTooLarge
	}
	conn, err := c.dial(ctx)
	if err != nil {
		return SpamVerdict{}, "", err
	}
	defer conn.Close()
	// The connection ends with the context, too: a stopping job does not
	// wait for a slow scan.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	user := c.User
	if user == "" {
		user = "catchbox"
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s SPAMC/1.5\r\nContent-length: %d\r\nUser: %s\r\n\r\n", cmd, len(msg), user)
	req.Write(msg)
	if _, err := conn.Write(req.Bytes()); err != nil {
		return SpamVerdict{}, "", fmt.Errorf("spamd %s: send: %w", cmd, err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.CloseWrite() // spamd reads to the end of the message
	}
	return readAnswer(bufio.NewReader(conn), cmd)
}

// readAnswer reads spamd's status line, headers and body.
func readAnswer(br *bufio.Reader, cmd string) (SpamVerdict, string, error) {
	status, err := br.ReadString('\n')
	if err != nil {
		return SpamVerdict{}, "", fmt.Errorf("spamd %s: read answer: %w", cmd, err)
	}
	fields := strings.Fields(status)
	if len(fields) < 3 || !strings.HasPrefix(fields[0], "SPAMD/") {
		return SpamVerdict{}, "", fmt.Errorf("spamd %s: unexpected answer %q", cmd, strings.TrimSpace(status))
	}
	if fields[1] != "0" {
		return SpamVerdict{}, "", fmt.Errorf("spamd %s: error %s %s", cmd, fields[1], strings.Join(fields[2:], " "))
	}
	var v SpamVerdict
	var haveSpam bool
	length := -1
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return SpamVerdict{}, "", fmt.Errorf("spamd %s: read headers: %w", cmd, err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		name, value, _ := strings.Cut(line, ":")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "spam":
			if v, err = parseSpamHeader(value); err != nil {
				return SpamVerdict{}, "", fmt.Errorf("spamd %s: %w", cmd, err)
			}
			haveSpam = true
		case "content-length":
			length, _ = strconv.Atoi(strings.TrimSpace(value))
		}
	}
	if !haveSpam {
		return SpamVerdict{}, "", fmt.Errorf("spamd %s: answer without a Spam header", cmd)
	}
	var body []byte
	if length >= 0 {
		body = make([]byte, length)
		_, err = io.ReadFull(br, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(br, 1<<20))
	}
	if err != nil {
		return SpamVerdict{}, "", fmt.Errorf("spamd %s: read body: %w", cmd, err)
	}
	return v, string(body), nil
}

// parseSpamHeader reads "True ; 1000.0 / 5.0".
func parseSpamHeader(v string) (SpamVerdict, error) {
	verdict, scores, ok := strings.Cut(v, ";")
	score, threshold, ok2 := strings.Cut(scores, "/")
	if !ok || !ok2 {
		return SpamVerdict{}, fmt.Errorf("malformed Spam header %q", v)
	}
	var out SpamVerdict
	var err1, err2 error
	out.IsSpam = strings.EqualFold(strings.TrimSpace(verdict), "true") || strings.EqualFold(strings.TrimSpace(verdict), "yes")
	out.Score, err1 = strconv.ParseFloat(strings.TrimSpace(score), 64)
	out.Threshold, err2 = strconv.ParseFloat(strings.TrimSpace(threshold), 64)
	if err1 != nil || err2 != nil {
		return SpamVerdict{}, fmt.Errorf("malformed Spam header %q", v)
	}
	return out, nil
}

var reportRule = regexp.MustCompile(`^\s*(-?\d+(?:\.\d+)?)\s+([A-Z0-9_]+)\s*(.*)$`)

// parseReport reads the rules table of a REPORT body: after the line of
// dashes, one rule a line ("pts rule name description"), a long
// description going on in indented lines.
func parseReport(body string) []SpamRule {
	rules := []SpamRule{}
	inTable := false
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimRight(line, "\r")
		if !inTable {
			inTable = strings.HasPrefix(line, "---- ")
			continue
		}
		if strings.TrimSpace(line) == "" {
			if len(rules) > 0 {
				break
			}
			continue
		}
		if m := reportRule.FindStringSubmatch(line); m != nil {
			score, _ := strconv.ParseFloat(m[1], 64)
			rules = append(rules, SpamRule{Name: m[2], Score: score, Description: strings.TrimSpace(m[3])})
		} else if len(rules) > 0 {
			last := &rules[len(rules)-1]
			last.Description = strings.TrimSpace(last.Description + " " + strings.TrimSpace(line))
		}
	}
	return rules
}

// WithTrace returns msg as a receiving server hands it to SpamAssassin: with
// the Return-Path and Received fields it would have added (RFC 5321 section
// 4.4), from what the SMTP session recorded, so that SpamAssassin's rules about
// the relay and the envelope read the real client.
func WithTrace(msg []byte, in Input, byHost string, received time.Time) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Return-Path: <%s>\r\n", in.MailFrom)
	helo := in.Helo
	if helo == "" {
		helo = "unknown"
	}
	fmt.Fprintf(&b, "Received: from %s ([%s])\r\n\tby %s with ESMTP; %s\r\n", helo, in.ClientIP, byHost,
		received.UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	b.Write(msg)
	return b.Bytes()
}
