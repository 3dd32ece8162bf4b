// Package storetest opens fresh, migrated stores for tests: a SQLite file in a
// temporary directory, and, when CATCHBOX_TEST_POSTGRES_URL is set, a new schema in
// that PostgreSQL database (dropped when the test ends). Without the variable the
// PostgreSQL half of a test is skipped, so a newcomer's laptop needs no server;
// .ci/run always sets it.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/catchbox/catchbox/internal/store"
)

// PostgresEnv names the variable holding the test PostgreSQL URL.
const PostgresEnv = "CATCHBOX_TEST_POSTGRES_URL"

// Each runs fn once per available store, as subtests named "sqlite" and "postgres".
func Each(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, Open(t, store.SQLite)) })
	t.Run("postgres", func(t *testing.T) { fn(t, Open(t, store.Postgres)) })
}

// Open returns a fresh migrated store of the dialect, closed when t ends. The
// PostgreSQL variant skips t when CATCHBOX_TEST_POSTGRES_URL is unset.
func Open(t testing.TB, d store.Dialect) *store.DB {
	t.Helper()
	u := URL(t, d)
	db, err := store.Open(context.Background(), u)
	if err != nil {
		t.Fatalf("open %s store: %v", d, err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate %s store: %v", d, err)
	}
	return db
}

// URL returns the database URL of a fresh, empty store of the dialect (for tests
// that start the binary). The PostgreSQL schema is dropped when t ends.
func URL(t testing.TB, d store.Dialect) string {
	t.Helper()
	if d == store.SQLite {
		return "sqlite://" + filepath.Join(t.TempDir(), "catchbox.db")
	}
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skipf("%s not set: PostgreSQL tests skipped", PostgresEnv)
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		admin.Close()
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		admin.Exec("DROP SCHEMA " + schema + " CASCADE")
		admin.Close()
	})
	pu, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", PostgresEnv, err)
	}
	q := pu.Query()
	q.Set("search_path", schema+",public")
	pu.RawQuery = q.Encode()
	return pu.String()
}
