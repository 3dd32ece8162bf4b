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
	Namespaces   []string `json:"namespaces_sample"`
	NSCount      int      `json:"namespaces"`
	Rcpts        int      `json:"rcpts"`
	Messages     int      `json:"emails"`
	Conns        int      `json:"conns"`
	OK           int      `json:"ok"` // emails acknowledged
	Errors       int      `json:"failed_transactions"`
	ErrorSamples []string `json:"error_samples,omitempty"`
	ElapsedSec   float64  `json:"elapsed_s"`
	Rate         float64  `json:"messages_per_s"`
}

// runSeed fills a store through its front door, SMTP, so the search
// benchmark runs on data ingested exactly as users' data is.
//
// Each transaction addresses --rcpts namespaces at once (Catchbox stores one
// email per namespace addressed), which divides the number of transactions,
// and so the seeding time, when many namespaces are filled. Within every
// namespace the t-th email (t = 0, 1, ...) goes to user<t mod 1000> and has
// the subject "Order <message number> <topic t mod 10>", whatever the
// number of namespaces, so the same searches select the same share of each.
func runSeed(args []string, stdout io.Writer) error {
	fs := newFlagSet("seed")
	smtpAddr := fs.String("smtp", "127.0.0.1:2525", "SMTP server host:port")
	auth := fs.String("auth", "", "AUTH PLAIN credentials user:pass (none by default)")
	messages := fs.Int("messages", 100000, "emails to create, over all namespaces (1 to 2000000)")
	conns := fs.Int("conns", 16, "persistent connections (1 to 256)")
	ns := fs.String("namespace", "default", "namespace to fill when --namespaces is 1")
	namespaces := fs.Int("namespaces", 1, "spread emails over this many namespaces named <ns-prefix>NNNN (created through the API)")
	rcpts := fs.Int("rcpts", 1, "namespaces addressed by each transaction; must divide --namespaces and --messages")
	nsPrefix := fs.String("ns-prefix", "seed", "name prefix of the namespaces created with --namespaces > 1")
	domain := fs.String("mail-domain", "localhost", "mail domain: recipients are userNNNN@<namespace>.<mail-domain>")
	api := fs.String("api", "http://127.0.0.1:8025", "Catchbox HTTP base URL, to create namespaces")
	key := fs.String("key", "", "API key, to create namespaces")
	perConn := fs.Int("per-conn", 200, "messages per connection before a new one is opened (0: no limit)")
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
	if *rcpts < 1 || *rcpts > 100 || *namespaces%*rcpts != 0 || *messages%*rcpts != 0 {
		return fmt.Errorf("--rcpts must be between 1 and 100 and divide --namespaces and --messages")
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
	plan := seedPlan{namespaces: names, rcpts: *rcpts, domain: *domain}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	res := load{
		addr:          *smtpAddr,
		auth:          *auth,
		conns:         *conns,
		n:             *messages / *rcpts,
		perConn:       *perConn,
		retries:       3,
		next:          plan.message,
		progressEvery: max(*messages / *rcpts / 20, 100),
		progress: func(done int, elapsed time.Duration) {
			emails := done * *rcpts
			fmt.Fprintf(os.Stderr, "seed: %d/%d emails in %s (%.0f/s)\n", emails, *messages, elapsed.Round(time.Second), float64(emails)/elapsed.Seconds())
		},
	}.run(ctx)

	rep := seedReport{
		SMTP: *smtpAddr, Namespaces: names[:min(len(names), 3)], NSCount: len(names), Rcpts: *rcpts,
		Messages: *messages, Conns: *conns, OK: res.OK * *rcpts, Errors: res.Errors, ErrorSamples: res.Samples,
		ElapsedSec: res.Elapsed.Seconds(), Rate: float64(res.OK**rcpts) / res.Elapsed.Seconds(),
	}
	line := fmt.Sprintf("seed smtp=%s namespaces=%d rcpts=%d emails=%d conns=%d ok=%d failed_transactions=%d elapsed=%.1fs rate=%.1f emails/s",
		rep.SMTP, rep.NSCount, rep.Rcpts, rep.Messages, rep.Conns, rep.OK, rep.Errors, rep.ElapsedSec, rep.Rate)
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

// seedPlan maps a transaction number to its recipients and message.
type seedPlan struct {
	namespaces []string
	rcpts      int
	domain     string
}

// message builds transaction m. Transactions come in rounds of
// len(namespaces)/rcpts, one round giving every namespace its t-th email
// (t = m / round); transaction m addresses the rcpts consecutive namespaces
// starting at (m mod round) * rcpts. The header To names the first; Catchbox
// lists the others as blind copies, and to_addr_prefix matches them all.
func (p seedPlan) message(m int) ([]string, []byte, error) {
	round := len(p.namespaces) / p.rcpts
	t := m / round
	first := (m % round) * p.rcpts
	to := make([]string, p.rcpts)
	for j := range to {
		to[j] = fmt.Sprintf("user%04d@%s.%s", t%seedUsers, p.namespaces[first+j], p.domain)
	}
	subject := fmt.Sprintf("Order %07d %s", m, seedTopics[t%len(seedTopics)])
	msg, err := buildMessage(messageSpec{From: benchFrom, To: to[0], Subject: subject, Size: sizeSmall, Seq: m})
	return to, msg, err
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
