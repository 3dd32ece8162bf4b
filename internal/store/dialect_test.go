package store_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

func insertOrgs(t *testing.T, db *store.DB, names ...string) {
	t.Helper()
	ctx := context.Background()
	err := db.InTx(ctx, func(tx *store.Tx) error {
		for i, n := range names {
			if _, err := tx.Exec(ctx, "INSERT INTO orgs (id, name, created_at, updated_at) VALUES (?, ?, 1, 1)", "o"+string(rune('a'+i)), n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func orgNames(t *testing.T, db *store.DB, where string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), "SELECT name FROM orgs WHERE "+where+" ORDER BY name", args...)
	if err != nil {
		t.Fatalf("query %q: %v", where, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The helpers that stand for the dialects' differences give the same answers
// on both stores.
func TestDialectHelpersAnswerAlike(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		insertOrgs(t, db, "Alpha", "beta", "GAMMA", "50%off", "50 off")
		if got := orgNames(t, db, "id IN "+store.Placeholders(3), "oa", "oc", "ox"); !slices.Equal(got, []string{"Alpha", "GAMMA"}) {
			t.Errorf("IN %s: %v", store.Placeholders(3), got)
		}
		for needle, want := range map[string][]string{
			"amm": {"GAMMA"}, "AL": {"Alpha"}, "50%": {"50%off"}, "0 o": {"50 off"}, "_": nil,
		} {
			cond, args := db.Contains("name", "lower(name)", needle)
			if got := orgNames(t, db, cond, args...); !slices.Equal(got, want) {
				t.Errorf("Contains %q: %v, want %v", needle, got, want)
			}
		}
		if got := orgNames(t, db, db.Unindexed("id")+" = ?", "ob"); !slices.Equal(got, []string{"beta"}) {
			t.Errorf("Unindexed: %v", got)
		}
		ctx := context.Background()
		err := db.InTxNotDurable(ctx, func(tx *store.Tx) error {
			var name string
			if err := tx.QueryRow(ctx, "SELECT name FROM orgs WHERE id = ?"+tx.ForUpdate(), "oa").Scan(&name); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "UPDATE orgs SET name = ? WHERE id = ?", name+"!", "oa")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := orgNames(t, db, "id = ?", "oa"); !slices.Equal(got, []string{"Alpha!"}) {
			t.Errorf("after InTxNotDurable: %v", got)
		}
		if store.Placeholders(1) != "(?)" {
			t.Errorf("Placeholders(1) = %q", store.Placeholders(1))
		}
	})
}

// LockRow holds the row against other writers until the transaction ends
// where writers run at once, and reports a missing row there; SQLite's one
// writer needs no lock.
func TestLockRow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		insertOrgs(t, db, "one")
		ctx := context.Background()
		if !db.ConcurrentWriters() {
			err := db.InTx(ctx, func(tx *store.Tx) error { return tx.LockRow(ctx, "SELECT id FROM orgs WHERE id = ?", "none") })
			if err != nil {
				t.Fatalf("LockRow on SQLite: %v", err)
			}
			return
		}
		err := db.InTx(ctx, func(tx *store.Tx) error { return tx.LockRow(ctx, "SELECT id FROM orgs WHERE id = ?", "none") })
		if !errors.Is(err, sql.ErrNoRows) {
			t.Fatalf("LockRow of no row: %v, want sql.ErrNoRows", err)
		}
		err = db.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.LockRow(ctx, "SELECT id FROM orgs WHERE id = ?", "oa"); err != nil {
				return err
			}
			// Another transaction cannot take the row while this one holds it.
			wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			other := db.InTx(wctx, func(tx *store.Tx) error { return tx.LockRow(wctx, "SELECT id FROM orgs WHERE id = ?", "oa") })
			if other == nil {
				t.Error("a second transaction locked the row that the first holds")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// Once the first has ended, the row is free.
		if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.LockRow(ctx, "SELECT id FROM orgs WHERE id = ?", "oa") }); err != nil {
			t.Fatalf("LockRow after the holder ended: %v", err)
		}
	})
}

// LockRows holds every row its query returns against other writers until the
// transaction ends, where writers run at once; no row is no error. SQLite's
// one writer needs no lock.
func TestLockRows(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		insertOrgs(t, db, "one", "two", "three")
		ctx := context.Background()
		const q = "SELECT id FROM orgs WHERE id IN (?, ?) ORDER BY id"
		if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.LockRows(ctx, q, "none", "nothing") }); err != nil {
			t.Fatalf("LockRows of no row: %v", err)
		}
		err := db.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.LockRows(ctx, q, "oa", "ob"); err != nil {
				return err
			}
			if !db.ConcurrentWriters() {
				return nil // a second writer would wait for this one
			}
			// Another transaction can take neither row while this one holds
			// them, and can take the row it did not lock.
			for _, id := range []string{"oa", "ob"} {
				if lockWithin(ctx, db, 300*time.Millisecond, "SELECT id FROM orgs WHERE id = ?", id) == nil {
					t.Errorf("a second transaction locked row %s that LockRows holds", id)
				}
			}
			if err := lockWithin(ctx, db, time.Minute, "SELECT id FROM orgs WHERE id = ?", "oc"); err != nil {
				t.Errorf("a row LockRows did not take: %v", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.LockRows(ctx, q, "oa", "ob") }); err != nil {
			t.Fatalf("LockRows after the holder ended: %v", err)
		}
	})
}

