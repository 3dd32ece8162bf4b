package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testkit"
)

// newClock is the tests' forced clock: it moves only when a test moves it.
func newClock() *testkit.Clock {
	return testkit.NewClock(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
}

// testLease is long enough that no lease is renewed while a test runs (the
// renewal ticks every third of it, in real time): leases end only when a
// test moves the clock past them.
const testLease = time.Hour

// newQueue returns a queue on db with the forced clock, closed at the end of
// the test. Its poll is an hour: anything a test sees run was woken.
func newQueue(t *testing.T, db *store.DB, clk *testkit.Clock, n notify.Notifier) *Queue {
	t.Helper()
	q := New(db, n, Options{Lease: testLease, PollInterval: time.Hour, Now: clk.Now})
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // give running handlers no time: they are cancelled
		q.Stop(ctx)
	})
	return q
}

// replica returns a second store connection standing for another replica:
// on PostgreSQL a new pool on the same schema; on SQLite, where one process
// owns the file, the same store.
func replica(t *testing.T, db *store.DB) *store.DB {
	t.Helper()
	if db.Dialect == store.SQLite {
		return db
	}
	db2, err := store.Open(context.Background(), db.URL)
	if err != nil {
		t.Fatalf("open second store: %v", err)
	}
	t.Cleanup(func() { db2.Close() })
	return db2
}

// notifierFor returns what a replica uses for wake-ups: LISTEN/NOTIFY on
// PostgreSQL, a hub shared by the test's queues on SQLite (one process).
func notifierFor(t *testing.T, db *store.DB, hub *notify.Hub) notify.Notifier {
	if db.Dialect == store.SQLite {
		return hub
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := notify.NewPostgres(ctx, db.URL)
	t.Cleanup(func() {
		cancel()
		<-p.Done()
	})
	return p
}

func get(t *testing.T, q *Queue, id int64) Info {
	t.Helper()
	in, err := q.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("get job %d: %v", id, err)
	}
	return in
}

func waitState(t *testing.T, q *Queue, id int64, s State, attempts int) Info {
	t.Helper()
	return testkit.Await(t, fmt.Sprintf("job %d %s after %d attempts", id, s, attempts), func() (Info, bool) {
		in := get(t, q, id)
		return in, in.State == s && in.Attempts == attempts
	})
}

