//go:build unix

package store_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/catchbox/catchbox/internal/store"
)

// The SQLite store's files (the database, its WAL and shared-memory index)
// are created 0600 whatever the umask, and files left looser by an earlier
// version are tightened to 0600 when the store is opened.
func TestStoreFilesPrivate(t *testing.T) {
	old := syscall.Umask(0) // a umask of 0: the modes are the code's own
	t.Cleanup(func() { syscall.Umask(old) })
	path := filepath.Join(t.TempDir(), "data", "catchbox.db")
	files := []string{path, path + "-wal", path + "-shm"}
	modes := func() map[string]os.FileMode {
		m := map[string]os.FileMode{}
		for _, f := range files {
			st, err := os.Stat(f)
			if err != nil {
				t.Fatalf("stat %s: %v", filepath.Base(f), err)
			}
			m[filepath.Base(f)] = st.Mode().Perm()
		}
		return m
	}
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for f, m := range modes() {
		if m != 0o600 {
			t.Errorf("new store: %s is %04o, want 0600", f, m)
		}
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("data directory: %v %v, want 0700", st.Mode().Perm(), err)
	}

	// Loosened while open (as an earlier version left them); the next open
	// of the store tightens them.
	for _, f := range files {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	again, err := store.Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for f, m := range modes() {
		if m != 0o600 {
			t.Errorf("reopened store: %s is %04o, want 0600", f, m)
		}
	}
	var n int
	if err := again.QueryRow(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil || n == 0 {
		t.Fatalf("the reopened store reads %d migrations: %v", n, err)
	}
}
