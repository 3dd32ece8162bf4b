package jobs

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// BenchmarkQueue measures the queue's own cost, claim and completion: 10,000
// pending jobs whose handler does nothing but record its outcome, worked by
// one queue with 1 and with 16 workers. Reported as jobs/s; the PostgreSQL
// half runs when CATCHBOX_TEST_POSTGRES_URL is set.
func BenchmarkQueue(b *testing.B) {
	const pending = 10000
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		for _, workers := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/workers=%d", d, workers), func(b *testing.B) {
				var elapsed time.Duration
				for i := 0; i < b.N; i++ {
					elapsed += benchmarkDrain(b, storetest.Open(b, d), pending, workers)
				}
				b.ReportMetric(float64(pending*b.N)/elapsed.Seconds(), "jobs/s")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// benchmarkDrain enqueues n jobs, then times a queue working through them.
func benchmarkDrain(b *testing.B, db *store.DB, n, workers int) time.Duration {
	b.StopTimer()
	ctx := context.Background()
	q := New(db, nil, Options{})
	var done atomic.Int64
	all := make(chan struct{})
	q.Register("bench", func(ctx context.Context, j *Job) error {
		if err := j.Finish(ctx, nil, nil); err != nil {
			return err
		}
		if done.Add(1) == int64(n) {
			close(all)
		}
		return nil
	}, Limits{Workers: workers})
	err := db.InTx(ctx, func(tx *store.Tx) error {
		for i := 0; i < n; i++ {
			if _, err := q.Enqueue(ctx, tx, "bench", []byte(`{"to":"someone@example.com"}`), EnqueueOptions{}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	start := time.Now()
	if err := q.Start(ctx); err != nil {
		b.Fatal(err)
	}
	select {
	case <-all:
	case <-time.After(10 * time.Minute):
		b.Fatalf("%d of %d jobs done after 10 minutes", done.Load(), n)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if err := q.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	return elapsed
}
