package inbox

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// Two PostgreSQL writers storing into a full namespace at the same time: the
// second must count the first's email once it commits, so the namespace never
// keeps more than its quota. (SQLite has one writer: the race cannot happen.)
func TestQuotaLockSerializesWriters(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, org := concurrentWritersOrg(t, db)
		ns, err := svc.CreateNamespace(ctx, org.ID, "quota", tenant.Settings{QuotaLimit: ptrInt(2)})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		newRow := func(i int) *row {
			raw := []byte(fmt.Sprintf("From: a@b.c\r\nTo: x@quota.localhost\r\nSubject: m%d\r\n\r\nbody\r\n", i))
			targets := []Target{{Namespace: ns, Recipients: []string{"x@quota.localhost"}}}
			p := parseMessage(raw)
			r := buildRow(p, raw, Envelope{}, targets[0], start.Add(time.Duration(i)*time.Second))
			r.bytes, _ = newMessageBytes(raw, p, targets)
			return r
		}
		store1 := func(tx *store.Tx, r *row) error {
			blobs := map[string]*blob{}
			for _, b := range r.blobs() {
				blobs[b.hash] = b
			}
			if err := putBlobs(ctx, tx, blobs); err != nil {
				return err
			}
			_, err := insertRow(ctx, tx, r, map[*messageBytes]int64{})
			return err
		}
		nowMs := start.Add(time.Minute).UnixMilli()
		for i := 1; i <= 2; i++ {
			if err := db.InTx(ctx, func(tx *store.Tx) error { return store1(tx, newRow(i)) }); err != nil {
				t.Fatal(err)
			}
		}
		firstChecked, secondInserted := make(chan struct{}), make(chan struct{})
		done := make(chan error, 2)
		go func() {
			done <- db.InTx(ctx, func(tx *store.Tx) error {
				if err := store1(tx, newRow(3)); err != nil {
					return err
				}
				if err := enforceQuotas(ctx, tx, []string{ns.ID}, nowMs); err != nil {
					return err
				}
				close(firstChecked)
				select {
				case <-secondInserted:
				case <-time.After(testkit.Patience):
					return fmt.Errorf("the second writer never inserted")
				}
				return nil
			})
		}()
		go func() {
			<-firstChecked
			done <- db.InTx(ctx, func(tx *store.Tx) error {
				if err := store1(tx, newRow(4)); err != nil {
					return err
				}
				close(secondInserted)
				return enforceQuotas(ctx, tx, []string{ns.ID}, nowMs)
			})
		}()
		for i := 0; i < 2; i++ {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		var n int
		if err := db.QueryRow(ctx, "SELECT COUNT(*) FROM emails WHERE namespace_id = ?", ns.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Fatalf("%d emails after two concurrent writers, want the quota of 2", n)
		}
		var subjects []string
		rows, _ := db.Query(ctx, "SELECT subject FROM emails ORDER BY received_ms")
		for rows.Next() {
			var s string
			rows.Scan(&s)
			subjects = append(subjects, s)
		}
		rows.Close()
		if fmt.Sprint(subjects) != "[m3 m4]" {
			t.Errorf("kept %v, want the newest two", subjects)
		}
	})
}

// concurrentWritersOrg skips the test on SQLite, whose single writer cannot
// race with itself, and otherwise returns a tenant service and a fresh
// organisation.
func concurrentWritersOrg(t *testing.T, db *store.DB) (*tenant.Service, tenant.Org) {
	t.Helper()
	if db.Dialect != store.Postgres {
		t.Skip("SQLite has a single writer")
	}
	svc := tenant.NewService(db, secret.New([]byte("test-secret-key-0123456789")), 24*time.Hour)
	org, err := svc.CreateOrg(context.Background(), "org", 100, true)
	if err != nil {
		t.Fatal(err)
	}
	return svc, org
}

// A writer storing a message whose attachment is already stored, while the
// last email referring to it is deleted: the blob must survive with the new
// reference. (SQLite has one writer: the race cannot happen.)
func TestBlobSurvivesConcurrentDelete(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, org := concurrentWritersOrg(t, db)
		noRaw := false
		ns, err := svc.CreateNamespace(ctx, org.ID, "blobs", tenant.Settings{CaptureRawEmail: &noRaw})
		if err != nil {
			t.Fatal(err)
		}
		raw := []byte("From: a@b.c\r\nTo: x@blobs.localhost\r\nSubject: same bytes\r\nMIME-Version: 1.0\r\n" +
			"Content-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\nhello\r\n" +
			"--B\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=a.bin\r\n\r\n" +
			fmt.Sprint(time.Now().UnixNano()) + "\r\n--B--\r\n")
		targets := []Target{{Namespace: ns, Recipients: []string{"x@blobs.localhost"}}}
		newRow := func() *row {
			p := parseMessage(raw)
			r := buildRow(p, raw, Envelope{}, targets[0], time.Now())
			r.bytes, _ = newMessageBytes(raw, p, targets)
			return r
		}
		put := func(tx *store.Tx, r *row) error {
			blobs := map[string]*blob{}
			for _, b := range r.blobs() {
				blobs[b.hash] = b
			}
			if len(blobs) != 1 {
				return fmt.Errorf("%d blobs, want the attachment's", len(blobs))
			}
			if err := putBlobs(ctx, tx, blobs); err != nil {
				return err
			}
			_, err := insertRow(ctx, tx, r, map[*messageBytes]int64{})
			return err
		}
		old := newRow()
		if err := db.InTx(ctx, func(tx *store.Tx) error { return put(tx, old) }); err != nil {
			t.Fatal(err)
		}
		var oldSeq int64
		db.QueryRow(ctx, "SELECT seq FROM emails WHERE id = ?", old.email.ID).Scan(&oldSeq)

		runInto(t, db,
			func(tx *store.Tx) error { return put(tx, newRow()) },
			func(tx *store.Tx) error { return deleteEmails(ctx, tx, []any{oldSeq}, []any{old.email.ID}) })
		var n int
		db.QueryRow(ctx, `SELECT COUNT(*) FROM attachments a JOIN blobs b ON b.hash = a.blob_hash`).Scan(&n)
		if n != 1 {
			t.Fatalf("%d attachments with their blob, want 1: the new email's attachment was deleted under it", n)
		}
	})
}

