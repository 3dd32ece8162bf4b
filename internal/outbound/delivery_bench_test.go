package outbound_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/outbound"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/outbound/relaytest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testkit"
)

// benchEnv is the whole service on a fresh store with its job queue running
// on the real clock, a test relay, and a hook that notes when each internal
// delivery's transaction has committed (from then on search finds it).
type benchEnv struct {
	*apiEnv
	relay *relaytest.Server

	mu        sync.Mutex
	committed map[string]time.Time // inbox email id → commit
	relayed   map[string]time.Time // subject → the relay's acceptance
}

func newBenchEnv(b *testing.B, db *store.DB) *benchEnv {
	relay := startRelay(b)
	be := &benchEnv{relay: relay, committed: map[string]time.Time{}, relayed: map[string]time.Time{}}
	e := newAPIEnvWith(b, db, func(c *config.Serve) {
		c.RelayURL = relay.URL()
		c.RateLimitKey = 0 // the load is the benchmark's, not a client's
	})
	e.svc.Outbound.Store.Now = time.Now
	e.svc.Ingester.OnIngest(func(_ context.Context, tx *store.Tx, s inbox.Stored) error {
		tx.AfterCommit(func() {
			be.mu.Lock()
			be.committed[s.ID] = time.Now()
			be.mu.Unlock()
		})
		return nil
	})
	relay.Notify(func(m relaytest.Message) {
		subject := ""
		if i := strings.Index(string(m.Data), "\r\nSubject: "); i >= 0 {
			subject, _, _ = strings.Cut(string(m.Data[i+11:]), "\r\n")
		}
		be.mu.Lock()
		be.relayed[subject] = m.At
		be.mu.Unlock()
	})
	be.apiEnv = e
	return be
}

func (be *benchEnv) startJobs(b *testing.B) {
	if err := be.svc.Jobs.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		be.svc.Jobs.Stop(ctx)
	})
}

// BenchmarkDeliveryLatency sends messages over HTTP, eight requests at a
// time (and one at a time, for the latency of an idle queue), each to one
// recipient, and measures per message the time from the
// start of its POST to the relay's acceptance (relay) or to the commit that
// stores it in the namespace's inbox, from which search finds it
// (internal). Reported: messages per second over the run, p50 and p99.
func BenchmarkDeliveryLatency(b *testing.B) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		for _, path := range []string{"relay", "internal"} {
			for _, conc := range []int{1, 8} {
				n := 100 * conc
				b.Run(fmt.Sprintf("%s/%s/conc=%d", d, path, conc), func(b *testing.B) {
					var lat []time.Duration
					var elapsed time.Duration
					for i := 0; i < b.N; i++ {
						l, el := benchLatency(b, storetest.Open(b, d), path, n, conc)
						lat, elapsed = append(lat, l...), elapsed+el
					}
					slices.Sort(lat)
					b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "msgs/s")
					b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
					b.ReportMetric(float64(lat[(len(lat)*99+99)/100-1].Microseconds())/1000, "p99_ms")
					b.ReportMetric(0, "ns/op")
				})
			}
		}
	}
}

func benchLatency(b *testing.B, db *store.DB, path string, n, conc int) ([]time.Duration, time.Duration) {
	b.StopTimer()
	be := newBenchEnv(b, db)
	be.startJobs(b)
	addr := func(i int) string { return fmt.Sprintf("box%d@default.localhost", i) }
	if path == "relay" {
		addr = func(i int) string { return fmt.Sprintf("partner%d@example.com", i) }
		for i := 0; i < n; i++ {
			be.verify(be.org.ID, addr(i))
		}
	}
	posted := make([]time.Time, n)
	ids := make([]string, n)
	subject := func(i int) string { return fmt.Sprintf("bench %s %d", path, i) }
	b.StartTimer()
	start := time.Now()
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				posted[i] = time.Now()
				r := be.do(be.key, "POST", "/api/emails/send?namespace=default",
					map[string]any{"to": []string{addr(i)}, "subject": subject(i), "text": "hello"})
				if r.status != http.StatusAccepted {
					b.Errorf("send %d: %d %s", i, r.status, r.body)
					continue
				}
				var s sent
				r.json(b, &s)
				ids[i] = s.ID
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	var lat []time.Duration
	var last time.Time
	for i := 0; i < n; i++ {
		// The time of delivery is the one recorded, not when it is seen.
		at := testkit.AwaitWithin(b, 5*time.Minute, fmt.Sprintf("message %d delivered", i), func() (time.Time, bool) {
			at := be.deliveredAt(b, path, subject(i), ids[i])
			return at, !at.IsZero()
		})
		lat = append(lat, at.Sub(posted[i]))
		if at.After(last) {
			last = at
		}
	}
	b.StopTimer()
	return lat, last.Sub(start)
}

