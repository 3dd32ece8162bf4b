package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Migrations live in migrations/ as NNNN_name.sql (run on both stores), with
// NNNN_name.sqlite.sql and NNNN_name.postgres.sql for what only one dialect
// runs; a version's dialect file runs after its common file, in the same
// transaction, so only the differences are written twice.
// They are append-only: a released migration is never edited, a change is a new file.
// Each runs in its own transaction together with the row that records it.
//
// Tokens replaced before running:
//
//	{{blob}}    BLOB | BYTEA
//	{{serial}}  INTEGER PRIMARY KEY AUTOINCREMENT | BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY
//	{{text_c}}  TEXT | TEXT COLLATE "C"  (byte order, so range scans serve prefix search)
//
//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func (db *DB) migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	type parts struct{ name, common, dialect string }
	byVersion := map[int]*parts{}
	for _, e := range entries {
		name := e.Name()
		base := strings.TrimSuffix(name, ".sql")
		dialect := ""
		if i := strings.LastIndexByte(base, '.'); i >= 0 {
			dialect, base = base[i+1:], base[:i]
		}
		if dialect != "" && dialect != db.Dialect.String() {
			continue
		}
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number", name)
		}
		body, err := migrationFS.ReadFile("migrations/" + name)
		if err != nil {
			return nil, err
		}
		p := byVersion[v]
		if p == nil {
			p = &parts{name: base + ".sql"}
			byVersion[v] = p
		}
		if p.name != base+".sql" {
			return nil, fmt.Errorf("migrations %s and %s share version %d", p.name, name, v)
		}
		if dialect == "" {
			p.common = string(body)
		} else {
			p.dialect = string(body)
		}
	}
	out := make([]migration, 0, len(byVersion))
	for v, p := range byVersion {
		out = append(out, migration{version: v, name: p.name, sql: db.expandTokens(p.common + "\n" + p.dialect)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

func (db *DB) expandTokens(s string) string {
	var r *strings.Replacer
	if db.Dialect == Postgres {
		r = strings.NewReplacer("{{blob}}", "BYTEA",
			"{{serial}}", "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
			"{{text_c}}", `TEXT COLLATE "C"`)
	} else {
		r = strings.NewReplacer("{{blob}}", "BLOB",
			"{{serial}}", "INTEGER PRIMARY KEY AUTOINCREMENT",
			"{{text_c}}", "TEXT")
	}
	return r.Replace(s)
}

// migrationLockID is the PostgreSQL advisory lock key that serialises migrations
// when several replicas start at once.
const migrationLockID = 0x63617463 // "catc"

// Migrate applies every migration not yet recorded in schema_migrations.
func (db *DB) Migrate(ctx context.Context) error { return db.MigrateTo(ctx, math.MaxInt) }

// MigrateTo applies the migrations up to version last: a test of a migration
// that moves existing rows stops before it, writes rows the old way, and then
// migrates the rest.
func (db *DB) MigrateTo(ctx context.Context, last int) error {
	all, err := db.migrations()
	if err != nil {
		return err
	}
	var ms []migration
	for _, m := range all {
		if m.version <= last {
			ms = append(ms, m)
		}
	}
	if db.Dialect == Postgres {
		// A session-level advisory lock on one dedicated connection: the second
		// replica to start waits here until the first has finished.
		conn, err := db.W.Conn(ctx)
		if err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", migrationLockID); err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLockID)
	}
	if _, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	rows, err := db.W.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return err
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var done []string
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		err := db.InTx(ctx, func(tx *Tx) error {
			for _, stmt := range splitStatements(m.sql) {
				if _, err := tx.tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("%w\n%s", err, stmt)
				}
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
				m.version, m.name, NowMillis())
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		done = append(done, m.name)
	}
	if len(done) > 0 {
		// One line, however many: a new store applies every migration there is.
		slog.Info("Applied migrations", "store", db.Dialect.String(), "count", len(done), "first", done[0], "last", done[len(done)-1])
	}
	return nil
}

// splitStatements splits a migration at lines ending in ';'. Statements whose body
// contains ';' (triggers) end at a line holding only "END;".
func splitStatements(s string) []string {
	var out []string
	var cur strings.Builder
	inBlock := false
	for _, line := range strings.Split(s, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") && cur.Len() == 0 {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		upper := strings.ToUpper(trimmed)
		if strings.HasPrefix(upper, "CREATE TRIGGER") || strings.Contains(upper, "$$") && !inBlock {
			inBlock = true
		}
		end := false
		if inBlock {
			end = upper == "END;" || strings.HasSuffix(upper, "$$;") || strings.HasSuffix(upper, "$$ LANGUAGE PLPGSQL;")
		} else {
			end = strings.HasSuffix(trimmed, ";")
		}
		if end {
			if stmt := strings.TrimSpace(cur.String()); stmt != "" {
				out = append(out, stmt)
			}
			cur.Reset()
			inBlock = false
		}
	}
	if stmt := strings.TrimSpace(cur.String()); stmt != "" {
		out = append(out, stmt)
	}
	return out
}

// PendingMigrations counts the migrations this build has that the store has
// not recorded: 0 when the schema is current. A store never migrated counts
// them all. GET /readyz is not ready while it is above 0.
func (db *DB) PendingMigrations(ctx context.Context) (int, error) {
	all, err := db.migrations()
	if err != nil {
		return 0, err
	}
	ok, err := db.Initialized(ctx)
	if err != nil || !ok {
		return len(all), err
	}
	var applied int
	if err := db.R.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&applied); err != nil {
		return 0, fmt.Errorf("read schema_migrations: %w", err)
	}
	return max(len(all)-applied, 0), nil
}

// Initialized reports whether the store has been migrated at least once,
// i.e. whether catchbox serve (or an admin command told to create it) has
// made it. The admin commands refuse to work on a store that is not.
func (db *DB) Initialized(ctx context.Context) (bool, error) {
	var n int
	var err error
	if db.Dialect == Postgres {
		err = db.R.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'schema_migrations'").Scan(&n)
	} else {
		err = db.R.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").Scan(&n)
	}
	if err != nil {
		return false, fmt.Errorf("look for schema_migrations: %w", err)
	}
	return n > 0, nil
}

// Size is the store's size on disk in bytes: SQLite's database file (pages in
// use and free), PostgreSQL's database (pg_database_size).
func (db *DB) Size(ctx context.Context) (int64, error) {
	var n int64
	var err error
	if db.Dialect == Postgres {
		err = db.R.QueryRowContext(ctx, "SELECT pg_database_size(current_database())").Scan(&n)
	} else {
		err = db.R.QueryRowContext(ctx, "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()").Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("store size: %w", err)
	}
	return n, nil
}
