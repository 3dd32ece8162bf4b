package server

import (
	"runtime/debug"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/store"
)

// memoryPlan divides CATCHBOX_MEMORY_LIMIT between what holds memory for long:
// SQLite's page caches (allocated outside Go's heap, so outside Go's limit), the
// search copies (in Go's heap), and everything else Go allocates (requests,
// ingest, the copies). Without a limit it keeps the defaults.
type memoryPlan struct {
	sqlite      store.Options
	searchBytes int64 // the search copies' budget (CATCHBOX_SEARCH_MEMORY_BYTES, lowered to fit)
	goLimit     int64 // Go's soft memory limit, 0 for none
}

// Shares of the limit: at most an eighth for SQLite's caches and a quarter for
// the search copies, which leaves Go at least five eighths for the copies and
// the rest of the server. A copy is dropped when the copies outgrow their
// budget, and Go's collector runs harder as the heap nears its limit.
const (
	sqliteShare = 8 // 1/8
	searchShare = 4 // 1/4
)

func planMemory(cfg config.Serve) memoryPlan {
	limit := cfg.MemoryLimitBytes()
	p := memoryPlan{searchBytes: cfg.SearchMemoryBytes}
	if limit <= 0 {
		return p
	}
	// Each reader gets its share of the eighth left once the writer's and the
	// checkpointer's fixed caches are counted; Options round up to their least.
	fixed := store.Options{ReaderCacheBytes: 1}.CacheBytes() - store.Options{ReaderCacheBytes: 1}.ReaderCachesBytes()
	perReader := (limit/sqliteShare - fixed) / store.Readers
	p.sqlite.ReaderCacheBytes = max(min(perReader, store.DefaultReaderCacheBytes), 1)
	p.searchBytes = min(p.searchBytes, limit/searchShare)
	p.goLimit = limit - p.sqlite.CacheBytes()
	return p
}

// apply sets Go's soft memory limit when the plan has one.
func (p memoryPlan) apply() {
	if p.goLimit > 0 {
		debug.SetMemoryLimit(p.goLimit)
	}
}