// deliveredAt is when the message reached its recipient, zero if not yet.
func (be *benchEnv) deliveredAt(b *testing.B, path, subject, id string) time.Time {
	be.mu.Lock()
	at, ok := be.relayed[subject]
	be.mu.Unlock()
	if path == "relay" {
		if ok {
			return at
		}
		return time.Time{}
	}
	d, err := be.svc.Outbound.Store.Get(context.Background(), be.org.ID, id)
	if err != nil {
		b.Fatal(err)
	}
	for _, ev := range d.Events {
		if ev.Type == outstore.EventDelivered {
			be.mu.Lock()
			at := be.committed[ev.ProviderMessageID]
			be.mu.Unlock()
			return at
		}
	}
	return time.Time{}
}

// BenchmarkDeliveryQueue measures the delivery queue's throughput from a
// backlog: 10,000 messages are created with their delivery jobs while the
// queue is stopped, each to one external recipient (relay) or one of the
// namespace (internal); then the queue starts and the time until every one is
// delivered is taken. Reported as messages per second.
func BenchmarkDeliveryQueue(b *testing.B) {
	const pending = 10000
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		for _, path := range []string{"relay", "internal"} {
			b.Run(fmt.Sprintf("%s/%s", d, path), func(b *testing.B) {
				var elapsed time.Duration
				for i := 0; i < b.N; i++ {
					elapsed += benchQueue(b, storetest.Open(b, d), path, pending)
				}
				b.ReportMetric(float64(pending*b.N)/elapsed.Seconds(), "msgs/s")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

func benchQueue(b *testing.B, db *store.DB, path string, n int) time.Duration {
	b.StopTimer()
	ctx := context.Background()
	be := newBenchEnv(b, db)
	ns, err := be.svc.Tenants.NamespaceByName(ctx, "default")
	if err != nil {
		b.Fatal(err)
	}
	const batch = 500
	for first := 0; first < n; first += batch {
		err := db.InTx(ctx, func(tx *store.Tx) error {
			for i := first; i < min(first+batch, n); i++ {
				rcpt := outstore.NewRecipient{Type: outstore.To, Email: fmt.Sprintf("box%d@default.localhost", i), Internal: true}
				if path == "relay" {
					rcpt = outstore.NewRecipient{Type: outstore.To, Email: fmt.Sprintf("partner%d@example.com", i)}
				}
				id := outstore.NewID()
				e, err := be.svc.Outbound.Store.Create(ctx, tx, outstore.NewEmail{ID: id, OrgID: be.org.ID,
					NamespaceID: ns.ID, Type: outstore.TypeNew, From: outstore.Address{Email: "outbound-delivery@default.localhost"},
					Subject: fmt.Sprintf("queued %d", i), Text: "hello", MessageID: "<" + id + "@localhost>",
					Recipients: []outstore.NewRecipient{rcpt},
					Source: []byte("From: outbound-delivery@default.localhost\r\nTo: " + rcpt.Email + "\r\nMessage-ID: <" + id +
						"@localhost>\r\nSubject: queued " + fmt.Sprint(i) + "\r\n\r\nhello\r\n")})
				if err != nil {
					return err
				}
				if _, err := outbound.EnqueueDelivery(ctx, be.svc.Jobs, tx, e.ID); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	count := func() int {
		be.mu.Lock()
		defer be.mu.Unlock()
		if path == "relay" {
			return len(be.relayed)
		}
		return len(be.committed)
	}
	b.StartTimer()
	start := time.Now()
	be.startJobs(b)
	// Looked at every 5 ms: the time is taken when the last is seen.
	if !testkit.EventuallyEvery(20*time.Minute, 5*time.Millisecond, func() bool { return count() >= n }) {
		b.Fatalf("%d of %d delivered after 20 minutes", count(), n)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	return elapsed
}
