package store

import (
	"context"
	"strings"
)

// The differences between SQLite and PostgreSQL that domain packages meet are
// named here by what they mean, never by the dialect, so that no package
// outside store branches on which database it runs on:
//
//   - Shared: several processes may use the store at once (PostgreSQL, the
//     store of replicas). Wake-ups, throttles and copies in memory must then
//     go through the database.
//   - ConcurrentWriters: write transactions run at once and lock the rows they
//     read to change (FOR UPDATE on PostgreSQL); SQLite has one writer, which
//     holds the whole database already, so the locks are left out.
//   - CommitsNeedSync: a commit is durable only once Sync returns (SQLite's
//     writer); on PostgreSQL it is durable when it returns.
//   - Unindexed and Contains: the hints and substring conditions that SQLite's
//     planner needs and PostgreSQL's trigram indexes serve.

// Shared reports whether several processes may use the store at once: on
// PostgreSQL, replicas share it, and what one of them keeps in memory (a
// wake-up, a throttle's bucket, a copy of a namespace) is not seen by the
// others. A SQLite file is owned by one process.
func (db *DB) Shared() bool { return db.Dialect == Postgres }

// ConcurrentWriters reports whether write transactions run at once (PostgreSQL),
// so that one that reads rows to change them must lock them first. SQLite runs
// one writer at a time.
func (db *DB) ConcurrentWriters() bool { return db.Dialect == Postgres }

// CommitsNeedSync reports whether a committed write transaction is durable only
// once Sync returns (SQLite's writer, see walSyncer), rather than when its
// commit returns (PostgreSQL).
func (db *DB) CommitsNeedSync() bool { return db.wal != nil }

// ConcurrentWriters reports whether other write transactions run beside this
// one (DB.ConcurrentWriters).
func (t *Tx) ConcurrentWriters() bool { return t.db.ConcurrentWriters() }

// ForUpdate is the locking clause a SELECT that reads rows in order to change
// them ends with: " FOR UPDATE" where writers run at once, "" on SQLite, whose
// single writer holds the whole database.
func (t *Tx) ForUpdate() string { return t.db.forUpdate() }

func (db *DB) forUpdate() string {
	if db.ConcurrentWriters() {
		return " FOR UPDATE"
	}
	return ""
}

// ForNoKeyUpdate is the locking clause of a SELECT that reads a row in order
// to change columns other than its key: " FOR NO KEY UPDATE" where writers run
// at once, "" on SQLite. Unlike ForUpdate it does not wait for the ForKeyShare
// locks that inserting rows which refer to it takes (a namespace's row while
// its emails are stored).
func (t *Tx) ForNoKeyUpdate() string {
	if t.ConcurrentWriters() {
		return " FOR NO KEY UPDATE"
	}
	return ""
}

// ForKeyShare is the locking clause of a SELECT that keeps a row from being
// deleted (or its key changed) until the transaction ends, while others may
// still read it and change its other columns: " FOR KEY SHARE" where writers
// run at once, "" on SQLite.
func (t *Tx) ForKeyShare() string {
	if t.ConcurrentWriters() {
		return " FOR KEY SHARE"
	}
	return ""
}

// ForUpdateSkipLocked is the locking clause of a SELECT that claims work: the
// rows it picks are locked and those another transaction holds are skipped
// (" FOR UPDATE SKIP LOCKED"); "" on SQLite.
func (db *DB) ForUpdateSkipLocked() string {
	if db.ConcurrentWriters() {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}

// LockRow locks the row that the SELECT q returns until the transaction ends,
// where writers run at once; on SQLite it does nothing. It returns
// sql.ErrNoRows (wrapped by nothing) when q finds no row. Taking a parent's row
// first serialises the changes of its children: two requests of one
// organisation, or an event and a cancel of one email.
func (t *Tx) LockRow(ctx context.Context, q string, args ...any) error {
	if !t.ConcurrentWriters() {
		return nil
	}
	var v any
	return t.QueryRow(ctx, q+" FOR UPDATE", args...).Scan(&v)
}

// LockRows locks every row that the SELECT q returns, in q's order, until the
// transaction ends, where writers run at once; on SQLite it does nothing. No
// row is no error. Rows locked in one order by every transaction that takes
// several of them cannot deadlock: q should end with an ORDER BY.
func (t *Tx) LockRows(ctx context.Context, q string, args ...any) error {
	if !t.ConcurrentWriters() {
		return nil
	}
	_, err := t.Exec(ctx, q+" FOR UPDATE", args...)
	return err
}

// InTxNotDurable runs fn in a write transaction whose loss in a crash of the
// store costs nothing but time (a job's lease): it is not waited for on
// either store, on SQLite through InTxUnsynced and on PostgreSQL with
// synchronous_commit off for it. When it returns nil the transaction is
// committed and visible.
func (db *DB) InTxNotDurable(ctx context.Context, fn func(*Tx) error) error {
	return db.InTxUnsynced(ctx, func(tx *Tx) error {
		if db.Dialect == Postgres {
			if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
				return err
			}
		}
		return fn(tx)
	})
}

// Unindexed marks expr so that SQLite's planner does not use an index for it
// (a unary +), where a query knows a better way to its rows than the
// statistics SQLite lacks; PostgreSQL plans from its own statistics and gets
// expr unchanged.
func (db *DB) Unindexed(expr string) string {
	if db.Dialect == SQLite {
		return "+" + expr
	}
	return expr
}

// Unindexed is DB.Unindexed for the transaction's store.
func (t *Tx) Unindexed(expr string) string { return t.db.Unindexed(expr) }

// Contains is the condition that the text of column, folded (Fold), contains
// needle folded, and its arguments. On PostgreSQL it is a LIKE over indexed, an
// expression equal to column's fold that a pg_trgm trigram index serves (for
// example "lower(e.subject)", or the column itself when it is stored folded);
// on SQLite, instr over fold(column) row by row (the registered fold function).
func (db *DB) Contains(column, indexed, needle string) (string, []any) {
	folded := Fold(needle)
	if db.Dialect == Postgres {
		return indexed + ` LIKE ? ESCAPE '\'`, []any{"%" + EscapeLike(folded) + "%"}
	}
	return "instr(fold(" + column + "), ?) > 0", []any{folded}
}

// Placeholders is the parenthesised list of n '?' placeholders of an IN
// condition: "(?, ?, ?)". Queries rewrite them for the dialect as any other.
func Placeholders(n int) string {
	if n <= 0 {
		return "()"
	}
	return "(" + strings.Repeat("?, ", n-1) + "?)"
}