func enqueue(t *testing.T, q *Queue, kind string, opts EnqueueOptions) int64 {
	t.Helper()
	var id int64
	err := q.db.InTx(context.Background(), func(tx *store.Tx) error {
		var err error
		id, err = q.Enqueue(context.Background(), tx, kind, []byte(`{"n":1}`), opts)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func wake(q *Queue, kind string) { q.notifier.Publish(context.Background(), "jobs:"+kind) }

// calls counts handler runs per job.
type calls struct {
	mu sync.Mutex
	n  map[int64]int
}

func (c *calls) add(id int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[int64]int{}
	}
	c.n[id]++
	return c.n[id]
}

func (c *calls) get(id int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
}

func createEffects(t *testing.T, db *store.DB) {
	t.Helper()
	if _, err := db.Exec(context.Background(), "CREATE TABLE job_effects (job_id BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
}

// effect is what a handler commits with its outcome: one row per job done.
func effect(j *Job) func(context.Context, *store.Tx) error {
	return func(ctx context.Context, tx *store.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO job_effects (job_id) VALUES (?)", j.ID)
		return err
	}
}

func effects(t *testing.T, db *store.DB, id int64) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), "SELECT COUNT(*) FROM job_effects WHERE job_id = ?", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestEnqueueCommitsWithItsTransaction(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := newClock()
		q := newQueue(t, db, clk, nil)
		var c calls
		q.Register("mail", func(ctx context.Context, j *Job) error {
			c.add(j.ID)
			return nil
		}, Limits{})
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		rollback := errors.New("rolled back")
		err := db.InTx(ctx, func(tx *store.Tx) error {
			if _, err := q.Enqueue(ctx, tx, "mail", []byte("x"), EnqueueOptions{}); err != nil {
				return err
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatalf("InTx = %v", err)
		}
		if counts, err := q.Counts(ctx); err != nil || len(counts) != 0 {
			t.Fatalf("after a rollback Counts = %v, %v; want no jobs", counts, err)
		}
		id := enqueue(t, q, "mail", EnqueueOptions{})
		in := waitState(t, q, id, Done, 1)
		if in.AttemptedAt.IsZero() || in.FinishedAt.IsZero() || in.LastError != "" || string(in.Payload) != `{"n":1}` {
			t.Fatalf("done job = %+v", in)
		}
		// A second job done proves the first is not run again behind it.
		id2 := enqueue(t, q, "mail", EnqueueOptions{})
		waitState(t, q, id2, Done, 1)
		if c.get(id) != 1 || c.get(id2) != 1 {
			t.Fatalf("handler ran %d and %d times, want once each", c.get(id), c.get(id2))
		}
		if _, err := q.Enqueue(ctx, nil, "nobody", nil, EnqueueOptions{}); !errors.Is(err, ErrUnknownKind) {
			t.Fatalf("Enqueue of an unregistered kind = %v, want ErrUnknownKind", err)
		}
	})
}

// A failed attempt comes back after its backoff, by the forced clock, and not
// before; the job is done at the third attempt with the last error kept.
func TestRetryAfterBackoff(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := newClock()
		q := newQueue(t, db, clk, nil)
		q.Register("flaky", func(ctx context.Context, j *Job) error {
			if j.Attempt < 3 {
				return fmt.Errorf("boom %d", j.Attempt)
			}
			return nil
		}, Limits{MaxAttempts: 5, Backoff: 10 * time.Second, MaxBackoff: time.Hour})
		q.Register("marker", func(context.Context, *Job) error { return nil }, Limits{})
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		id := enqueue(t, q, "flaky", EnqueueOptions{})
		for attempt, base := range []time.Duration{10 * time.Second, 20 * time.Second} {
			failedAt := clk.Now()
			in := waitState(t, q, id, Pending, attempt+1)
			if want := fmt.Sprintf("boom %d", attempt+1); in.LastError != want {
				t.Fatalf("last error %q, want %q", in.LastError, want)
			}
			if d := in.RunAt.Sub(failedAt); d < base/2 || d > base {
				t.Fatalf("attempt %d: retry after %s, want between %s and %s", attempt+1, d, base/2, base)
			}
			// Just before its time the job stays put: a job done after it
			// proves a claim round ran meanwhile.
			clk.Set(in.RunAt.Add(-time.Millisecond))
			waitState(t, q, enqueue(t, q, "marker", EnqueueOptions{}), Done, 1)
			if got := get(t, q, id); got.State != Pending || got.Attempts != attempt+1 {
				t.Fatalf("job claimed before its retry time: %+v", got)
			}
			clk.Set(in.RunAt)
			wake(q, "flaky")
		}
		in := waitState(t, q, id, Done, 3)
		if in.LastError != "boom 2" {
			t.Fatalf("done job's last error %q, want the last failure's", in.LastError)
		}
	})
}

func TestDeadAfterAttemptLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := newClock()
		q := newQueue(t, db, clk, nil)
		q.Register("doomed", func(ctx context.Context, j *Job) error {
			return fmt.Errorf("boom %d", j.Attempt)
		}, Limits{MaxAttempts: 3})
		q.Register("refused", func(context.Context, *Job) error {
			return Permanent(errors.New("550 no such user"))
		}, Limits{MaxAttempts: 3})
		q.Register("deferred", func(ctx context.Context, j *Job) error {
			if j.Attempt == 1 {
				var ms int64
				fmt.Sscan(string(j.Payload), &ms)
				return RetryAt(time.UnixMilli(ms), errors.New("451 try later"))
			}
			return nil
		}, Limits{MaxAttempts: 3})
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		id := enqueue(t, q, "doomed", EnqueueOptions{})
		for attempt := 1; attempt < 3; attempt++ {
			waitState(t, q, id, Pending, attempt)
			clk.Add(2 * time.Hour) // past any backoff
			wake(q, "doomed")
		}
		in := waitState(t, q, id, Dead, 3)
		if in.LastError != "boom 3" || in.FinishedAt.IsZero() {
			t.Fatalf("dead job = %+v, want its last error and end", in)
		}

		in = waitState(t, q, enqueue(t, q, "refused", EnqueueOptions{}), Dead, 1)
		if in.LastError != "550 no such user" {
			t.Fatalf("permanent failure recorded as %q", in.LastError)
		}

		retryAt := clk.Now().Add(42 * time.Minute)
		err := db.InTx(ctx, func(tx *store.Tx) error {
			var err error
			id, err = q.Enqueue(ctx, tx, "deferred", []byte(fmt.Sprint(retryAt.UnixMilli())), EnqueueOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		in = waitState(t, q, id, Pending, 1)
		if !in.RunAt.Equal(retryAt) {
			t.Fatalf("RetryAt asked for %s, job runs at %s", retryAt, in.RunAt)
		}
		clk.Set(retryAt)
		wake(q, "deferred")
		waitState(t, q, id, Done, 2)
	})
}

func TestScheduledJobWaitsForRunAt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := newClock()
		q := newQueue(t, db, clk, nil)
		q.Register("later", func(context.Context, *Job) error { return nil }, Limits{})
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		at := clk.Now().Add(time.Hour)
		id := enqueue(t, q, "later", EnqueueOptions{RunAt: at})
		clk.Set(at.Add(-time.Millisecond))
		// A job due now, enqueued after the scheduled one and done: the claim
		// round that took it saw the scheduled job and left it.
		waitState(t, q, enqueue(t, q, "later", EnqueueOptions{}), Done, 1)
		if in := get(t, q, id); in.State != Pending || in.Attempts != 0 {
			t.Fatalf("job claimed before its run_at: %+v", in)
		}
		clk.Set(at)
		wake(q, "later")
		waitState(t, q, id, Done, 1)
	})
}

// A replica that claimed a job and died (its claim is made here and then
// abandoned: no handler, no renewal) loses the job once its lease has run
// out; another replica takes it over and commits its effects once. The dead
// replica's late Finish, made while the other holds the job, is refused and
// commits nothing.
func TestExpiredLeaseIsTakenOver(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		createEffects(t, db)
		clk := newClock()
		hub := notify.NewHub()
		dead := newQueue(t, db, clk, notifierFor(t, db, hub))
		dead.Register("deliver", func(context.Context, *Job) error { return nil }, Limits{MaxAttempts: 3})
		id := enqueue(t, dead, "deliver", EnqueueOptions{})
		var abandoned []*Job
		err := db.InTx(ctx, func(tx *store.Tx) error {
			var err error
			abandoned, err = dead.claim(ctx, tx, dead.kind("deliver"), clk.Now(), 1)
			return err
		})
		if err != nil || len(abandoned) != 1 {
			t.Fatalf("claim = %d jobs, %v", len(abandoned), err)
		}

		db2 := replica(t, db)
		live := newQueue(t, db2, clk, notifierFor(t, db2, hub))
		var c calls
		entered, release := make(chan struct{}, 1), make(chan struct{})
		live.Register("deliver", func(ctx context.Context, j *Job) error {
			c.add(j.ID)
			if j.ID == id {
				entered <- struct{}{}
				<-release
			}
			return j.Finish(ctx, nil, effect(j))
		}, Limits{MaxAttempts: 3, Workers: 2})
		if err := live.Start(ctx); err != nil {
			t.Fatal(err)
		}
		// Within the lease nothing happens: a job done after the claim round
		// shows the round left the leased job alone.
		waitState(t, live, enqueue(t, live, "deliver", EnqueueOptions{}), Done, 1)
		if in := get(t, live, id); in.State != Running || in.Attempts != 1 {
			t.Fatalf("leased job = %+v, want running under the first lease", in)
		}
		clk.Add(testLease + time.Millisecond)
		wake(live, "deliver")
		testkit.Receive(t, "the take-over", entered)
		if err := abandoned[0].Finish(ctx, nil, effect(abandoned[0])); !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("late Finish of the dead replica = %v, want ErrLeaseLost", err)
		}
		close(release)
		in := waitState(t, live, id, Done, 2)
		if !strings.Contains(in.LastError, "lease ran out") {
			t.Fatalf("taken-over job's last error %q, want the lease's end", in.LastError)
		}
		if n, runs := effects(t, db, id), c.get(id); n != 1 || runs != 1 {
			t.Fatalf("job committed %d effects over %d runs, want 1 and 1", n, runs)
		}
	})
}

