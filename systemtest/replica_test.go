package systemtest

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// sharedSecret is the CATCHBOX_SECRET_KEY every replica of a test shares.
const sharedSecret = "systemtest-shared-secret-key-0123456789"

// reaperLock is the advisory lock key the reaper claims (store.RunExclusive
// with job "reaper").
const reaperLock = "catchbox:reaper"

// TestReplicas runs two catchbox serve processes on one PostgreSQL schema, as
// docs/operations.md describes, and checks that they act as one service: a
// wait held on one is answered by mail received on the other, a download link
// made by one works on the other, the reaper runs on one at a time, and killing
// one loses no acknowledged mail while the other keeps serving.
func TestReplicas(t *testing.T) {
	skipShort(t)
	dbURL := storetest.URL(t, store.Postgres) // skips without a PostgreSQL server
	env := func() map[string]string {
		return map[string]string{
			"CATCHBOX_DATA_DIR":        t.TempDir(),
			"CATCHBOX_DATABASE_URL":    dbURL,
			"CATCHBOX_SECRET_KEY":      sharedSecret,
			"CATCHBOX_REAPER_INTERVAL": "100ms",
			"CATCHBOX_WAIT_HOLD":       "60s",
		}
	}
	// Both start together: the migrations must run once, under their lock.
	a := spawnServer(t, "replica A", env())
	b := spawnServer(t, "replica B", env())
	a.waitReady()
	b.waitReady()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatalf("open the replicas' store: %v", err)
	}
	defer db.Close()

	t.Run("wait on B is answered by mail to A", func(t *testing.T) {
		var latencies []time.Duration
		for i := range 5 {
			m := newMessage(fmt.Sprintf("wait%d", i), false)
			latencies = append(latencies, heldWaitAnswered(t, ctx, b, a, m))
		}
		sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
		t.Logf("from the 250 on A to the answer on B: %v (reported, not asserted)", latencies)
	})

	t.Run("download link from A works on B", func(t *testing.T) {
		m := newMessage("link", true)
		sendOne(t, a.SMTP, m)
		e, err := findMessage(ctx, a.HTTP, m)
		if err != nil {
			t.Fatal(err)
		}
		links, err := attachments(ctx, a.HTTP, e.ID)
		if err != nil || len(links) != 1 {
			t.Fatalf("attachments on A: %v %v", links, err)
		}
		onB := rebase(t, links[0].DownloadURL, b.HTTP)
		data, err := download(ctx, onB)
		if err != nil {
			t.Fatalf("A's link %s on B: %v", onB, err)
		}
		if string(data) != string(m.attachmentData()) {
			t.Fatalf("A's link on B served %d bytes that differ from the %d sent", len(data), len(m.attachmentData()))
		}
	})

	t.Run("reaper runs on one replica at a time", func(t *testing.T) {
		deleted := func() int {
			n := 0
			for _, s := range []*server{a, b} {
				for _, rec := range s.logs.find("Deleted expired emails") {
					c, _ := rec["count"].(float64)
					n += int(c)
				}
			}
			return n
		}
		before := deleted()

		// While the test holds the reaper's lock, neither replica may reap.
		lock, err := db.W.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		lctx, lcancel := context.WithTimeout(ctx, time.Minute)
		_, err = lock.ExecContext(lctx, "SELECT pg_advisory_lock(hashtext($1))", reaperLock)
		lcancel()
		if err != nil {
			t.Fatalf("take the reaper's lock: %v", err)
		}
		const n = 60
		insertExpired(t, ctx, db, "held", n)
		// Each replica must be seen trying to reap while the rows are there:
		// two more turns that found the lock held, the second begun after
		// the rows were in (the first may have been under way).
		for _, s := range []*server{a, b} {
			skipped := func() float64 {
				return metric(t, ctx, s.HTTP, "catchbox_periodic_turns_total", map[string]string{"task": "reaper", "result": "skipped"})
			}
			from := skipped()
			testkit.Await(t, s.name+"'s reaper to try twice more while the lock is held", func() (string, bool) {
				now := skipped()
				return fmt.Sprintf("%v turns skipped, from %v", now, from), now >= from+2
			})
		}
		if left := countExpired(t, ctx, db, "held"); left != n {
			t.Fatalf("%d of %d expired emails deleted while the reaper's lock was held elsewhere", n-left, n)
		}
		if got := deleted(); got != before {
			t.Fatalf("a replica logged %d deletions while the reaper's lock was held elsewhere", got-before)
		}

		if _, err := lock.ExecContext(ctx, "SELECT pg_advisory_unlock(hashtext($1))", reaperLock); err != nil {
			t.Fatalf("release the reaper's lock: %v", err)
		}
		lock.Close()
		testkit.Await(t, "the expired emails deleted after the lock was released", func() (string, bool) {
			left := countExpired(t, ctx, db, "held")
			return fmt.Sprintf("%d of %d left", left, n), left == 0
		})
		// The log line follows the commit; give it a moment to appear.
		testkit.Eventually(testkit.Patience, func() bool { return deleted()-before >= n })
		if got := deleted() - before; got != n {
			t.Errorf("the replicas logged %d deletions for %d expired emails: some were deleted twice", got, n)
		}
		var left int
		if err := db.QueryRow(ctx, "SELECT COUNT(*) FROM attachments WHERE filename LIKE 'expired-held-%'").Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left != 0 {
			t.Errorf("%d attachments of deleted emails remain", left)
		}
		t.Logf("deletions logged: replica A %d, replica B %d", a.logs.count("Deleted expired emails"), b.logs.count("Deleted expired emails"))
	})

	t.Run("killing one replica loses no acknowledged mail", func(t *testing.T) {
		addrs := []string{a.SMTP, a.SMTP, a.SMTP, a.SMTP, b.SMTP, b.SMTP, b.SMTP, b.SMTP}
		l := startLoad(t, "replicas", addrs, 3000)
		if !testkit.Eventually(testkit.Patience, func() bool { return l.ackedSince(a.SMTP, time.Time{}) >= 80 }) {
			l.stop()
			t.Fatalf("the load did not reach 80 acknowledged messages on A: %s", summarize(l.results()))
		}
		a.kill()
		killedAt := time.Now()
		// B keeps taking mail while A is gone.
		if !testkit.Eventually(testkit.Patience, func() bool { return l.ackedSince(b.SMTP, killedAt) >= 100 }) {
			l.stop()
			t.Fatalf("replica B stopped acknowledging mail after A was killed: %s", summarize(l.results()))
		}
		l.stop()
		as := l.results()
		t.Logf("load over both replicas, A killed: %s", summarize(as))
		verifyAcked(t, b.HTTP, as) // B's API serves what both acknowledged
		checkIntegrity(t, dbURL)

		// Work A may have been in the middle of is picked up by B.
		insertExpired(t, ctx, db, "after-kill", 10)
		if !testkit.Eventually(testkit.Patience, func() bool { return countExpired(t, ctx, db, "after-kill") == 0 }) {
			t.Errorf("replica B did not reap after A was killed: %d of 10 expired emails left", countExpired(t, ctx, db, "after-kill"))
		}
		// And a wait on B is still answered by mail to B.
		heldWaitAnswered(t, ctx, b, b, newMessage("wait-after-kill", false))
	})
}

