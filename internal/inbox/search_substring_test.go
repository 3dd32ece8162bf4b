package inbox

import (
	"context"
	"fmt"
	"testing"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// A substring search finds an email by any part of its subject or From
// address, with the same case folding (beyond ASCII) however it is answered:
// on SQLite from the namespace's copy in memory and row by row (a namespace
// over the copies' budget), which must agree, and on PostgreSQL through its
// trigram indexes. A deleted email is no longer found.
func TestSubstringSearch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ns := defaultNamespace(t, db)
		in := NewIngester(db, notify.NewHub())
		defer in.Close()
		send := func(subject, from string) string { t.Helper(); return deliverTo(t, in, ns, from, subject) }
		early := send("=?utf-8?q?=C3=89T=C3=89_early_marker?= (early_marker)", "Early.Sender@Example.com")
		for i := 0; i < 300; i++ {
			send(fmt.Sprintf("filler %04d", i), "filler@example.com")
		}
		late := send("=?utf-8?q?=C3=89T=C3=89_late_marker?= (late_marker)", "Late.Sender@Example.com")
		copied, scanned := NewSearcher(db, DefaultColumnBudget), NewSearcher(db, DefaultColumnBudget)
		scanned.SetColumnBudget(0)
		find := func(q Query) []string {
			t.Helper()
			q.NamespaceID, q.Limit = ns.ID, MaxLimit
			res, err := copied.Search(ctx, q)
			if err == nil && db.Dialect == store.SQLite {
				var other Result
				other, err = scanned.Search(ctx, q)
				if fmt.Sprint(ids(other)) != fmt.Sprint(ids(res)) || other.Total != res.Total {
					t.Errorf("%+v: %v (total %d) from memory, %v (total %d) row by row",
						q, ids(res), res.Total, ids(other), other.Total)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Total != len(res.Emails) {
				t.Errorf("%+v: total %d for %d emails", q, res.Total, len(res.Emails))
			}
			return ids(res)
		}
		for _, c := range []struct {
			q    Query
			want []string
		}{
			{Query{SubjectIncludes: "été"}, []string{late, early}},
			{Query{SubjectIncludes: "ÉTÉ LATE"}, []string{late}},
			{Query{SubjectIncludes: "early_MARKER"}, []string{early}},
			{Query{SubjectIncludes: "é early"}, []string{early}},
			{Query{SubjectIncludes: "marker"}, []string{late, early}},
			{Query{FromAddrIncludes: "SENDER@example"}, []string{late, early}},
			{Query{FromAddrIncludes: "late.sender"}, []string{late}},
			{Query{SubjectIncludes: "no such subject"}, nil},
			// Every word is there, but not as this substring.
			{Query{SubjectIncludes: "marker early"}, nil},
			{Query{SubjectIncludes: "marker late"}, nil},
			{Query{SubjectIncludes: "marker (early"}, []string{early}},
			{Query{SubjectIncludes: "ét"}, []string{late, early}},
			{Query{SubjectIncludes: "é e"}, []string{early}},
			{Query{SubjectIncludes: "marker", ToAddrPrefix: "X@DEFAULT"}, []string{late, early}},
			{Query{SubjectIncludes: "marker", ToAddrPrefix: "y@"}, nil},
		} {
			if got := find(c.q); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%+v: got %v, want %v", c.q, got, c.want)
			}
		}
		// A page past the last match still counts every match.
		for _, sc := range []*Searcher{copied, scanned} {
			res, err := sc.Search(ctx, Query{NamespaceID: ns.ID, Limit: 10, Offset: 5000, SubjectIncludes: "filler"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Total != 300 || len(res.Emails) != 0 {
				t.Errorf("offset past the matches: total %d with %d emails, want 300 with none", res.Total, len(res.Emails))
			}
		}
		err := db.InTx(ctx, func(tx *store.Tx) error {
			for _, id := range []string{early, late} {
				var seq int64
				if err := tx.QueryRow(ctx, "SELECT seq FROM emails WHERE id = ?", id).Scan(&seq); err != nil {
					return err
				}
				if err := deleteEmails(ctx, tx, []any{seq}, []any{id}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := find(Query{SubjectIncludes: "marker"}); len(got) != 0 {
			t.Errorf("deleted emails still found: %v", got)
		}
		if got := find(Query{SubjectIncludes: "filler 0026"}); len(got) != 1 {
			t.Errorf("filler 0026: %v", got)
		}
	})
}

// Migration 0013 drops SQLite's FTS5 index, its trigger and its position, as
// they stood after migration 0012: emails indexed or not are still found and
// can still be deleted, and nothing of the index is left.
func TestSearchIndexDropped(t *testing.T) {
	eachDialectAt(t, 12, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ns := defaultNamespace(t, db)
		in := NewIngester(db, notify.NewHub())
		defer in.Close()
		indexed := deliverTo(t, in, ns, "a@example.com", "indexed marker")
		if db.Dialect == store.SQLite {
			for _, q := range []string{
				"INSERT INTO emails_fts (rowid, subject, from_addr) SELECT seq, subject, from_addr FROM emails",
				"UPDATE search_index_state SET indexed_seq = (SELECT MAX(seq) FROM emails)",
			} {
				if _, err := db.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
		}
		unindexed := deliverTo(t, in, ns, "b@example.com", "unindexed marker")
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if db.Dialect == store.SQLite {
			var left int
			db.QueryRow(ctx, "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'emails_fts%' OR name = 'search_index_state'").Scan(&left)
			if left != 0 {
				t.Errorf("%d tables or triggers of the index left", left)
			}
		}
		s := NewSearcher(db, DefaultColumnBudget)
		res, err := s.Search(ctx, Query{NamespaceID: ns.ID, Limit: MaxLimit, SubjectIncludes: "MARKER"})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(ids(res)) != fmt.Sprint([]string{unindexed, indexed}) {
			t.Errorf("found %v, want %v", ids(res), []string{unindexed, indexed})
		}
		if err := db.InTx(ctx, func(tx *store.Tx) error { return enforceQuota(ctx, tx, ns.ID, 0, 0) }); err != nil {
			t.Fatal(err)
		}
		if res, err := s.Search(ctx, Query{NamespaceID: ns.ID, Limit: MaxLimit, SubjectIncludes: "marker"}); err != nil || res.Total != 0 {
			t.Errorf("after deleting both: %d found, %v", res.Total, err)
		}
	})
}

func ids(r Result) []string {
	var out []string
	for _, e := range r.Emails {
		out = append(out, e.ID)
	}
	return out
}