// A worker whose handler is still running but no longer renews its lease
// (here, the forced clock jumps past it) loses the job to another worker;
// when its handler finishes, its Finish is refused.
func TestStalledWorkerLosesItsJob(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		createEffects(t, db)
		clk := newClock()
		hub := notify.NewHub()
		stalled := newQueue(t, db, clk, notifierFor(t, db, hub))
		entered, release := make(chan struct{}), make(chan struct{})
		finished := make(chan error, 1)
		stalled.Register("deliver", func(ctx context.Context, j *Job) error {
			close(entered)
			<-release
			err := j.Finish(ctx, nil, effect(j))
			finished <- err
			return err
		}, Limits{})
		if err := stalled.Start(ctx); err != nil {
			t.Fatal(err)
		}
		id := enqueue(t, stalled, "deliver", EnqueueOptions{})
		testkit.Receive(t, "the first attempt", entered)

		db2 := replica(t, db)
		other := newQueue(t, db2, clk, notifierFor(t, db2, hub))
		other.Register("deliver", func(ctx context.Context, j *Job) error {
			return j.Finish(ctx, nil, effect(j))
		}, Limits{})
		clk.Add(testLease + time.Millisecond)
		if err := other.Start(ctx); err != nil {
			t.Fatal(err)
		}
		waitState(t, other, id, Done, 2)
		close(release)
		if err := testkit.Receive(t, "the stalled worker's Finish", finished); !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("stalled worker's Finish = %v, want ErrLeaseLost", err)
		}
		if n := effects(t, db, id); n != 1 {
			t.Fatalf("job committed %d effects, want 1", n)
		}
		if in := get(t, other, id); in.State != Done || in.Attempts != 2 {
			t.Fatalf("job after the stalled worker returned = %+v", in)
		}
	})
}

