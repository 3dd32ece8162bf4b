package inbox

import (
	"context"
	"fmt"
	"testing"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// On SQLite the trigram index lags behind the newest emails by up to
// searchIndexLag; a substring search must find an email whether it is in the
// index or past it, with the same case folding (beyond ASCII) on both sides, and
// deleting emails on either side must leave the index consistent.
func TestSubstringSearchAcrossIndexLag(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ns := defaultNamespace(t, db)
		in := NewIngester(db, notify.NewHub())
		defer in.Close()
		send := func(subject, from string) string { t.Helper(); return deliverTo(t, in, ns, from, subject) }
		// Sent first, so that they end up in the index.
		early := send("=?utf-8?q?=C3=89T=C3=89_early_marker?= (early_marker)", "Early.Sender@Example.com")
		for i := 0; i < searchIndexLag+10; i++ {
			send(fmt.Sprintf("filler %04d", i), "filler@example.com")
		}
		// Sent last: past the index.
		late := send("=?utf-8?q?=C3=89T=C3=89_late_marker?= (late_marker)", "Late.Sender@Example.com")
		if db.Dialect == store.SQLite {
			var indexed, lastSeq int64
			db.QueryRow(ctx, "SELECT indexed_seq FROM search_index_state").Scan(&indexed)
			db.QueryRow(ctx, "SELECT MAX(seq) FROM emails").Scan(&lastSeq)
			var earlySeq int64
			db.QueryRow(ctx, "SELECT seq FROM emails WHERE id = ?", early).Scan(&earlySeq)
			if !(earlySeq <= indexed && indexed < lastSeq) {
				t.Fatalf("indexed up to %d of %d (early email %d): the test needs one email on each side", indexed, lastSeq, earlySeq)
			}
		}
		// Each query runs twice on SQLite: through the trigram index (as in a
		// namespace above scanLimit) and row by row (as in a smaller one).
		indexed, scanned := NewSearcher(db), NewSearcher(db)
		indexed.scanLimit = -1
		find := func(q Query) []string {
			t.Helper()
			q.NamespaceID, q.Limit = ns.ID, MaxLimit
			res, err := indexed.Search(ctx, q)
			if err == nil {
				var other Result
				other, err = scanned.Search(ctx, q)
				if fmt.Sprint(ids(other)) != fmt.Sprint(ids(res)) || other.Total != res.Total {
					t.Errorf("%+v: %v (total %d) through the index, %v (total %d) row by row",
						q, ids(res), res.Total, ids(other), other.Total)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, e := range res.Emails {
				ids = append(ids, e.ID)
			}
			if res.Total != len(ids) {
				t.Errorf("%+v: total %d for %d emails", q, res.Total, len(ids))
			}
			return ids
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
			// Every word is in the index, but not as this substring.
			{Query{SubjectIncludes: "marker early"}, nil},
			{Query{SubjectIncludes: "marker late"}, nil},
			{Query{SubjectIncludes: "marker (early"}, []string{early}},
			// Under three characters: no index; the same folding beyond ASCII.
			{Query{SubjectIncludes: "ét"}, []string{late, early}},
			// No word of three characters: the whole needle is the phrase.
			{Query{SubjectIncludes: "é e"}, []string{early}},
		} {
			if got := find(c.q); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%+v: got %v, want %v", c.q, got, c.want)
			}
		}
		// A page past the last match still counts every match.
		for _, sc := range []*Searcher{indexed, scanned} {
			res, err := sc.Search(ctx, Query{NamespaceID: ns.ID, Limit: 10, Offset: 5000, SubjectIncludes: "filler"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Total != searchIndexLag+10 || len(res.Emails) != 0 {
				t.Errorf("offset past the matches: total %d with %d emails, want %d with none", res.Total, len(res.Emails), searchIndexLag+10)
			}
		}
		// Deleting an indexed and an unindexed email keeps the index whole.
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
		if db.Dialect == store.SQLite {
			// rank 0: the index itself, not yet against emails, which it lags.
			if _, err := db.Exec(ctx, "INSERT INTO emails_fts (emails_fts, rank) VALUES ('integrity-check', 0)"); err != nil {
				t.Errorf("FTS index inconsistent after deletions: %v", err)
			}
			// Caught up, it holds exactly the emails that remain.
			indexThrough(t, db, "MAX(seq)")
			if _, err := db.Exec(ctx, "INSERT INTO emails_fts (emails_fts, rank) VALUES ('integrity-check', 1)"); err != nil {
				t.Errorf("FTS index and emails differ after catching up: %v", err)
			}
		}
		if got := find(Query{SubjectIncludes: "filler 0026"}); len(got) != 1 {
			t.Errorf("filler 0026: %v", got)
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
