package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// signinReport is the JSON form of the signin subcommand's result.
type signinReport struct {
	Label       string         `json:"label,omitempty"`
	API         string         `json:"api"`
	Attempts    int            `json:"attempts"`
	Concurrency int            `json:"concurrency"`
	Statuses    map[string]int `json:"statuses"` // answer status (or "error") → count
	ErrorSample string         `json:"error_sample,omitempty"`
	Seconds     float64        `json:"seconds"`
	Latency     Latency        `json:"latency"`
	RSS         *rssResult     `json:"rss,omitempty"`
	// SettledRSSMiB is the server's resident memory --settle after the last
	// answer: what the burst left behind.
	SettledRSSMiB float64 `json:"settled_rss_mib,omitempty"`
	// CPUSeconds is the server's CPU time (user and system) over the burst,
	// with --pid.
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
}

// runSignin posts the dashboard's sign-in form N times, C at once, and
// reports the answers, their latency and, with --pid, the server's resident
// memory during the burst and once it has settled. Each attempt comes from a
// loopback address of its own (127.1.x.y: Linux routes all of 127/8 to the
// loopback interface), so that the per-address throttles do not stop it
// before its password is checked; by default each names an account of its
// own, which no one has, and is checked against the service's stand-in hash
// exactly as a wrong password is.
func runSignin(args []string, stdout io.Writer) error {
	fs := newFlagSet("signin")
	api := fs.String("api", "http://127.0.0.1:8025", "HTTP base URL")
	attempts := fs.Int("attempts", 100, "sign-in attempts (1 to 60000)")
	conc := fs.Int("concurrency", 100, "attempts in flight at once (1 to 1000)")
	email := fs.String("email", "", "account to sign in as (default: bench-N@example.com, a different one for each attempt)")
	password := fs.String("password", "wrong password", "password of every attempt")
	pid := fs.Int("pid", 0, "server process to sample for RSS during the burst")
	interval := fs.Duration("rss-interval", 50*time.Millisecond, "RSS sampling interval with --pid")
	settle := fs.Duration("settle", 3*time.Second, "with --pid: how long after the burst to read RSS again")
	label := fs.String("label", "", "name of the server under test, echoed in the report")
	timeout := fs.Duration("request-timeout", 60*time.Second, "give up on one attempt after this long")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *attempts < 1 || *attempts > 60000 {
		return fmt.Errorf("--attempts must be between 1 and 60000")
	}
	if *conc < 1 || *conc > 1000 {
		return fmt.Errorf("--concurrency must be between 1 and 1000")
	}
	base := strings.TrimRight(*api, "/")

	var sampler *rssSampler
	var cpu0 float64
	if *pid > 0 {
		s, err := startRSS(*pid, *interval)
		if err != nil {
			return err
		}
		sampler = s
		if cpu0, err = cpuTime(*pid); err != nil {
			return err
		}
	}
	rep := signinReport{Label: *label, API: base, Attempts: *attempts, Concurrency: *conc, Statuses: map[string]int{}}
	var mu sync.Mutex
	lat := make([]time.Duration, 0, *attempts)
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				account := *email
				if account == "" {
					account = fmt.Sprintf("bench-%d@example.com", i)
				}
				t0 := time.Now()
				status, err := signinOnce(base, signinSource(i), account, *password, *timeout)
				d := time.Since(t0)
				mu.Lock()
				if err != nil {
					rep.Statuses["error"]++
					if rep.ErrorSample == "" {
						rep.ErrorSample = err.Error()
					}
				} else {
					rep.Statuses[strconv.Itoa(status)]++
					lat = append(lat, d)
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < *attempts; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	rep.Seconds = time.Since(start).Seconds()
	rep.Latency = summarize(lat)
	if sampler != nil {
		r := sampler.stop()
		rep.RSS = &r
		if cpu1, err := cpuTime(*pid); err == nil {
			rep.CPUSeconds = cpu1 - cpu0
		}
		time.Sleep(*settle)
		if m, err := readMemory(*pid); err == nil {
			rep.SettledRSSMiB = mib(m.RSS)
		}
	}

	line := fmt.Sprintf("signin attempts=%d concurrency=%d seconds=%.2f statuses=%s %s", rep.Attempts, rep.Concurrency, rep.Seconds, statusLine(rep.Statuses), rep.Latency)
	if rep.RSS != nil {
		line += fmt.Sprintf(" %s rss_settled=%.1fMiB server_cpu=%.2fs", rep.RSS, rep.SettledRSSMiB, rep.CPUSeconds)
	}
	if rep.ErrorSample != "" {
		line += " error_sample=" + strconv.Quote(rep.ErrorSample)
	}
	return report(stdout, *asJSON, rep, line)
}

// signinSource is the loopback address attempt i comes from: 127.1.0.1,
// 127.1.0.2, ..., a new one for each attempt up to 60,000.
func signinSource(i int) net.IP {
	return net.IPv4(127, 1, byte(i/250), byte(i%250+1))
}

// signinOnce posts the sign-in form once from src, as a browser on the
// sign-in page does, and returns the answer's status.
func signinOnce(base string, src net.IP, email, password string, timeout time.Duration) (int, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: 10 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := url.Values{"email": {email}, "password": {password}, "next": {"/"}}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/signin", strings.NewReader(form.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// statusLine is the status counts as "303:1,401:99", in order.
func statusLine(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ":" + strconv.Itoa(m[k])
	}
	return strings.Join(parts, ",")
}