// Two replicas (two store connections on PostgreSQL) work through many jobs
// enqueued while they run: each job is run and committed exactly once.
func TestTwoReplicasRunEachJobOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		createEffects(t, db)
		clk := newClock()
		hub := notify.NewHub()
		var c calls
		ran := make([]int, 2)
		var mu sync.Mutex
		queues := make([]*Queue, 2)
		for i, d := range []*store.DB{db, replica(t, db)} {
			q := newQueue(t, d, clk, notifierFor(t, d, hub))
			q.Register("deliver", func(ctx context.Context, j *Job) error {
				c.add(j.ID)
				mu.Lock()
				ran[i]++
				mu.Unlock()
				return j.Finish(ctx, nil, effect(j))
			}, Limits{Workers: 4})
			if err := q.Start(ctx); err != nil {
				t.Fatal(err)
			}
			queues[i] = q
		}
		const batches, perBatch = 20, 50
		var ids []int64
		for b := 0; b < batches; b++ {
			err := db.InTx(ctx, func(tx *store.Tx) error {
				for i := 0; i < perBatch; i++ {
					id, err := queues[b%2].Enqueue(ctx, tx, "deliver", nil, EnqueueOptions{})
					if err != nil {
						return err
					}
					ids = append(ids, id)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		testkit.Await(t, "every job done", func() ([]Count, bool) {
			counts, err := queues[0].Counts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return counts, len(counts) == 1 && counts[0].State == Done && counts[0].Jobs == len(ids)
		})
		committed := map[int64]int{}
		rows, err := db.Query(ctx, "SELECT job_id, COUNT(*) FROM job_effects GROUP BY job_id")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			var n int
			if err := rows.Scan(&id, &n); err != nil {
				t.Fatal(err)
			}
			committed[id] = n
		}
		rows.Close()
		for _, id := range ids {
			if runs, n := c.get(id), committed[id]; runs != 1 || n != 1 {
				t.Fatalf("job %d ran %d times and committed %d effects, want 1 and 1", id, runs, n)
			}
		}
		if len(committed) != len(ids) {
			t.Fatalf("effects committed for %d jobs, want %d", len(committed), len(ids))
		}
		var retried int
		if err := db.QueryRow(ctx, "SELECT COUNT(*) FROM jobs WHERE attempts <> 1").Scan(&retried); err != nil || retried != 0 {
			t.Fatalf("%d jobs took more than one attempt (%v)", retried, err)
		}
		t.Logf("replicas ran %d and %d jobs", ran[0], ran[1])
	})
}

// Enqueued on one replica, a job wakes the workers of another (LISTEN/NOTIFY
// on PostgreSQL): the worker polls once an hour, so only the wake-up runs it.
func TestEnqueueWakesAnotherReplica(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := newClock()
		hub := notify.NewHub()
		producer := newQueue(t, db, clk, notifierFor(t, db, hub))
		producer.Register("deliver", func(context.Context, *Job) error { return nil }, Limits{})
		db2 := replica(t, db)
		worker := newQueue(t, db2, clk, notifierFor(t, db2, hub))
		worker.Register("deliver", func(context.Context, *Job) error { return nil }, Limits{})
		if err := worker.Start(ctx); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			waitState(t, worker, enqueue(t, producer, "deliver", EnqueueOptions{}), Done, 1)
		}
	})
}

