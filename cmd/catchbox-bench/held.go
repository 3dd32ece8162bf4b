package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// heldReport is the JSON form of the held subcommand's result.
type heldReport struct {
	APIs    []string `json:"apis"`
	SMTP    string   `json:"smtp"`
	Waiters int      `json:"waiters"`
	Mails   int      `json:"mails"`
	Conns   int      `json:"conns"`
	OK      int      `json:"ok"`
	Errors  int      `json:"errors"`
	// ErrorSamples are the first few errors, for the reader of a failed run.
	ErrorSamples []string `json:"error_samples,omitempty"`
	// OpenSeconds is how long the first Waiters searches took to be held.
	OpenSeconds float64 `json:"open_s"`
	// RSSBeforeKiB and RSSHeldKiB are the servers' resident memory (summed)
	// before the searches were opened and once they were all held.
	RSSBeforeKiB int64 `json:"rss_before_kib"`
	RSSHeldKiB   int64 `json:"rss_held_kib"`
	// KiBPerWait is (RSSHeldKiB - RSSBeforeKiB) / Waiters.
	KiBPerWait float64 `json:"kib_per_wait"`
	// CPUPerMailMs is the servers' CPU time over the mail phase divided by
	// Mails: each mail's ingest, the wake-ups and re-checks it caused, its
	// answer, and the held search that takes the answered one's place.
	CPUPerMailMs float64 `json:"cpu_per_mail_ms"`
	// RechecksPerMail is the servers' re-checks of held searches over the
	// mail phase (catchbox_wait_wakeup_seconds_count) divided by Mails; -1
	// when /metrics could not be read.
	RechecksPerMail float64 `json:"rechecks_per_mail"`
	Latency         Latency `json:"latency"`
}

