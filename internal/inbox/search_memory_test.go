package inbox

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// BenchmarkQuotaMemory holds a namespace at its quota (2,000 emails) while
// emails keep arriving: each op is one round of 500 deliveries through the
// ingester (8 senders, group commit, the quota enforced in the ingest
// transaction) and one substring search from the namespace's copy in memory.
// Run it for the rounds wanted (-benchtime 1000x). It reports the copy's
// memory after the last round (copy-MB), the most it held after any round
// (max-copy-MB), what a fresh load of the same rows takes (fresh-MB), the
// times the namespace was loaded whole (loads), and the process's live heap
// after a collection and resident memory (heap-MiB, rss-MiB).
func BenchmarkQuotaMemory(b *testing.B) {
	const (
		quota   = 2000
		arrive  = 500
		senders = 8
	)
	db := storetest.Open(b, store.SQLite)
	ctx := context.Background()
	ts := tenant.NewService(db, secret.New([]byte("bench-secret-key-0123456789")), 720*time.Hour)
	if _, err := ts.Bootstrap(ctx, ""); err != nil {
		b.Fatal(err)
	}
	def, err := ts.NamespaceByName(ctx, "default")
	if err != nil {
		b.Fatal(err)
	}
	limit := quota
	ns, err := ts.UpsertNamespace(ctx, def.OrgID, "held", tenant.Settings{QuotaLimit: &limit})
	if err != nil {
		b.Fatal(err)
	}
	in := NewIngester(db, notify.NewHub())
	defer in.Close()
	s := NewSearcher(db, DefaultColumnBudget)
	n := 0
	deliver := func(count int) {
		var wg sync.WaitGroup
		errs := make(chan error, senders)
		for g := 0; g < senders; g++ {
			first := n + g*count/senders
			last := n + (g+1)*count/senders
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := first; i < last; i++ {
					raw := fmt.Sprintf("From: sender%d@example%d.com\r\nTo: user%d@held.localhost\r\nSubject: Order %07d password reset\r\n\r\nbody\r\n",
						i%97, i%13, i%1000, i)
					if _, err := in.Deliver(ctx, []byte(raw), Envelope{}, []Target{{Namespace: ns, Recipients: []string{"user@held.localhost"}}}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		n += count
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	search := func() {
		res, err := s.Search(ctx, Query{NamespaceID: ns.ID, Limit: 10, SubjectIncludes: "password reset"})
		if err != nil {
			b.Fatal(err)
		}
		if res.Total != quota {
			b.Fatalf("%d matches, want the quota's %d", res.Total, quota)
		}
	}
	copyBytes := func() int64 {
		size, ok := s.copies.Size(ns.ID)
		if !ok {
			b.Fatalf("after %d emails the namespace is not in memory", n)
		}
		return size
	}
	deliver(quota)
	search()
	var most int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		deliver(arrive)
		search()
		most = max(most, copyBytes())
	}
	b.StopTimer()
	// A fresh load: the same rows, searched once by a searcher of its own.
	fresh := NewSearcher(db, DefaultColumnBudget)
	if _, err := fresh.Search(ctx, Query{NamespaceID: ns.ID, Limit: 10, SubjectIncludes: "password reset"}); err != nil {
		b.Fatal(err)
	}
	freshBytes, ok := fresh.copies.Size(ns.ID)
	if !ok {
		b.Fatal("the fresh load is not in memory")
	}
	b.ReportMetric(float64(copyBytes())/1e6, "copy-MB")
	b.ReportMetric(float64(most)/1e6, "max-copy-MB")
	b.ReportMetric(float64(freshBytes)/1e6, "fresh-MB")
	b.ReportMetric(float64(s.copies.Loads()), "loads")
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(selfRSS(b))/1024, "rss-MiB")
	runtime.KeepAlive(s) // its copies are part of the heap measured
}

// selfRSS returns the process's resident memory in KiB (VmRSS).
func selfRSS(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