func TestCancel(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		createEffects(t, db)
		clk := newClock()
		q := newQueue(t, db, clk, nil)
		var c calls
		entered := make(chan struct{}, 1)
		finished := make(chan error, 1)
		q.Register("deliver", func(ctx context.Context, j *Job) error {
			c.add(j.ID)
			if string(j.Payload) != "block" {
				return nil
			}
			entered <- struct{}{}
			<-ctx.Done()
			if cause := context.Cause(ctx); !errors.Is(cause, ErrCancelled) {
				t.Errorf("handler's context ended by %v, want ErrCancelled", cause)
			}
			err := j.Finish(context.Background(), nil, effect(j))
			finished <- err
			return err
		}, Limits{})
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		cancel := func(id int64) bool {
			var ok bool
			err := db.InTx(ctx, func(tx *store.Tx) error {
				var err error
				ok, err = q.Cancel(ctx, tx, id)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}

		pending := enqueue(t, q, "deliver", EnqueueOptions{RunAt: clk.Now().Add(time.Hour)})
		if !cancel(pending) {
			t.Fatal("Cancel of a pending job reported nothing cancelled")
		}
		clk.Add(2 * time.Hour)
		waitState(t, q, enqueue(t, q, "deliver", EnqueueOptions{}), Done, 1)
		if in := get(t, q, pending); in.State != Cancelled || c.get(pending) != 0 {
			t.Fatalf("cancelled job = %+v after %d runs", in, c.get(pending))
		}

		var running int64
		err := db.InTx(ctx, func(tx *store.Tx) error {
			var err error
			running, err = q.Enqueue(ctx, tx, "deliver", []byte("block"), EnqueueOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		testkit.Receive(t, "the running job", entered)
		if !cancel(running) {
			t.Fatal("Cancel of a running job reported nothing cancelled")
		}
		if err := testkit.Receive(t, "the cancelled job's Finish", finished); !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("cancelled job's Finish = %v, want ErrLeaseLost", err)
		}
		if in := get(t, q, running); in.State != Cancelled || effects(t, db, running) != 0 {
			t.Fatalf("cancelled running job = %+v with %d effects", in, effects(t, db, running))
		}
		if cancel(running) {
			t.Fatal("Cancel of an ended job reported it cancelled")
		}
	})
}

// Stop claims nothing more and waits for the running jobs; at its deadline it
// cancels them and leaves their leases to run out, and another replica then
// finishes them.
func TestGracefulStop(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := newClock()
		hub := notify.NewHub()
		q := newQueue(t, db, clk, hub)
		entered, release := make(chan int64, 2), make(chan struct{})
		q.Register("deliver", func(ctx context.Context, j *Job) error {
			entered <- j.ID
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}, Limits{Workers: 1})
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		first := enqueue(t, q, "deliver", EnqueueOptions{})
		testkit.Receive(t, "the first job", entered)
		second := enqueue(t, q, "deliver", EnqueueOptions{}) // waits for the only worker
		stopped := make(chan error, 1)
		go func() { stopped <- q.Stop(ctx) }()
		testkit.Await(t, "the claim loops to end", func() (int, bool) { n := hub.Waiters(); return n, n == 0 })
		close(release)
		if err := testkit.Receive(t, "Stop", stopped); err != nil {
			t.Fatalf("Stop = %v, want nil once the running job finished", err)
		}
		waitState(t, q, first, Done, 1)
		if in := get(t, q, second); in.State != Pending || in.Attempts != 0 {
			t.Fatalf("job claimed after Stop: %+v", in)
		}

		// A stop whose deadline passes while a job runs.
		q2 := newQueue(t, db, clk, hub)
		q2.Register("deliver", func(ctx context.Context, j *Job) error {
			entered <- j.ID
			<-ctx.Done()
			return context.Cause(ctx)
		}, Limits{Workers: 1})
		if err := q2.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if id := testkit.Receive(t, "the second job", entered); id != second {
			t.Fatalf("second queue ran job %d, want %d", id, second)
		}
		sctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := q2.Stop(sctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Stop past its deadline = %v", err)
		}
		in := get(t, q2, second)
		if in.State != Running || in.Attempts != 1 || in.LastError != "" {
			t.Fatalf("job cut short by Stop = %+v, want left running under its lease", in)
		}

		q3 := newQueue(t, db, clk, hub)
		q3.Register("deliver", func(context.Context, *Job) error { return nil }, Limits{})
		if err := q3.Start(ctx); err != nil {
			t.Fatal(err)
		}
		clk.Add(testLease + time.Millisecond)
		wake(q3, "deliver")
		waitState(t, q3, second, Done, 2)
	})
}

// Finish records the outcome even when the handler's context has ended: the
// commit that ends a lease makes the renewal cancel the handler's context,
// possibly while that commit's reply is still on its way.
func TestFinishOutlivesTheHandlersContext(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		createEffects(t, db)
		q := newQueue(t, db, newClock(), nil)
		finished := make(chan error, 1)
		q.Register("deliver", func(ctx context.Context, j *Job) error {
			j.cancel(ErrLeaseLost)
			err := j.Finish(ctx, nil, effect(j))
			finished <- err
			return err
		}, Limits{})
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		id := enqueue(t, q, "deliver", EnqueueOptions{})
		if err := testkit.Receive(t, "Finish", finished); err != nil {
			t.Fatalf("Finish after the handler's context ended = %v, want nil", err)
		}
		waitState(t, q, id, Done, 1)
		if n := effects(t, db, id); n != 1 {
			t.Fatalf("job committed %d effects, want 1", n)
		}
	})
}