// runHeld measures what held searches cost and how fast the one a mail is for
// is answered when many are held: N searches held with wait=true, each on a
// recipient prefix of its own, spread over the given replicas; then M mails,
// each to one held search, over C SMTP connections at once; for each, the time
// from its 250 to its search's answer. An answered search is replaced by a new
// one, so that N stay held throughout.
func runHeld(args []string, stdout io.Writer) error {
	fs := newFlagSet("held")
	apis := fs.String("api", "http://127.0.0.1:8025", "Catchbox HTTP base URL; several, comma separated, to hold the searches on several replicas in turn")
	smtpAddr := fs.String("smtp", "127.0.0.1:2525", "Catchbox SMTP host:port the mails are sent to")
	key := fs.String("key", "", "API key (X-Api-Key)")
	ns := fs.String("namespace", "default", "namespace the searches wait in")
	domain := fs.String("mail-domain", "localhost", "mail domain: recipients are held-RUN-N@<namespace>.<mail-domain>")
	waiters := fs.Int("waiters", 1000, "searches held at once (1 to 20000)")
	mails := fs.Int("mails", 100, "mails sent, each to one held search (1 to 100000)")
	conns := fs.Int("conns", 4, "SMTP connections sending at once (1 to 64)")
	open := fs.Int("open", 100, "searches being opened at once, at the start (1 to 1000)")
	pids := fs.String("pid", "", "server process ids, comma separated, for memory and CPU (none: not measured)")
	settle := fs.Duration("settle", 20*time.Millisecond, "pause after a search is written before a mail may be sent for it, when /metrics cannot tell that it is held")
	timeout := fs.Duration("timeout", 60*time.Second, "give up on one mail's answer, or on opening the searches, after this long")
	run := fs.String("run", "", "run identifier used in addresses (default: generated)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *waiters < 1 || *waiters > 20000:
		return errors.New("--waiters must be between 1 and 20000")
	case *mails < 1 || *mails > 100000:
		return errors.New("--mails must be between 1 and 100000")
	case *conns < 1 || *conns > 64:
		return errors.New("--conns must be between 1 and 64")
	case *open < 1 || *open > 1000:
		return errors.New("--open must be between 1 and 1000")
	}
	if *run == "" {
		*run = newRunID()
	}
	var procs []int
	for _, p := range strings.Split(*pids, ",") {
		if p = strings.TrimSpace(p); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil {
				return fmt.Errorf("--pid: %w", err)
			}
			procs = append(procs, n)
		}
	}
	h := &heldRun{
		apis: strings.Split(*apis, ","), key: *key, ns: *ns, domain: *domain, run: *run,
		settle: *settle, timeout: *timeout,
		client: &http.Client{Transport: &http.Transport{
			MaxIdleConns: -1, MaxIdleConnsPerHost: -1, DisableKeepAlives: true,
			DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		}},
		ready:  make(chan int, *waiters),
		answer: make(map[int]chan time.Time),
	}
	for i := range h.apis {
		h.apis[i] = strings.TrimRight(strings.TrimSpace(h.apis[i]), "/")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rep := heldReport{APIs: h.apis, SMTP: *smtpAddr, Waiters: *waiters, Mails: *mails, Conns: *conns, RechecksPerMail: -1}
	rep.RSSBeforeKiB = rssOf(procs)

	// Open the searches; once every request is written, wait until the
	// servers say they hold them all.
	// At most --open connections are being made at once: thousands of
	// connects at once overflow the listener's backlog, and the kernel's
	// retries of the dropped ones (1 s, 3 s, 7 s, ...) would be measured.
	start := time.Now()
	written := make(chan struct{}, *waiters)
	deadline := time.After(*timeout)
	inFlight := 0
	for i := range *waiters {
		for inFlight >= *open {
			select {
			case <-written:
				inFlight--
			case <-deadline:
				return errors.New("the searches were not all written in time")
			}
		}
		h.hold(ctx, i, 0, written)
		inFlight++
	}
	for ; inFlight > 0; inFlight-- {
		select {
		case <-written:
		case <-deadline:
			return errors.New("the searches were not all written in time")
		}
	}
	if err := h.allHeld(ctx, *waiters, *timeout); err != nil {
		return err
	}
	rep.OpenSeconds = time.Since(start).Seconds()
	rep.RSSHeldKiB = rssOf(procs)
	if len(procs) > 0 {
		rep.KiBPerWait = float64(rep.RSSHeldKiB-rep.RSSBeforeKiB) / float64(*waiters)
	}
	for i := range *waiters {
		h.ready <- i
	}

	// Send the mails.
	cpu0 := cpuOf(procs)
	checks0, metricsOK := h.rechecks()
	var mu sync.Mutex
	var lat []time.Duration
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		rep.Errors++
		if len(rep.ErrorSamples) < 5 {
			rep.ErrorSamples = append(rep.ErrorSamples, err.Error())
		}
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &sender{addr: *smtpAddr}
			defer s.close()
			for range jobs {
				d, err := h.mailOne(ctx, s)
				if err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				rep.OK++
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	for m := range *mails {
		jobs <- m
	}
	close(jobs)
	wg.Wait()
	if len(procs) > 0 {
		rep.CPUPerMailMs = (cpuOf(procs) - cpu0) * 1000 / float64(*mails)
	}
	if checks1, ok := h.rechecks(); ok && metricsOK {
		rep.RechecksPerMail = float64(checks1-checks0) / float64(*mails)
	}
	rep.Latency = summarize(lat)
	line := fmt.Sprintf("held waiters=%d mails=%d conns=%d ok=%d errors=%d open_s=%.1f kib_per_wait=%.1f cpu_per_mail_ms=%.2f rechecks_per_mail=%.2f %s",
		rep.Waiters, rep.Mails, rep.Conns, rep.OK, rep.Errors, rep.OpenSeconds, rep.KiBPerWait, rep.CPUPerMailMs, rep.RechecksPerMail, rep.Latency)
	for _, e := range rep.ErrorSamples {
		line += "\n  error: " + e
	}
	return report(stdout, *asJSON, rep, line)
}

// heldRun is the state of one held run: which searches are held and where
// their answers go.
type heldRun struct {
	apis                 []string
	key, ns, domain, run string
	settle, timeout      time.Duration
	client               *http.Client

	ready chan int // searches held and not yet mailed

	mu     sync.Mutex
	gen    map[int]int // each search's generation: bumped when it is replaced
	answer map[int]chan time.Time
}

// prefix is the recipient prefix of search i in generation g; the "@" keeps
// held-x-1@ from being a prefix of held-x-10@.
func (h *heldRun) prefix(i, g int) string { return fmt.Sprintf("held-%s-%d-%d@", h.run, i, g) }

// hold opens search i of generation g; written receives a value once the
// request is on the wire (nil: none is sent). The answer's time goes to the
// search's answer channel.
func (h *heldRun) hold(ctx context.Context, i, g int, written chan<- struct{}) {
	api := h.apis[i%len(h.apis)]
	q := url.Values{"wait": {"true"}, "to_addr_prefix": {h.prefix(i, g)}}
	u := api + "/api/emails/" + url.PathEscape(h.ns) + "/inbox?" + q.Encode()
	ans := make(chan time.Time, 1)
	h.mu.Lock()
	if h.gen == nil {
		h.gen = map[int]int{}
	}
	h.gen[i] = g
	h.answer[i] = ans
	h.mu.Unlock()
	var once sync.Once
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		once.Do(func() {
			if written != nil {
				written <- struct{}{}
			}
		})
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, u, nil)
	if err != nil {
		close(ans)
		return
	}
	req.Header.Set("X-Api-Key", h.key)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				close(ans)
			}
		}()
		r := fetchMatch(h.client, req)
		if r.err != nil {
			close(ans) // the mail's sender reports it
			return
		}
		ans <- r.at
	}()
}

