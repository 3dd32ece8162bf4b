package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testkit"
)

func TestMigrateIsIdempotent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("second migrate: %v", err)
		}
		var n int
		if err := db.QueryRow(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n < 3 {
			t.Fatalf("schema_migrations has %d rows, want at least 3", n)
		}
	})
}

func TestInTxRollsBackOnError(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		err := db.InTx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, "INSERT INTO orgs (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)", "o1", "x", 1, 1); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO orgs (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)", "o2", "x", 1, 1)
			return err
		})
		if !store.IsUniqueViolation(err) {
			t.Fatalf("want unique violation, got %v", err)
		}
		var n int
		if err := db.QueryRow(ctx, "SELECT COUNT(*) FROM orgs").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("rolled back transaction left %d rows", n)
		}
	})
}

// Insert returns the id of the row it inserted on both stores, also when rows
// were deleted in between, and the error of an insert that fails.
func TestInsertReturnsTheNewID(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		var ids []int64
		err := db.InTx(ctx, func(tx *store.Tx) error {
			for i := 0; i < 3; i++ {
				id, err := tx.Insert(ctx, "INSERT INTO raw_sources (codec, size, data) VALUES (?, ?, ?)", "id", 0, i, []byte{byte(i)})
				if err != nil {
					return err
				}
				ids = append(ids, id)
				if i == 1 {
					if _, err := tx.Exec(ctx, "DELETE FROM raw_sources WHERE id = ?", ids[0]); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			var size int
			if err := db.QueryRow(ctx, "SELECT size FROM raw_sources WHERE id = ?", id).Scan(&size); i > 0 && (err != nil || size != i) {
				t.Errorf("insert %d returned id %d: its row has size %d (%v)", i, id, size, err)
			}
		}
		if ids[0] == ids[1] || ids[1] == ids[2] || ids[0] == ids[2] {
			t.Errorf("ids %v are not distinct", ids)
		}
		err = db.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.Insert(ctx, "INSERT INTO raw_sources (codec, size) VALUES (?, ?)", "id", 0, 1)
			return err
		})
		if err == nil {
			t.Error("an insert without its NOT NULL data column succeeded")
		}
	})
}

// IsUniqueViolation knows a unique constraint's failure by the driver's error
// code on both stores, through wrapping, and nothing else: not another
// constraint's failure, nor an error that only reads like one.
func TestIsUniqueViolation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		insert := func(id, name any) error {
			_, err := db.Exec(ctx, "INSERT INTO orgs (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)", id, name, 1, 1)
			return err
		}
		if err := insert("o1", "one"); err != nil {
			t.Fatal(err)
		}
		uniqueName, primaryKey, notNull := insert("o2", "one"), insert("o1", "two"), insert("o3", nil)
		if uniqueName == nil || primaryKey == nil || notNull == nil {
			t.Fatalf("inserts that break constraints succeeded: %v, %v, %v", uniqueName, primaryKey, notNull)
		}
		for _, c := range []struct {
			name string
			err  error
			want bool
		}{
			{"unique column", uniqueName, true},
			{"primary key", primaryKey, true},
			{"wrapped", fmt.Errorf("create org: %w", uniqueName), true},
			{"not null", notNull, false},
			{"unique column, wrapped as text", fmt.Errorf("create org: %v", uniqueName), false},
			{"text alone", errors.New("UNIQUE constraint failed: orgs.name (SQLSTATE 23505)"), false},
			{"nil", nil, false},
		} {
			if got := store.IsUniqueViolation(c.err); got != c.want {
				t.Errorf("%s: IsUniqueViolation(%v) = %v, want %v", c.name, c.err, got, c.want)
			}
		}
	})
}

func TestRebind(t *testing.T) {
	db := &store.DB{Dialect: store.Postgres}
	got := db.Rebind("SELECT a FROM t WHERE b = ? AND c = '?' AND d IN (?, ?)")
	want := "SELECT a FROM t WHERE b = $1 AND c = '?' AND d IN ($2, $3)"
	if got != want {
		t.Fatalf("Rebind = %q, want %q", got, want)
	}
}