func TestAttemptTimeLimitAndPanic(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := newClock()
		q := newQueue(t, db, clk, nil)
		q.Register("slow", func(ctx context.Context, j *Job) error {
			<-ctx.Done()
			return ctx.Err()
		}, Limits{Timeout: time.Millisecond})
		q.Register("crash", func(context.Context, *Job) error { panic("nil map") }, Limits{})
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		in := waitState(t, q, enqueue(t, q, "slow", EnqueueOptions{}), Pending, 1)
		if !strings.Contains(in.LastError, "timed out after 1ms") {
			t.Fatalf("timed-out attempt recorded as %q", in.LastError)
		}
		in = waitState(t, q, enqueue(t, q, "crash", EnqueueOptions{}), Pending, 1)
		if in.LastError != "handler panicked: nil map" {
			t.Fatalf("panicked attempt recorded as %q", in.LastError)
		}
	})
}

func TestPruneAndCounts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := newClock()
		q := newQueue(t, db, clk, nil)
		q.Register("ok", func(context.Context, *Job) error { return nil }, Limits{})
		q.Register("bad", func(context.Context, *Job) error { return Permanent(errors.New("no")) }, Limits{})
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		done := enqueue(t, q, "ok", EnqueueOptions{})
		waitState(t, q, done, Done, 1)
		dead := enqueue(t, q, "bad", EnqueueOptions{})
		waitState(t, q, dead, Dead, 1)
		later := enqueue(t, q, "ok", EnqueueOptions{RunAt: clk.Now().Add(365 * 24 * time.Hour)})

		counts, err := q.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []Count{{"bad", Dead, 1}, {"ok", Done, 1}, {"ok", Pending, 1}}
		if fmt.Sprint(counts) != fmt.Sprint(want) {
			t.Fatalf("Counts = %v, want %v", counts, want)
		}

		clk.Add(24*time.Hour + time.Millisecond)
		if err := q.prune(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Get(ctx, done); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("done job past its retention: %v, want pruned", err)
		}
		get(t, q, dead)
		get(t, q, later)
		clk.Add(30 * 24 * time.Hour)
		if err := q.prune(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Get(ctx, dead); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("dead job past its retention: %v, want pruned", err)
		}
		get(t, q, later)
	})
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	l := Limits{Backoff: time.Second, MaxBackoff: time.Minute}
	for attempt, base := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 6: 32 * time.Second, 7: time.Minute, 100: time.Minute} {
		for i := 0; i < 100; i++ {
			if d := backoff(l, attempt); d < base/2 || d > base {
				t.Fatalf("backoff(%d) = %s, want between %s and %s", attempt, d, base/2, base)
			}
		}
	}
}

// A queue built with the real clock takes a test's clock before Start
// (SetClock): a job is created at the test's time and runs once the test has
// moved its clock past the job's run_at, and Wake makes the workers look
// without waiting for the poll (an hour here). The test cannot tell Wake's
// look from the enqueue's own wake-up when that one is handled after the
// clock moved; what it proves is the clock, and that Wake does no harm.
func TestSetClockAndWake(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clk := newClock()
		q := New(db, nil, Options{Lease: testLease, PollInterval: time.Hour})
		t.Cleanup(func() { q.Stop(context.Background()) })
		q.SetClock(clk.Now)
		q.Register("later", func(context.Context, *Job) error { return nil }, Limits{})
		if err := q.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		id := enqueue(t, q, "later", EnqueueOptions{RunAt: clk.Now().Add(24 * time.Hour)})
		if in := get(t, q, id); in.State != Pending || !in.CreatedAt.Equal(clk.Now()) {
			t.Fatalf("job %+v: want pending, created at the test's clock %s", in, clk.Now())
		}
		clk.Add(24 * time.Hour)
		q.Wake()
		waitState(t, q, id, Done, 1)
	})
}
