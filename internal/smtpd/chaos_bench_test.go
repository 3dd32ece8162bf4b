package smtpd

import (
	"context"
	"testing"

	"github.com/catchbox/catchbox/internal/chaos"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// BenchmarkFaultsCheck is the check the listener makes at each stage of a
// transaction (four per message) for a namespace without fault rules: an
// atomic load and a map lookup, no store access. docs/benchmarks.md compares
// whole-server ingest with and without the checks.
func BenchmarkFaultsCheck(b *testing.B) {
	db := storetest.Open(b, store.SQLite)
	table := chaos.NewTable(db)
	if err := table.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if table.Has("0195f3c4-0000-7000-8000-000000000000", chaos.StageRcpt) {
			b.Fatal("rules for a namespace without any")
		}
	}
}
