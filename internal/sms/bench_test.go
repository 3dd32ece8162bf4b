package sms_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// BenchmarkVirtualSMSWake measures what a test suite waits for: from sending a
// virtual SMS (POST /api/sms/virtual, answered once committed) until a search
// already held with wait=true has its answer. It reports the median and the
// 99th percentile besides the mean.
func BenchmarkVirtualSMSWake(b *testing.B) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		b.Run(d.String(), func(b *testing.B) {
			e := newEnv(b, storetest.Open(b, d))
			e.api.WaitHold = time.Minute
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				token := fmt.Sprintf("wake%d", i)
				done := e.holdSearch("/api/sms/+15550001111/messages?wait=true&body=" + token)
				e.waitForWaiters()
				b.StartTimer()
				start := time.Now()
				e.virtual("+15551230001", activePhone, "code "+token)
				h := <-done
				lat = append(lat, time.Since(start))
				if h.status != http.StatusOK || h.r.TotalCount != 1 {
					b.Fatalf("wait answered %+v", h)
				}
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			pct := func(p float64) float64 {
				return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond)
			}
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
		})
	}
}

// BenchmarkSearchPage measures a search answering a full page of 100 messages
// (the largest page), through the service: what reading each message's links
// and codes from its body adds to is the rest of this figure
// (docs/benchmarks.md, "Links and codes at ingest").
func BenchmarkSearchPage(b *testing.B) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		b.Run(d.String(), func(b *testing.B) {
			e := newEnv(b, storetest.Open(b, d))
			for i := 0; i < 100; i++ {
				e.virtual("+15551230001", activePhone, fmt.Sprintf("Your Acme sign-in code is %06d. It expires in 10 minutes; never share it. https://acme.example/s/%d", i*7919%1000000, i))
			}
			q := sms.Query{NumberID: e.active.ID, Limit: 100}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := e.svc.Search(context.Background(), q)
				if err != nil || len(res.Messages) != 100 {
					b.Fatalf("%d messages, %v", len(res.Messages), err)
				}
			}
		})
	}
}
