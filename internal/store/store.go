// Package store opens the database (SQLite in the data directory, or PostgreSQL),
// runs the append-only migrations, and hides the few dialect differences behind one
// small API so that every domain package writes its SQL once: row locks
// (Tx.ForUpdate, Tx.LockRow), IN lists (Placeholders), substring conditions and
// planner hints, and what the store is (Shared, ConcurrentWriters), each named by
// what it means (dialect.go). No package outside store branches on the dialect;
// migrations may have a file per dialect.
//
// Queries use '?' placeholders; on PostgreSQL they are rewritten to $1, $2, ...
// All times are stored as BIGINT Unix milliseconds, so comparisons are identical on
// both stores.
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"modernc.org/sqlite"               // registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"
)

// Dialect names the SQL flavour of the open store.
type Dialect int

const (
	SQLite Dialect = iota + 1
	Postgres
)

func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	}
	return "unknown"
}

// ErrNotFound is returned by lookups that find no row.
var ErrNotFound = errors.New("not found")

// DB is an open store. Writes go through W; reads through R. On SQLite W holds a
// single connection (SQLite has one writer at a time, and queueing in Go is cheaper
// than busy-waiting in SQLite) and R a pool of read-only connections over WAL. On
// PostgreSQL both are the same pool.
type DB struct {
	Dialect Dialect
	W       *sql.DB
	R       *sql.DB
	// URL is the connection string the store was opened with (for LISTEN/NOTIFY).
	URL string

	rebindCache sync.Map // query text -> rebound text (PostgreSQL)

	stop chan struct{} // closes background maintenance
	wg   sync.WaitGroup

	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt // SQLite writer statements, prepared once

	wal        *walSyncer  // SQLite: makes the writer's commits durable
	restartWAL atomic.Bool // SQLite: maintainWAL asks the writer to restart the WAL
}

// maxCachedStmts bounds the statement cache; queries built with a variable
// number of placeholders beyond it are prepared per use.
const maxCachedStmts = 128

// writerStmt returns a prepared statement on the SQLite writer for q, or nil when
// none is ready yet. The writer pool has one connection, which the calling
// transaction holds, so a statement seen for the first time is prepared in the
// background once that connection is free, and used from the next transaction
// on. PostgreSQL needs none of this: pgx caches prepared statements on each
// connection itself.
func (db *DB) writerStmt(q string) *sql.Stmt {
	if db.Dialect != SQLite {
		return nil
	}
	db.stmtMu.Lock()
	defer db.stmtMu.Unlock()
	if st, ok := db.stmts[q]; ok {
		return st // nil while being prepared
	}
	if len(db.stmts) >= maxCachedStmts || db.stop == nil {
		return nil
	}
	if db.stmts == nil {
		db.stmts = map[string]*sql.Stmt{}
	}
	db.stmts[q] = nil
	db.wg.Add(1)
	go func() {
		defer db.wg.Done()
		st, err := db.W.Prepare(q)
		db.stmtMu.Lock()
		defer db.stmtMu.Unlock()
		if err != nil || db.stmts == nil {
			if st != nil {
				st.Close()
			}
			return // a failing query stays uncached; its Exec reports the error
		}
		db.stmts[q] = st
	}()
	return nil
}

// Open connects to the store named by rawURL: "sqlite:///path/file.db" (or a bare
// path) or "postgres://...". SQLite's parent directory is created when missing.
func Open(ctx context.Context, rawURL string) (*DB, error) {
	return OpenWith(ctx, rawURL, Options{})
}

// OpenWith is Open with the SQLite memory settings of opts.
func OpenWith(ctx context.Context, rawURL string, opts Options) (*DB, error) {
	switch {
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		return openPostgres(ctx, rawURL)
	case strings.HasPrefix(rawURL, "sqlite://"):
		return openSQLite(ctx, strings.TrimPrefix(rawURL, "sqlite://"), opts)
	case strings.Contains(rawURL, "://"):
		return nil, fmt.Errorf("database URL scheme not supported (use sqlite:// or postgres://)")
	default:
		return openSQLite(ctx, rawURL, opts)
	}
}

// busyTimeoutMs is how long a SQLite connection waits for a lock held by
// another before it reports SQLITE_BUSY.
const busyTimeoutMs = 10000