// mailOne sends one mail to a held search and returns the time from its 250
// to the search's answer; the answered search is then replaced by a new one.
func (h *heldRun) mailOne(ctx context.Context, s *sender) (time.Duration, error) {
	var i int
	select {
	case i = <-h.ready:
	case <-time.After(h.timeout):
		return 0, errors.New("no held search to mail")
	}
	h.mu.Lock()
	g, ans := h.gen[i], h.answer[i]
	h.mu.Unlock()
	to := h.prefix(i, g) + h.ns + "." + h.domain
	msg, err := buildMessage(messageSpec{From: benchFrom, To: to, Subject: "held " + to, Size: sizeSmall})
	if err != nil {
		return 0, err
	}
	if _, err := s.send(benchFrom, []string{to}, msg); err != nil {
		return 0, fmt.Errorf("send: %w", err)
	}
	acked := time.Now()
	var at time.Time
	var ok bool
	select {
	case at, ok = <-ans:
	case <-time.After(h.timeout):
		return 0, fmt.Errorf("search %d not answered within %s", i, h.timeout)
	}
	if !ok {
		return 0, fmt.Errorf("search %d failed (see the server's log)", i)
	}
	// Replace it, and offer it again once it is held.
	written := make(chan struct{}, 1)
	h.hold(ctx, i, g+1, written)
	go func() {
		select {
		case <-written:
		case <-ctx.Done():
			return
		}
		time.Sleep(h.settle)
		h.ready <- i
	}()
	return max(at.Sub(acked), 0), nil
}

// allHeld waits until the servers' catchbox_held_waits add up to n; without
// /metrics it waits the settle pause instead.
func (h *heldRun) allHeld(ctx context.Context, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		total, ok := h.metricSum(ctx, "catchbox_held_waits")
		if !ok {
			time.Sleep(h.settle)
			return nil
		}
		if int(total) >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d searches held after %s", int(total), n, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rechecks is the servers' count of held-search re-checks so far.
func (h *heldRun) rechecks() (int64, bool) {
	v, ok := h.metricSum(context.Background(), "catchbox_wait_wakeup_seconds_count")
	return int64(v), ok
}

// metricSum adds up one unlabelled metric over the servers' /metrics.
func (h *heldRun) metricSum(ctx context.Context, name string) (float64, bool) {
	var sum float64
	for _, api := range h.apis {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, api+"/metrics", nil)
		if err != nil {
			cancel()
			return 0, false
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			return 0, false
		}
		found := false
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					sum += f
					found = true
				}
			}
		}
		resp.Body.Close()
		cancel()
		if !found {
			return 0, false
		}
	}
	return sum, true
}

func rssOf(pids []int) int64 {
	var kb int64
	for _, p := range pids {
		if m, err := readMemory(p); err == nil {
			kb += m.RSS
		}
	}
	return kb
}

func cpuOf(pids []int) float64 {
	var s float64
	for _, p := range pids {
		if c, err := cpuTime(p); err == nil {
			s += c
		}
	}
	return s
}