// lockWithin locks the row q returns in a transaction of its own, given d to
// do it, and returns what that transaction returned.
func lockWithin(ctx context.Context, db *store.DB, d time.Duration, q string, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return db.InTx(ctx, func(tx *store.Tx) error { return tx.LockRow(ctx, q, args...) })
}

// A row held ForKeyShare (as a namespace's row is while its emails are
// stored) can still be taken ForNoKeyUpdate by another writer, and not
// ForUpdate; both clauses are nothing on SQLite, where the queries run as
// they are.
func TestKeyShareAndNoKeyUpdate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		insertOrgs(t, db, "one")
		ctx := context.Background()
		read := func(ctx context.Context, tx *store.Tx, clause string) error {
			var name string
			return tx.QueryRow(ctx, "SELECT name FROM orgs WHERE id = ?"+clause, "oa").Scan(&name)
		}
		err := db.InTx(ctx, func(tx *store.Tx) error {
			if err := read(ctx, tx, tx.ForKeyShare()); err != nil {
				return err
			}
			if !db.ConcurrentWriters() {
				return read(ctx, tx, tx.ForNoKeyUpdate())
			}
			other := func(d time.Duration, clause func(*store.Tx) string) error {
				ctx, cancel := context.WithTimeout(ctx, d)
				defer cancel()
				return db.InTx(ctx, func(tx *store.Tx) error { return read(ctx, tx, clause(tx)) })
			}
			if err := other(time.Minute, (*store.Tx).ForNoKeyUpdate); err != nil {
				t.Errorf("ForNoKeyUpdate of a row held ForKeyShare elsewhere: %v", err)
			}
			if other(300*time.Millisecond, (*store.Tx).ForUpdate) == nil {
				t.Error("ForUpdate took a row held ForKeyShare elsewhere")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// ExecBatches repeats a bounded delete until a run touches fewer rows than
// the batch, and counts every row; ExecCount counts one statement's.
func TestExecBatches(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		insertOrgs(t, db, "a1", "a2", "a3", "a4", "a5", "b1", "b2")
		n, err := db.ExecBatches(ctx, 2, "DELETE FROM orgs WHERE id IN (SELECT id FROM orgs WHERE name LIKE ? LIMIT ?)", "a%")
		if err != nil || n != 5 {
			t.Fatalf("ExecBatches deleted %d (%v), want 5", n, err)
		}
		if got := orgNames(t, db, "1 = 1"); !slices.Equal(got, []string{"b1", "b2"}) {
			t.Fatalf("left %v, want b1 b2", got)
		}
		if n, err := db.ExecCount(ctx, "UPDATE orgs SET updated_at = 2 WHERE name = ?", "b1"); err != nil || n != 1 {
			t.Fatalf("ExecCount changed %d (%v), want 1", n, err)
		}
	})
}