func openSQLite(ctx context.Context, path string, opts Options) (*DB, error) {
	if path == "" {
		return nil, fmt.Errorf("sqlite URL has no path")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create data directory: %w", err)
		}
	}
	if err := secureFiles(path); err != nil {
		return nil, err
	}
	// synchronous(FULL) on every connection but the writer: a checkpoint syncs
	// the WAL before it copies frames into the database file. The writer runs
	// with synchronous(OFF) and its commits are made durable by walSyncer, one
	// fsync for every transaction committed meanwhile, outside the writer.
	pragmas := "_pragma=busy_timeout(" + strconv.Itoa(busyTimeoutMs) + ")&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)"
	// The writer never checkpoints by itself (wal_autocheckpoint(0)): done by
	// the committing connection, checkpoints would stall ingest, and with
	// synchronous(OFF) they would not be durable; maintainWAL runs them. A WAL
	// that outgrew its working size before a restart could happen is cut back
	// to it by the first commit after the restart (journal_size_limit).
	writerPragmas := "_pragma=busy_timeout(" + strconv.Itoa(busyTimeoutMs) + ")&_pragma=foreign_keys(1)&_pragma=synchronous(OFF)&_pragma=wal_autocheckpoint(0)" +
		"&_pragma=journal_size_limit(" + strconv.Itoa(walPreallocBytes) + ")"
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + writerPragmas + "&_pragma=journal_mode(WAL)&_txlock=immediate"
	w, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	// A read transaction opens (and on a new database creates) the WAL file.
	var n int
	if err := w.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if err := secureFiles(path); err != nil {
		w.Close()
		return nil, err
	}
	if err := preallocateWAL(path + "-wal"); err != nil {
		w.Close()
		return nil, err
	}
	wal, err := newWALSyncer(path + "-wal")
	if err != nil {
		w.Close()
		return nil, err
	}
	mmap, cache := opts.readerMmap(), opts.readerCacheKiB()
	r, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+pragmas+
		"&_pragma=query_only(1)&_pragma=mmap_size("+strconv.FormatInt(mmap, 10)+")&_pragma=cache_size(-"+strconv.FormatInt(cache, 10)+")")
	if err != nil {
		w.Close()
		wal.Close()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	r.SetMaxOpenConns(Readers)
	r.SetMaxIdleConns(Readers)
	r.SetConnMaxIdleTime(5 * time.Minute)
	m, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+pragmas)
	if err != nil {
		w.Close()
		r.Close()
		wal.Close()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	m.SetMaxOpenConns(1)
	db := &DB{Dialect: SQLite, W: w, R: r, URL: "sqlite://" + path, stop: make(chan struct{}), wal: wal}
	db.wg.Add(1)
	go db.maintainWAL(m, path+"-shm", db.stop)
	return db, nil
}

func openPostgres(ctx context.Context, rawURL string) (*DB, error) {
	db, err := sql.Open("pgx", rawURL)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	db.SetMaxOpenConns(20)
	db.SetMaxIdleConns(20)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	return &DB{Dialect: Postgres, W: db, R: db, URL: rawURL}, nil
}

// Close stops background maintenance and closes both pools.
func (db *DB) Close() error {
	db.stmtMu.Lock()
	stop := db.stop
	db.stop = nil // no new background prepares
	db.stmtMu.Unlock()
	if stop != nil {
		close(stop)
		db.wg.Wait()
	}
	db.stmtMu.Lock()
	for _, st := range db.stmts {
		if st != nil {
			st.Close()
		}
	}
	db.stmts = nil
	db.stmtMu.Unlock()
	err := db.W.Close()
	if db.wal != nil {
		db.wal.Close()
	}
	if db.R != db.W {
		if rerr := db.R.Close(); err == nil {
			err = rerr
		}
	}
	return err
}

// Rebind rewrites '?' placeholders for the store's dialect. A '?' inside a quoted
// string literal is left alone.
func (db *DB) Rebind(q string) string {
	if db.Dialect != Postgres {
		return q
	}
	if v, ok := db.rebindCache.Load(q); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	inQuote := false
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c == '\'' {
			inQuote = !inQuote
		}
		if c == '?' && !inQuote {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteByte(c)
	}
	out := b.String()
	db.rebindCache.Store(q, out)
	return out
}

// Exec runs a write outside a transaction; it is durable when Exec returns.
func (db *DB) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	res, err := db.W.ExecContext(ctx, db.Rebind(q), args...)
	if err != nil {
		return nil, err
	}
	if err := db.Sync(); err != nil {
		return nil, err
	}
	return res, nil
}

