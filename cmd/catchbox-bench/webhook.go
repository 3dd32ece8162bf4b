package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// webhookReport is the JSON form of the webhook subcommand's result.
type webhookReport struct {
	API    string `json:"api"`
	SMTP   string `json:"smtp"`
	Rounds int    `json:"rounds"`
	OK     int    `json:"ok"`
	Errors int    `json:"errors"`
	// Latency is from the 250 of a message to the arrival of its
	// email.received event at the receiver, one message at a time.
	Latency Latency `json:"latency"`
	// Burst is how many messages were sent back to back over Conns
	// connections, and Rate the events per second the receiver got, from the
	// first event's arrival to the last's.
	Burst int     `json:"burst"`
	Conns int     `json:"conns"`
	Rate  float64 `json:"events_per_second"`
}

// runWebhook measures webhook delivery from the outside: it serves a
// receiver on loopback, registers it as an endpoint of the key's
// organisation (removed at the end), then times single messages from the SMTP
// 250 to their event's arrival, and the delivery rate of a burst. The server
// must allow loopback endpoints (its default on a loopback listener).
func runWebhook(args []string, stdout io.Writer) error {
	fs := newFlagSet("webhook")
	api := fs.String("api", "http://127.0.0.1:8025", "Catchbox HTTP base URL")
	smtpAddr := fs.String("smtp", "127.0.0.1:2525", "Catchbox SMTP host:port")
	key := fs.String("key", "", "API key (X-Api-Key)")
	ns := fs.String("namespace", "default", "namespace to send to")
	domain := fs.String("mail-domain", "localhost", "mail domain")
	rounds := fs.Int("rounds", 200, "single-message rounds for the latency (1 to 10000)")
	burst := fs.Int("burst", 2000, "messages of the throughput burst (0 to skip)")
	conns := fs.Int("conns", 8, "SMTP connections of the burst")
	timeout := fs.Duration("timeout", 60*time.Second, "give up waiting for an event after this long")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *rounds < 1 || *rounds > 10000 || *burst < 0 || *conns < 1 {
		return fmt.Errorf("--rounds must be 1 to 10000, --burst 0 or more, --conns at least 1")
	}
	r, err := newReceiver()
	if err != nil {
		return err
	}
	defer r.close()
	id, err := registerEndpoint(*api, *key, "http://"+r.addr+"/hook", *ns)
	if err != nil {
		return err
	}
	defer deleteEndpoint(*api, *key, id)

	run := newRunID()
	rep := webhookReport{API: *api, SMTP: *smtpAddr, Rounds: *rounds, Burst: *burst, Conns: *conns}
	s := &sender{addr: *smtpAddr}
	var lat []time.Duration
	for i := range *rounds {
		subject := fmt.Sprintf("bench-hook-%s-%06d", run, i)
		arrived := r.expect(subject)
		if _, err := s.send("bench@example.com", []string{fmt.Sprintf("hook-%d@%s.%s", i, *ns, *domain)}, benchMessage(subject)); err != nil {
			rep.Errors++
			continue
		}
		sent := time.Now()
		select {
		case at := <-arrived:
			lat = append(lat, max(at.Sub(sent), 0))
			rep.OK++
		case <-time.After(*timeout):
			rep.Errors++
		}
	}
	s.close()
	rep.Latency = summarize(lat)

	if *burst > 0 {
		rate, err := burstRate(r, *smtpAddr, *ns, *domain, run, *burst, *conns, *timeout)
		if err != nil {
			return err
		}
		rep.Rate = rate
	}
	line := fmt.Sprintf("webhook api=%s smtp=%s rounds=%d ok=%d errors=%d 250_to_event %s burst=%d conns=%d events_per_second=%.0f",
		rep.API, rep.SMTP, rep.Rounds, rep.OK, rep.Errors, rep.Latency, rep.Burst, rep.Conns, rep.Rate)
	return report(stdout, *asJSON, rep, line)
}

// burstRate sends n messages over conns connections at once and returns the
// events per second the receiver got, first arrival to last.
func burstRate(r *receiver, smtpAddr, ns, domain, run string, n, conns int, timeout time.Duration) (float64, error) {
	subjects := make([]string, n)
	chans := make([]<-chan time.Time, n)
	for i := range n {
		subjects[i] = fmt.Sprintf("bench-hook-burst-%s-%06d", run, i)
		chans[i] = r.expect(subjects[i])
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var sendErr error
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &sender{addr: smtpAddr}
			defer s.close()
			for i := c; i < n; i += conns {
				if _, err := s.send("bench@example.com", []string{fmt.Sprintf("burst-%d@%s.%s", i, ns, domain)}, benchMessage(subjects[i])); err != nil {
					mu.Lock()
					sendErr = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if sendErr != nil {
		return 0, fmt.Errorf("burst: %w", sendErr)
	}
	var first, last time.Time
	deadline := time.After(timeout)
	for i, c := range chans {
		select {
		case at := <-c:
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if at.After(last) {
				last = at
			}
		case <-deadline:
			return 0, fmt.Errorf("burst: event %d of %d did not arrive", i, n)
		}
	}
	if !last.After(first) {
		return 0, errors.New("burst: too short to time")
	}
	return float64(n-1) / last.Sub(first).Seconds(), nil
}

func benchMessage(subject string) []byte {
	return []byte("From: bench@example.com\r\nTo: hook@example.com\r\nSubject: " + subject +
		"\r\nMessage-ID: <" + subject + "@bench>\r\n\r\nA webhook benchmark message.\r\n")
}

// receiver is the webhook endpoint of the benchmark: it answers 204 at once
// and hands the arrival time of each expected subject's event to its waiter.
type receiver struct {
	addr string
	srv  *http.Server
	mu   sync.Mutex
	want map[string]chan time.Time
}

func newReceiver() (*receiver, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{addr: l.Addr().String(), want: map[string]chan time.Time{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(l)
	return r, nil
}

func (r *receiver) close() { r.srv.Close() }

func (r *receiver) expect(subject string) <-chan time.Time {
	c := make(chan time.Time, 1)
	r.mu.Lock()
	r.want[subject] = c
	r.mu.Unlock()
	return c
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	var ev struct {
		Type string `json:"type"`
		Data struct {
			Subject string `json:"subject"`
		} `json:"data"`
	}
	json.NewDecoder(io.LimitReader(req.Body, 1<<20)).Decode(&ev)
	w.WriteHeader(http.StatusNoContent)
	r.mu.Lock()
	c := r.want[ev.Data.Subject]
	delete(r.want, ev.Data.Subject)
	r.mu.Unlock()
	if c != nil {
		c <- at
	}
}

func registerEndpoint(api, key, url, ns string) (string, error) {
	body, _ := json.Marshal(map[string]any{"url": url, "event_types": []string{"email.received"}, "namespace": ns,
		"description": "catchbox-bench"})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, strings.TrimRight(api, "/")+"/api/webhooks", bytes.NewReader(body))
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("register the endpoint: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
		Message string `json:"message"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("register the endpoint: %d %s", resp.StatusCode, out.Message)
	}
	return out.Data.ID, nil
}

func deleteEndpoint(api, key, id string) {
	req, _ := http.NewRequest(http.MethodDelete, strings.TrimRight(api, "/")+"/api/webhooks/"+id, nil)
	req.Header.Set("X-Api-Key", key)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}