// One delivery to two namespaces shares one raw source. Two writers deleting
// the two emails at the same time must not each keep the source for the other:
// after both, it is gone. (SQLite has one writer: the race cannot happen.)
func TestSharedRawSourceDeletedByConcurrentDeletes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, org := concurrentWritersOrg(t, db)
		var targets []Target
		for _, name := range []string{"one", "two"} {
			ns, err := svc.CreateNamespace(ctx, org.ID, name, tenant.Settings{})
			if err != nil {
				t.Fatal(err)
			}
			targets = append(targets, Target{Namespace: ns, Recipients: []string{"x@" + name + ".localhost"}})
		}
		raw := []byte("From: a@b.c\r\nTo: x@one.localhost, x@two.localhost\r\nSubject: shared\r\n\r\nbody\r\n")
		p := parseMessage(raw)
		mb, err := newMessageBytes(raw, p, targets)
		if err != nil {
			t.Fatal(err)
		}
		var rows []*row
		err = db.InTx(ctx, func(tx *store.Tx) error {
			rawIDs := map[*messageBytes]int64{}
			for _, tg := range targets {
				r := buildRow(p, raw, Envelope{}, tg, time.Now())
				r.bytes = mb
				if r.doc, err = encodeDoc(r.email); err != nil {
					return err
				}
				if _, err := insertRow(ctx, tx, r, rawIDs); err != nil {
					return err
				}
				rows = append(rows, r)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, db, "SELECT COUNT(*) FROM raw_sources"); n != 1 {
			t.Fatalf("%d raw sources for one delivery, want 1", n)
		}
		seqOf := func(id string) int64 {
			var seq int64
			if err := db.QueryRow(ctx, "SELECT seq FROM emails WHERE id = ?", id).Scan(&seq); err != nil {
				t.Fatal(err)
			}
			return seq
		}
		first, second := rows[0].email.ID, rows[1].email.ID
		firstSeq, secondSeq := seqOf(first), seqOf(second)
		runInto(t, db,
			func(tx *store.Tx) error { return deleteEmails(ctx, tx, []any{firstSeq}, []any{first}) },
			func(tx *store.Tx) error { return deleteEmails(ctx, tx, []any{secondSeq}, []any{second}) })
		if n := countRows(t, db, "SELECT COUNT(*) FROM raw_sources"); n != 0 {
			t.Fatalf("%d raw sources left after both emails were deleted, want 0", n)
		}
	})
}

func countRows(t *testing.T, db *store.DB, q string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// runInto runs first in a transaction and, once first's work is done, second in
// another, while the first transaction is held open: second runs into first's
// uncommitted work. The first commits only once PostgreSQL reports the second
// blocked by it (pg_blocking_pids), which proves the second reached the rows
// the first holds; a second that finishes instead fails the test (its locks
// did not make it wait), as does either failing. Tests on PostgreSQL only
// (concurrentWritersOrg).
func runInto(t *testing.T, db *store.DB, first, second func(*store.Tx) error) {
	t.Helper()
	ctx := context.Background()
	worked, release := make(chan struct{}), make(chan struct{})
	firstDone, secondDone := make(chan error, 1), make(chan error, 1)
	go func() {
		firstDone <- db.InTx(ctx, func(tx *store.Tx) error {
			if err := first(tx); err != nil {
				return err
			}
			close(worked)
			<-release
			return nil
		})
	}()
	select {
	case <-worked:
	case err := <-firstDone:
		t.Fatal(err)
	}
	var once sync.Once
	commit := func() { once.Do(func() { close(release) }) }
	defer commit() // a failure below lets the first transaction end too
	secondPID := make(chan int, 1)
	go func() {
		secondDone <- db.InTx(ctx, func(tx *store.Tx) error {
			var pid int
			if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				return err
			}
			secondPID <- pid
			return second(tx)
		})
	}()
	pid := testkit.Receive(t, "the second transaction to begin", secondPID)
	testkit.WaitFor(t, "the second transaction blocked by the first", func() bool {
		select {
		case err := <-secondDone:
			t.Fatalf("the second transaction finished before the first committed: %v", err)
		default:
		}
		var blockers int
		if err := db.QueryRow(ctx, "SELECT cardinality(pg_blocking_pids(?))", pid).Scan(&blockers); err != nil {
			t.Fatal(err)
		}
		return blockers > 0
	})
	commit()
	if err := testkit.Receive(t, "the first transaction's commit", firstDone); err != nil {
		t.Fatal(err)
	}
	if err := testkit.Receive(t, "the second transaction's end", secondDone); err != nil {
		t.Fatal(err)
	}
}

func ptrInt(v int) *int { return &v }