// Every survives a panic and a failure, and tells each turn how it ended;
// the turn cut short by the end of its context is not told.
func TestEveryKeepsRunningThroughFailures(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		runs := 0
		var turns []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			db.Every(ctx, "test-job", time.Millisecond, func(context.Context) error {
				runs++
				switch runs {
				case 1:
					panic("first run panics")
				case 2:
					return errors.New("second run fails")
				case 4:
					cancel()
				}
				return nil
			}, func(ran bool, err error) { turns = append(turns, fmt.Sprintf("ran=%v err=%v", ran, err)) })
		}()
		testkit.Receive(t, "Every to stop when its context ended", done)
		if runs != 4 {
			t.Fatalf("job ran %d times, want 4 (it must survive a panic and an error)", runs)
		}
		want := []string{"ran=true err=periodic job panicked: first run panics", "ran=true err=second run fails", "ran=true err=<nil>"}
		if !slices.Equal(turns, want) {
			t.Fatalf("turns told %q, want %q", turns, want)
		}
	})
}

// On PostgreSQL a turn that finds the job held by another replica is told as
// one that did not run, and the job runs on a turn after it is let go.
func TestEveryTellsTurnsSkippedForAnotherReplica(t *testing.T) {
	db := storetest.Open(t, store.Postgres)
	ctx := context.Background()
	other, err := db.W.Conn(ctx) // the other replica's session
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, "SELECT pg_advisory_lock(hashtext($1))", "catchbox:held-job"); err != nil {
		t.Fatal(err)
	}
	type turn struct {
		Ran bool
		Err error
	}
	turns := make(chan turn)
	var runs atomic.Int32
	ectx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.Every(ectx, "held-job", time.Millisecond, func(context.Context) error { runs.Add(1); return nil },
			func(ran bool, err error) {
				select {
				case turns <- turn{ran, err}:
				case <-ectx.Done():
				}
			})
	}()
	defer func() {
		cancel()
		testkit.Receive(t, "Every to stop when its context ended", done)
	}()
	for i := range 3 {
		if got := testkit.Receive(t, fmt.Sprintf("turn %d while the job is held elsewhere", i+1), turns); got != (turn{}) {
			t.Fatalf("turn %d while the job is held elsewhere: %+v, want not run and no error", i+1, got)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("the job ran %d times while another replica held it", n)
	}
	if _, err := other.ExecContext(ctx, "SELECT pg_advisory_unlock(hashtext($1))", "catchbox:held-job"); err != nil {
		t.Fatal(err)
	}
	testkit.Await(t, "a turn that ran once the job was let go", func() (turn, bool) {
		got := testkit.Receive(t, "a turn after the job was let go", turns)
		return got, got.Ran && got.Err == nil
	})
	if runs.Load() == 0 {
		t.Fatal("a turn was told it ran, and the job did not")
	}
}

// A version's dialect file runs after its common file, on its dialect only.
func TestDialectMigrationAddsToCommon(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		var tables, trgm int
		q := "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'sms_messages_body_trgm'"
		if db.Dialect == store.Postgres {
			q = "SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'sms_messages_body_trgm' AND schemaname = current_schema()"
		}
		if err := db.QueryRow(ctx, q).Scan(&trgm); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(ctx, "SELECT COUNT(*) FROM sms_messages").Scan(&tables); err != nil {
			t.Fatalf("common part of 0005 not applied: %v", err)
		}
		if want := map[store.Dialect]int{store.SQLite: 0, store.Postgres: 1}[db.Dialect]; trgm != want {
			t.Fatalf("%s: %d body trigram indexes, want %d", db.Dialect, trgm, want)
		}
	})
}

// AfterCommit's functions run once the transaction has committed, in order,
// and never after a rollback.
func TestAfterCommit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		var ran []string
		rollback := errors.New("roll back")
		err := db.InTx(ctx, func(tx *store.Tx) error {
			tx.AfterCommit(func() { ran = append(ran, "rolled back") })
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatalf("InTx = %v", err)
		}
		for _, in := range []func(context.Context, func(*store.Tx) error) error{db.InTx, db.InTxUnsynced} {
			id := fmt.Sprint("o", len(ran))
			err := in(ctx, func(tx *store.Tx) error {
				tx.AfterCommit(func() { ran = append(ran, "first") })
				if _, err := tx.Exec(ctx, "INSERT INTO orgs (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)",
					id, "org "+id, 1, 1); err != nil {
					return err
				}
				tx.AfterCommit(func() {
					var n int
					if err := db.QueryRow(ctx, "SELECT COUNT(*) FROM orgs WHERE id = ?", id).Scan(&n); err != nil || n != 1 {
						t.Errorf("AfterCommit ran before the commit was visible: %d rows, %v", n, err)
					}
					ran = append(ran, "second")
				})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := fmt.Sprint(ran); got != "[first second first second]" {
			t.Fatalf("AfterCommit ran %s", got)
		}
	})
}