// ExecCount runs a write outside a transaction, as Exec, and returns how many
// rows it changed.
func (db *DB) ExecCount(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := db.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// ExecBatches runs q, a write whose last parameter bounds the rows it touches
// (its LIMIT), with args and then batch, again and again until a run changes
// fewer than batch rows, and returns how many it changed in all. Each run is
// a statement of its own, so a large clean-up holds the SQLite writer briefly.
func (db *DB) ExecBatches(ctx context.Context, batch int, q string, args ...any) (int64, error) {
	args = append(args[:len(args):len(args)], batch)
	var total int64
	for {
		n, err := db.ExecCount(ctx, q, args...)
		total += n
		if err != nil || n < int64(batch) {
			return total, err
		}
	}
}

// Sync returns when every transaction committed before the call is durable. On
// SQLite the writer commits without an fsync and Sync does it, shared with every
// concurrent caller (see walSyncer); on PostgreSQL a commit is durable already.
func (db *DB) Sync() error {
	if db.wal == nil {
		return nil
	}
	return db.wal.Sync()
}

// StartWriteback starts writing the commits made so far towards the disk without
// waiting (SQLite; nothing on PostgreSQL), so that the Sync that makes them
// durable has less left to do. The ingester calls it right after a commit and
// inserts the next messages before it calls Sync.
func (db *DB) StartWriteback() {
	if db.wal != nil {
		db.wal.StartWriteback()
	}
}

// Query runs a read.
func (db *DB) Query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return db.R.QueryContext(ctx, db.Rebind(q), args...)
}

// QueryRow runs a read expected to return at most one row.
func (db *DB) QueryRow(ctx context.Context, q string, args ...any) *sql.Row {
	return db.R.QueryRowContext(ctx, db.Rebind(q), args...)
}

// Tx is a transaction with the store's placeholder rewriting: a write
// transaction (InTx), or with read set a read-only one (InReadTx).
type Tx struct {
	db    *DB
	tx    *sql.Tx
	read  bool     // on the read pool: the writer's prepared statements do not apply
	after []func() // AfterCommit's functions
}

// AfterCommit runs fn once the transaction has committed: after InTx's Sync
// (the commit is durable), right after InTxUnsynced's commit; never when it
// rolls back. Wake-ups for what the transaction wrote belong here: a waiter
// woken before the commit would look, find nothing, and sleep on.
func (t *Tx) AfterCommit(fn func()) { t.after = append(t.after, fn) }

// stmt returns the writer's prepared statement for q, or nil.
func (t *Tx) stmt(q string) *sql.Stmt {
	if t.read {
		return nil
	}
	return t.db.writerStmt(q)
}

// Exec runs a statement in the transaction.
func (t *Tx) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := t.stmt(q); st != nil {
		return t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, t.db.Rebind(q), args...)
}

// Query runs a query in the transaction.
func (t *Tx) Query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(q); st != nil {
		return t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, t.db.Rebind(q), args...)
}

// Insert runs an INSERT of one row and returns its id, the table's integer
// primary key idColumn: on PostgreSQL through RETURNING, on SQLite as the last
// inserted rowid, for which idColumn must be the table's INTEGER PRIMARY KEY.
// On SQLite this saves the result row RETURNING would make: database/sql reads
// it through a Rows, which watches ctx with a goroutine of its own, once for
// every message ingest stores (docs/benchmarks.md, "Ingest after issue 20").
func (t *Tx) Insert(ctx context.Context, q, idColumn string, args ...any) (int64, error) {
	var id int64
	if t.db.Dialect != SQLite {
		err := t.QueryRow(ctx, q+" RETURNING "+idColumn, args...).Scan(&id)
		return id, err
	}
	res, err := t.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// QueryRow runs a single-row query in the transaction.
func (t *Tx) QueryRow(ctx context.Context, q string, args ...any) *sql.Row {
	if st := t.stmt(q); st != nil {
		return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, t.db.Rebind(q), args...)
}

// InTx runs fn in a write transaction, committing when fn returns nil. The commit is
// durable when InTx returns nil (SQLite: Sync; PostgreSQL's default
// synchronous_commit).
func (db *DB) InTx(ctx context.Context, fn func(*Tx) error) error {
	var after []func()
	err := db.InTxUnsynced(ctx, func(tx *Tx) error {
		err := fn(tx)
		after, tx.after = tx.after, nil // run below, once durable
		return err
	})
	if err != nil {
		return err
	}
	if err := db.Sync(); err != nil {
		return err
	}
	for _, f := range after {
		f()
	}
	return nil
}

// InTxUnsynced is InTx without the wait for durability: when it returns nil the
// transaction is committed and visible to readers, and it is durable once a
// later call to Sync returns nil. The ingester inserts the next batch before
// it syncs the last one, and acknowledges after Sync. On PostgreSQL it is InTx.
func (db *DB) InTxUnsynced(ctx context.Context, fn func(*Tx) error) (err error) {
	if db.Dialect == SQLite {
		db.maybeRestartWAL(ctx)
	}
	sqlTx, err := db.W.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			sqlTx.Rollback()
			panic(p)
		}
		if err != nil {
			sqlTx.Rollback()
		}
	}()
	tx := &Tx{db: db, tx: sqlTx}
	if err = fn(tx); err != nil {
		return err
	}
	if err = sqlTx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	db.traceCommit()
	for _, f := range tx.after {
		f()
	}
	return nil
}