// heldWaitAnswered holds a wait=true search for m on waiter, checks it is held,
// sends m to sender over SMTP, and checks the wait is answered with m. It
// returns the time from the 250 to the answer (which may be negative: the
// answer can be read before the 250).
func heldWaitAnswered(t *testing.T, ctx context.Context, waiter, sender *server, m message) time.Duration {
	t.Helper()
	type answer struct {
		res searchResult
		err error
		at  time.Time
	}
	held := metric(t, ctx, waiter.HTTP, "catchbox_held_waits", nil)
	done := make(chan answer, 1)
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	go func() {
		// Within its first hold: mail that reached the waiter only through
		// the 307's retry would mean the other replica's wake-up never came.
		r, err := heldSearch(wctx, waiter.HTTP, url.Values{"subject_includes": {m.Subject}, "wait": {"true"}})
		done <- answer{r, err, time.Now()}
	}()
	// The mail is sent once the search is held (its first look found
	// nothing), so that only a wake-up can answer it.
	testkit.Await(t, "the wait for "+m.Token+" held on "+waiter.name, func() (float64, bool) {
		select {
		case a := <-done:
			t.Fatalf("the wait for %s returned before the mail was sent: %+v, %v", m.Token, a.res, a.err)
		default:
		}
		n := metric(t, ctx, waiter.HTTP, "catchbox_held_waits", nil)
		return n, n > held
	})
	sendOne(t, sender.SMTP, m)
	sent := time.Now()
	a := <-done
	if a.err != nil {
		t.Fatalf("the held wait for %s: %v", m.Token, a.err)
	}
	if a.res.TotalCount != 1 || len(a.res.Data) != 1 || a.res.Data[0].Subject != m.Subject {
		t.Fatalf("the held wait for %s answered %+v", m.Token, a.res)
	}
	return a.at.Sub(sent)
}

// rebase moves a link onto another replica's base URL.
func rebase(t *testing.T, link, base string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatalf("parse %s: %v", link, err)
	}
	bu, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", base, err)
	}
	u.Scheme, u.Host = bu.Scheme, bu.Host
	return u.String()
}

// insertExpired inserts n emails of the default namespace, each with a
// recipient and an attachment, that expired a minute ago. Their sender is
// tagged with label so they can be counted.
func insertExpired(t *testing.T, ctx context.Context, db *store.DB, label string, n int) {
	t.Helper()
	var nsID string
	if err := db.QueryRow(ctx, "SELECT id FROM namespaces WHERE name = ?", namespace).Scan(&nsID); err != nil {
		t.Fatalf("find the default namespace: %v", err)
	}
	now := time.Now().UnixMilli()
	err := db.InTx(ctx, func(tx *store.Tx) error {
		for i := range n {
			id := tenant.NewID()
			var seq int64
			if err := tx.QueryRow(ctx, `INSERT INTO emails (id, namespace_id, received_ms, expires_ms, from_addr, subject, size, client_ip, helo, mail_from, doc)
				VALUES (?, ?, ?, ?, ?, ?, 1, '127.0.0.1', 'systemtest', ?, '{}') RETURNING seq`,
				id, nsID, now-120_000, now-60_000, "reaper@systemtest.example", "Expired", "expired-"+label).Scan(&seq); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "INSERT INTO email_recipients (namespace_id, addr, email_seq) VALUES (?, ?, ?)",
				nsID, fmt.Sprintf("expired-%s-%d@%s.%s", label, i, namespace, mailDomain), seq); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO attachments (id, email_id, position, filename, content_type, size, data)
				VALUES (?, ?, 0, ?, 'text/plain', 1, ?)`, tenant.NewID(), id, fmt.Sprintf("expired-%s-%d.txt", label, i), []byte("x")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("insert expired emails: %v", err)
	}
}

// countExpired counts the emails insertExpired made with label that remain.
func countExpired(t *testing.T, ctx context.Context, db *store.DB, label string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(ctx, "SELECT COUNT(*) FROM emails WHERE mail_from = ?", "expired-"+label).Scan(&n); err != nil {
		t.Fatalf("count expired emails: %v", err)
	}
	return n
}
