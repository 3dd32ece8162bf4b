package server_test

import (
	"context"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/server/servertest"
)

// TestMemoryLimit builds a server with CATCHBOX_MEMORY_LIMIT=64MiB and checks
// that the budget reaches everything that holds memory: Go's soft limit, each
// SQLite reader's page cache, and the search copies' budget, and that they add
// up to the limit. Without the setting the defaults stay.
func TestMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })

	build := func(limit string) *server.Service {
		cfg := servertest.Config(t)
		cfg.MemoryLimit = limit
		s, err := server.Build(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	readerCacheKiB := func(s *server.Service) int64 {
		var n int64
		if err := s.DB.R.QueryRow("PRAGMA cache_size").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return -n // negative: KiB
	}

	s := build("64MiB")
	goLimit := debug.SetMemoryLimit(-1)
	if goLimit != 56<<20 {
		t.Errorf("Go's memory limit %d, want 56 MiB (64 MiB less SQLite's caches)", goLimit)
	}
	if got := readerCacheKiB(s); got != 512 {
		t.Errorf("reader cache_size %d KiB, want 512", got)
	}
	if got := s.Searcher.ColumnBudget(); got != 16<<20 {
		t.Errorf("search copies' budget %d, want 16 MiB (a quarter)", got)
	}
	// Go's limit and SQLite's caches (8 readers, the writer and the
	// checkpointer at 2 MiB) make the whole budget.
	if sum := goLimit + 8*512<<10 + 4<<20; sum != 64<<20 {
		t.Errorf("budget adds up to %d, want 64 MiB", sum)
	}

	debug.SetMemoryLimit(before)
	s = build("")
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("without a limit Go's limit changed to %d", got)
	}
	if got := readerCacheKiB(s); got != 2048 {
		t.Errorf("default reader cache_size %d KiB, want 2048", got)
	}
	// Readers map none of the file: mapped pages they touch would count in the
	// process's resident size (docs/benchmarks.md, "Footprint").
	var mmap int64
	if err := s.DB.R.QueryRow("PRAGMA mmap_size").Scan(&mmap); err != nil {
		t.Fatal(err)
	}
	if mmap != 0 {
		t.Errorf("readers map %d bytes of the database, want none", mmap)
	}
	if got := s.Searcher.ColumnBudget(); got != 128<<20 {
		t.Errorf("default search budget %d, want CATCHBOX_SEARCH_MEMORY_BYTES's 128 MiB", got)
	}
}

// TestMemoryLimitRefused: a limit the server cannot live within, or that is
// not a size, is refused with the setting named.
func TestMemoryLimitRefused(t *testing.T) {
	for _, v := range []string{"16MiB", "lots", "-1", "12TB"} {
		cfg := servertest.Config(t)
		cfg.MemoryLimit = v
		if _, err := server.Build(context.Background(), cfg); err == nil {
			t.Errorf("memory-limit %q accepted", v)
		} else if want := "memory-limit"; !strings.Contains(err.Error(), want) {
			t.Errorf("memory-limit %q: %v, want the setting named", v, err)
		}
	}
}