// InReadTx runs fn in a read transaction on the read pool, which sees one
// snapshot of the store from its first statement to its end (SQLite WAL; on
// PostgreSQL, REPEATABLE READ). It is rolled back: fn must not write.
func (db *DB) InReadTx(ctx context.Context, fn func(*Tx) error) error {
	opts := &sql.TxOptions{}
	if db.Dialect == Postgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	sqlTx, err := db.R.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	defer sqlTx.Rollback()
	return fn(&Tx{db: db, tx: sqlTx, read: true})
}

// pgUniqueViolation is PostgreSQL's SQLSTATE unique_violation.
const pgUniqueViolation = "23505"

// IsUniqueViolation reports whether err, or an error it wraps, is a unique
// constraint's failure on either store: SQLSTATE unique_violation on PostgreSQL;
// SQLITE_CONSTRAINT_UNIQUE or SQLITE_CONSTRAINT_PRIMARYKEY on SQLite (the driver
// turns extended result codes on). It reads the drivers' error codes, as their
// messages are text for people and may change.
func IsUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == pgUniqueViolation
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return true
		}
	}
	return false
}

// NowMillis is the current time as stored: Unix milliseconds.
func NowMillis() int64 { return time.Now().UnixMilli() }

// RunExclusive runs fn only if no other replica is running the job of the same
// name, and reports whether it ran. On PostgreSQL it holds a session advisory lock
// for the duration (released by the server if this replica dies mid-job, so
// another picks the job up on its next turn); on SQLite, a single process owns the
// file and fn always runs.
func (db *DB) RunExclusive(ctx context.Context, job string, fn func(context.Context) error) (bool, error) {
	if db.Dialect != Postgres {
		return true, fn(ctx)
	}
	conn, err := db.W.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", job, err)
	}
	defer conn.Close()
	var got bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(hashtext($1))", "catchbox:"+job).Scan(&got); err != nil {
		return false, fmt.Errorf("claim %s: %w", job, err)
	}
	if !got {
		return false, nil
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtext($1))", "catchbox:"+job)
	return true, fn(ctx)
}

// Every runs the job fn now and then every interval until ctx ends, one replica
// at a time (RunExclusive under the job's name). A failure or a panic is logged
// and the job runs again on its next turn: periodic work (the reapers) must
// never stop or take the server down.
//
// turned, if not nil, is told how each turn ended: ran, whether this replica
// ran the job (false: another replica held it); err, the turn's failure or
// panic. A turn cut short by the end of ctx is not told. It is how a replica's
// periodic work is seen to go on (metrics.PeriodicTurn), and how a test proves
// that a replica tried before it asserts that nothing happened.
func (db *DB) Every(ctx context.Context, job string, interval time.Duration, fn func(context.Context) error, turned func(ran bool, err error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ran, err := db.turn(ctx, job, fn)
		if err != nil && ctx.Err() == nil && !errors.Is(err, errPanicked) {
			slog.Error("Periodic job failed", "job", job, "err", err)
		}
		if turned != nil && ctx.Err() == nil {
			turned(ran, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// errPanicked is the failure of a periodic job's turn that panicked.
var errPanicked = errors.New("periodic job panicked")

// turn is one turn of Every: fn under RunExclusive, a panic recovered, logged
// and returned as the error of a turn that ran.
func (db *DB) turn(ctx context.Context, job string, fn func(context.Context) error) (ran bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("Periodic job panicked", "job", job, "panic", fmt.Sprint(p))
			ran, err = true, fmt.Errorf("%w: %v", errPanicked, p)
		}
	}()
	return db.RunExclusive(ctx, job, fn)
}

// Fold is the case folding of substring search: each character's lower case,
// except U+0130 (İ, capital I with a dot), which stays as it is, as it did in
// SQLite's FTS5 trigram index that searches once read (Unicode's case folding
// has no one-letter mapping for it; Go's lower case makes it "i"). The copies
// in memory and the row-by-row search both fold with it, so an email is found
// or not the same way whichever answers (inbox.Searcher).
func Fold(s string) string {
	if !strings.ContainsRune(s, 'İ') {
		return strings.ToLower(s) // its ASCII fast path
	}
	return strings.Map(func(r rune) rune {
		if r == 'İ' {
			return r
		}
		return unicode.ToLower(r)
	}, s)
}

// fold(text) is Fold in SQL: SQLite's own lower() and LIKE fold ASCII only.
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("fold", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		switch v := args[0].(type) {
		case string:
			return Fold(v), nil
		case []byte:
			return Fold(string(v)), nil
		}
		return args[0], nil
	})
}
