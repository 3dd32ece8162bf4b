package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"
)

// benchFrom is the envelope and header sender of every generated message.
const benchFrom = "bench@bench.localhost"

// loadResult collects what a set of senders observed.
type loadResult struct {
	OK        int
	Errors    int
	Latencies []time.Duration
	Samples   []string // the first few distinct error texts
	Elapsed   time.Duration
}

// load is one bounded SMTP load: n messages over conns persistent
// connections, each message produced by next when its turn comes.
type load struct {
	addr  string
	auth  string
	conns int
	n     int
	next  func(i int) (to []string, msg []byte, err error)
	// perConn, when positive, ends each connection after that many
	// messages and opens a new one, as pooling clients do (nodemailer's pool
	// defaults to 100) and as servers that cap commands per connection expect.
	perConn int
	// retries is how often a message that failed with a temporary (4xx) or
	// connection error is tried again on a fresh connection.
	retries int
	// progress, when set, is called every progressEvery messages.
	progress      func(done int, elapsed time.Duration)
	progressEvery int
}

// run sends the messages and returns when all were tried or ctx ended.
func (l load) run(ctx context.Context) loadResult {
	var (
		counter atomic.Int64
		done    atomic.Int64
		mu      sync.Mutex
		res     loadResult
		wg      sync.WaitGroup
	)
	res.Latencies = make([]time.Duration, 0, l.n)
	record := func(lat []time.Duration, ok, errs int, samples []string) {
		mu.Lock()
		defer mu.Unlock()
		res.Latencies = append(res.Latencies, lat...)
		res.OK += ok
		res.Errors += errs
		for _, s := range samples {
			if len(res.Samples) < 5 && !contains(res.Samples, s) {
				res.Samples = append(res.Samples, s)
			}
		}
	}
	start := time.Now()
	for range l.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var (
				lat     []time.Duration
				ok, bad int
				samples []string
			)
			defer func() {
				if r := recover(); r != nil {
					bad++
					samples = append(samples, fmt.Sprintf("sender panicked: %v", r))
				}
				record(lat, ok, bad, samples)
			}()
			s := &sender{addr: l.addr, auth: l.auth}
			defer s.close()
			for ctx.Err() == nil {
				i := int(counter.Add(1) - 1)
				if i >= l.n {
					return
				}
				if l.perConn > 0 && s.sent >= l.perConn {
					s.close()
				}
				to, msg, err := l.next(i)
				if err == nil {
					var d time.Duration
					d, err = s.send(benchFrom, to, msg)
					for try := 0; err != nil && try < l.retries && retryable(err); try++ {
						s.close()
						d, err = s.send(benchFrom, to, msg)
					}
					if err == nil {
						ok++
						lat = append(lat, d)
					}
				}
				if err != nil {
					bad++
					if len(samples) < 5 {
						samples = append(samples, err.Error())
					}
					if s.c == nil {
						// The connection is gone: do not spin through the
						// remaining messages while the server is down.
						time.Sleep(10 * time.Millisecond)
					}
				}
				if l.progress != nil && l.progressEvery > 0 {
					if d := done.Add(1); d%int64(l.progressEvery) == 0 {
						l.progress(int(d), time.Since(start))
					}
				}
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	return res
}

// retryable reports whether a failed transaction may succeed on a new
// connection: a temporary SMTP reply (4xx, such as 421 when a server closes a
// long-lived connection) or a broken connection, but never a 5xx refusal.
func retryable(err error) bool {
	var smtpErr *smtp.SMTPError
	if errors.As(err, &smtpErr) {
		return smtpErr.Temporary()
	}
	return true
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// newRunID returns a short identifier that makes the subjects of one run
// unique, so a later search finds exactly this run's messages.
func newRunID() string {
	return strconv.FormatInt(time.Now().UnixMilli(), 36)
}

// smtpReport is the JSON form of the smtp subcommand's result.
type smtpReport struct {
	Label        string     `json:"label,omitempty"`
	Addr         string     `json:"addr"`
	Run          string     `json:"run"`
	Size         string     `json:"size"`
	MessageBytes int        `json:"message_bytes"`
	Messages     int        `json:"messages"`
	Conns        int        `json:"conns"`
	OK           int        `json:"ok"`
	Errors       int        `json:"errors"`
	ErrorSamples []string   `json:"error_samples,omitempty"`
	ElapsedSec   float64    `json:"elapsed_s"`
	Rate         float64    `json:"messages_per_s"`
	Latency      Latency    `json:"latency"`
	RSS          *rssResult `json:"rss,omitempty"`
}

// runSMTP is the ingest benchmark: a fixed number of messages of one size
// over a fixed number of connections, every message built before the clock
// starts so the generator's own work is not timed.
func runSMTP(args []string, stdout io.Writer) error {
	fs := newFlagSet("smtp")
	addr := fs.String("addr", "127.0.0.1:2525", "SMTP server host:port")
	messages := fs.Int("messages", 2000, "messages to send (1 to 200000)")
	conns := fs.Int("conns", 8, "persistent connections (1 to 256)")
	size := fs.String("size", sizeSmall, "message size: small (~1 KB), large (~50 KB, 40 KB base64 attachment) or html (~8 KB sign-in mail, HTML and text)")
	to := fs.String("to", "user@default.localhost", "envelope and header recipient")
	auth := fs.String("auth", "", "AUTH PLAIN credentials user:pass (none by default)")
	run := fs.String("run", "", "run identifier used in subjects bench-<run>-<n> (default: generated)")
	label := fs.String("label", "", "name of the server under test, echoed in the report")
	pid := fs.Int("pid", 0, "server process to sample for peak RSS during the run")
	interval := fs.Duration("rss-interval", 100*time.Millisecond, "RSS sampling interval with --pid")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *messages < 1 || *messages > 200000 {
		return fmt.Errorf("--messages must be between 1 and 200000")
	}
	if *conns < 1 || *conns > 256 {
		return fmt.Errorf("--conns must be between 1 and 256")
	}
	if *run == "" {
		*run = newRunID()
	}
	msgs := make([][]byte, *messages)
	for i := range msgs {
		m, err := buildMessage(messageSpec{From: benchFrom, To: *to, Subject: fmt.Sprintf("bench-%s-%d", *run, i), Size: *size, Seq: i})
		if err != nil {
			return err
		}
		msgs[i] = m
	}
	msgBytes := len(msgs[0])

	var sampler *rssSampler
	if *pid > 0 {
		s, err := startRSS(*pid, *interval)
		if err != nil {
			return err
		}
		sampler = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	res := load{
		addr:  *addr,
		auth:  *auth,
		conns: *conns,
		n:     *messages,
		next: func(i int) ([]string, []byte, error) {
			m := msgs[i]
			msgs[i] = nil // let the collector reclaim what was sent
			return []string{*to}, m, nil
		},
	}.run(ctx)

	rep := smtpReport{
		Label: *label, Addr: *addr, Run: *run, Size: *size, MessageBytes: msgBytes,
		Messages: *messages, Conns: *conns, OK: res.OK, Errors: res.Errors, ErrorSamples: res.Samples,
		ElapsedSec: res.Elapsed.Seconds(), Rate: float64(res.OK) / res.Elapsed.Seconds(),
		Latency: summarize(res.Latencies),
	}
	line := fmt.Sprintf("smtp %s addr=%s run=%s size=%s bytes=%d messages=%d conns=%d ok=%d errors=%d elapsed=%.2fs rate=%.1f/s %s",
		*label, rep.Addr, rep.Run, rep.Size, rep.MessageBytes, rep.Messages, rep.Conns, rep.OK, rep.Errors, rep.ElapsedSec, rep.Rate, rep.Latency)
	if sampler != nil {
		r := sampler.stop()
		rep.RSS = &r
		line += " " + r.String()
	}
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
