package inbox

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/message"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// BenchmarkExtractShare measures what reading links and codes adds to ingest:
// the process's CPU time (user and system, all goroutines: parsing, the group
// commit, SQLite, the fsync) per delivered message, with message.Extract and
// with it replaced by nothing, in alternating batches of 400 messages from 8
// senders, so that both halves see the same load on a shared machine. Each of
// b.N rounds is one batch of each. It reports both figures, and the share of
// the first that reading takes: the median of the rounds' shares, which a
// burst of other work on the machine moves less than the totals.
func BenchmarkExtractShare(b *testing.B) {
	signIn, err := os.ReadFile("../message/testdata/bench-signin.eml")
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range []struct {
		name string
		raw  []byte
	}{
		{"small", proseMessage(850)},
		{"text-8k", proseMessage(8 << 10)},
		{"html-8k", signIn},
	} {
		b.Run(m.name, func(b *testing.B) {
			db := storetest.Open(b, store.SQLite)
			in := NewIngester(db, notify.NewHub())
			defer in.Close()
			ns := extractBenchNamespace(b, db)
			none := func(string, string, string) ([]message.Link, []string) { return []message.Link{}, []string{} }
			defer func() { extract = message.Extract }()
			var with, without time.Duration
			var shares []float64
			const batch = 400
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var round [2]time.Duration // with, without
				for half := 0; half < 2; half++ {
					reading := (i+half)%2 == 0
					extract = message.Extract
					if !reading {
						extract = none
					}
					start := processCPU()
					deliverBatch(b, in, ns, m.raw, batch)
					if used := processCPU() - start; reading {
						round[0] = used
					} else {
						round[1] = used
					}
				}
				with, without = with+round[0], without+round[1]
				shares = append(shares, 100*float64(round[0]-round[1])/float64(round[0]))
			}
			sort.Float64s(shares)
			n := float64(b.N * batch)
			b.ReportMetric(float64(with.Microseconds())/n, "cpu-us/msg")
			b.ReportMetric(float64(without.Microseconds())/n, "cpu-us/msg-without")
			b.ReportMetric(shares[len(shares)/2], "extract-%")
		})
	}
}

// deliverBatch delivers n copies of raw from 8 senders.
func deliverBatch(b *testing.B, in *Ingester, ns tenant.Namespace, raw []byte, n int) {
	var wg sync.WaitGroup
	for s := 0; s < 8; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := s; i < n; i += 8 {
				if _, err := in.Deliver(context.Background(), raw, Envelope{ClientIP: "127.0.0.1"},
					[]Target{{Namespace: ns, Recipients: []string{"user@default.localhost"}}}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// proseMessage is a text/plain message of about n bytes of prose, as
// catchbox-bench sends.
func proseMessage(n int) []byte {
	words := strings.Fields("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua")
	var b strings.Builder
	b.WriteString("From: Bench <bench@example.com>\r\nTo: user@default.localhost\r\nSubject: bench message\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n\r\n")
	for i, line := 0, 0; b.Len() < n; i++ {
		w := words[(i*7)%len(words)]
		if line+len(w) > 72 {
			b.WriteString("\r\n")
			line = 0
		}
		fmt.Fprintf(&b, "%s ", w)
		line += len(w) + 1
	}
	return []byte(b.String())
}

func extractBenchNamespace(b testing.TB, db *store.DB) tenant.Namespace {
	ts := tenant.NewService(db, secret.New([]byte("bench-secret-key-0123456789")), 720*time.Hour)
	if _, err := ts.Bootstrap(context.Background(), ""); err != nil {
		b.Fatal(err)
	}
	ns, err := ts.NamespaceByName(context.Background(), "default")
	if err != nil {
		b.Fatal(err)
	}
	return ns
}
