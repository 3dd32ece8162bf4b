package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"time"
)

// waitReport is the JSON form of the wait subcommand's result.
type waitReport struct {
	API          string   `json:"api"`
	SMTP         string   `json:"smtp"`
	Namespace    string   `json:"namespace"`
	Rounds       int      `json:"rounds"`
	OK           int      `json:"ok"`
	Errors       int      `json:"errors"`
	ErrorSamples []string `json:"error_samples,omitempty"`
	// Early counts answers read before the client had read the 250: the
	// server woke the waiter before its SMTP reply reached the sender. They
	// are recorded as zero latency.
	Early   int     `json:"answered_before_250"`
	Latency Latency `json:"latency"`
}

// runWait measures the wake-up the seed's wait=true promises: a test holds a
// search open, the application sends the email, and the test goes on the
// moment the email is stored. The interval that matters to that test is from
// the sender's 250 to the search's answer.
func runWait(args []string, stdout io.Writer) error {
	fs := newFlagSet("wait")
	api := fs.String("api", "http://127.0.0.1:8025", "Catchbox HTTP base URL")
	smtpAddr := fs.String("smtp", "127.0.0.1:2525", "Catchbox SMTP host:port")
	key := fs.String("key", "", "API key (X-Api-Key)")
	ns := fs.String("namespace", "default", "namespace to wait in")
	domain := fs.String("mail-domain", "localhost", "mail domain: recipients are wait-N@<namespace>.<mail-domain>")
	auth := fs.String("auth", "", "AUTH PLAIN credentials user:pass (none by default)")
	rounds := fs.Int("rounds", 200, "rounds (1 to 10000)")
	holdDelay := fs.Duration("hold-delay", 20*time.Millisecond, "pause after the request is written, so the server is holding it when mail arrives")
	roundTimeout := fs.Duration("round-timeout", 30*time.Second, "give up on one round after this long")
	run := fs.String("run", "", "run identifier used in subjects (default: generated)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *rounds < 1 || *rounds > 10000 {
		return fmt.Errorf("--rounds must be between 1 and 10000")
	}
	if *run == "" {
		*run = newRunID()
	}
	client := &http.Client{Timeout: *roundTimeout}
	s := &sender{addr: *smtpAddr, auth: *auth}
	defer s.close()

	rep := waitReport{API: *api, SMTP: *smtpAddr, Namespace: *ns, Rounds: *rounds}
	var lat []time.Duration
	for i := range *rounds {
		// Zero-padded so that no subject is a substring of a later one.
		subject := fmt.Sprintf("bench-wait-%s-%06d", *run, i)
		to := fmt.Sprintf("wait-%d@%s.%s", i, *ns, *domain)
		d, early, err := waitRound(client, s, *api, *key, *ns, subject, to, *holdDelay, *roundTimeout)
		if err != nil {
			rep.Errors++
			if len(rep.ErrorSamples) < 5 {
				rep.ErrorSamples = append(rep.ErrorSamples, fmt.Sprintf("round %d: %v", i, err))
			}
			continue
		}
		rep.OK++
		if early {
			rep.Early++
		}
		lat = append(lat, d)
	}
	rep.Latency = summarize(lat)
	line := fmt.Sprintf("wait api=%s smtp=%s namespace=%s rounds=%d ok=%d errors=%d answered_before_250=%d %s",
		rep.API, rep.SMTP, rep.Namespace, rep.Rounds, rep.OK, rep.Errors, rep.Early, rep.Latency)
	for _, e := range rep.ErrorSamples {
		line += "\n  error: " + e
	}
	return report(stdout, *asJSON, rep, line)
}

// waitResult is what the waiting request's goroutine hands back.
type waitResult struct {
	at  time.Time // when the whole body had been read
	err error
}

// waitRound holds one search open, sends one matching message and returns
// the time from the 250 to the answer.
func waitRound(client *http.Client, s *sender, api, key, ns, subject, to string, holdDelay, timeout time.Duration) (time.Duration, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	q := url.Values{"wait": {"true"}, "subject_includes": {subject}, "from_timestamp": {"0"}}
	u := strings.TrimRight(api, "/") + "/api/emails/" + url.PathEscape(ns) + "/inbox?" + q.Encode()

	written := make(chan struct{})
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		select {
		case <-written:
		default:
			close(written)
		}
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, u, nil)
	if err != nil {
		return 0, false, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("X-Api-Key", key)

	answered := make(chan waitResult, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				answered <- waitResult{err: fmt.Errorf("request panicked: %v", r)}
			}
		}()
		answered <- fetchMatch(client, req)
	}()

	select {
	case <-written:
	case r := <-answered:
		if r.err != nil {
			return 0, false, r.err
		}
		return 0, false, errors.New("answered before the message was sent: the search was not held")
	}
	time.Sleep(holdDelay)
	select {
	case r := <-answered:
		if r.err != nil {
			return 0, false, r.err
		}
		return 0, false, errors.New("answered before the message was sent: the search was not held")
	default:
	}

	msg, err := buildMessage(messageSpec{From: benchFrom, To: to, Subject: subject, Size: sizeSmall})
	if err != nil {
		return 0, false, err
	}
	if _, err := s.send(benchFrom, []string{to}, msg); err != nil {
		cancel()
		<-answered
		return 0, false, fmt.Errorf("send: %w", err)
	}
	acked := time.Now()
	r := <-answered
	if r.err != nil {
		return 0, false, r.err
	}
	d := r.at.Sub(acked)
	if d < 0 {
		return 0, true, nil
	}
	return d, false, nil
}

// fetchMatch performs the held search and checks that it found the email.
func fetchMatch(client *http.Client, req *http.Request) waitResult {
	resp, err := client.Do(req)
	if err != nil {
		return waitResult{err: fmt.Errorf("search: %w", err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	at := time.Now()
	if err != nil {
		return waitResult{err: fmt.Errorf("read search answer: %w", err)}
	}
	if resp.StatusCode != http.StatusOK {
		return waitResult{err: fmt.Errorf("search answered %s: %.200s", resp.Status, body)}
	}
	var page struct {
		TotalCount int `json:"total_count"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return waitResult{err: fmt.Errorf("decode search answer: %w", err)}
	}
	if page.TotalCount < 1 {
		return waitResult{err: errors.New("search answered with no match")}
	}
	return waitResult{at: at}
}
