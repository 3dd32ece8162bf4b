package inbox

import (
	"context"
	"fmt"
	"testing"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// FuzzSubstringSearch runs any subject_includes and from_addr_includes value
// (the API passes any string of up to 998 characters), alone and with a
// to_addr_prefix, row by row in SQLite and in the namespace's copy in memory,
// over the same emails: none may fail, and all must find the same emails.
// (FuzzSearch in package index searches the copy compacted too.)
func FuzzSubstringSearch(f *testing.F) {
	db := storetest.Open(f, store.SQLite)
	ctx := context.Background()
	ns := defaultNamespace(f, db)
	in := NewIngester(db, notify.NewHub())
	defer in.Close()
	copied, scanned := NewSearcher(db, DefaultColumnBudget), NewSearcher(db, DefaultColumnBudget)
	scanned.SetColumnBudget(0)
	// A first email, copied, then dropped by the quota: the copy keeps it in
	// its arrays, before its first row.
	deliverTo(f, in, ns, "Dropped <dropped@example.com>", "dropped by the quota")
	if _, err := copied.Search(ctx, Query{NamespaceID: ns.ID, Limit: 1, SubjectIncludes: "x"}); err != nil {
		f.Fatal(err)
	}
	subjects := []string{
		"Order 0042317 password reset", "=?utf-8?q?=C3=89T=C3=89_caf=C3=A9?= \"quoted\" AND OR NOT",
		"Straße ΣΊΣΥΦΟΣ İstanbul KELVIN \u212a-sign", "a*b^c (d) {e} [f] col: x", "tabs\tand  spaces",
	}
	for i, s := range subjects {
		deliverTo(f, in, ns, fmt.Sprintf("Sender%d <S%d.sender@Example.com>", i, i), s)
	}
	if err := db.InTx(ctx, func(tx *store.Tx) error { return enforceQuota(ctx, tx, ns.ID, int64(len(subjects)), 0) }); err != nil {
		f.Fatal(err)
	}
	if _, err := copied.Search(ctx, Query{NamespaceID: ns.ID, Limit: 1, SubjectIncludes: "x"}); err != nil {
		f.Fatal(err)
	}
	if !copied.copies.Loaded(ns.ID) {
		f.Fatal("the namespace has no copy in memory")
	}
	for _, s := range []string{"order 0042317", "password reset", "ÉTÉ", "\"quoted\"", "AND OR", "ß", "σίσυφος", "i̇stanbul", "kelvin", "k-sign", "a*b", "(d) {e}", "col: x", "\t", "  ", "sender@example", "\x00", "\xff\xfe", `""`, "NEAR(a b)", "dropped"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, needle string) {
		if needle == "" || len([]rune(needle)) > MaxFilterRunes {
			return
		}
		for _, q := range []Query{
			{SubjectIncludes: needle}, {FromAddrIncludes: needle},
			{SubjectIncludes: needle, ToAddrPrefix: "x@"}, {FromAddrIncludes: needle, ToAddrPrefix: "nobody"},
		} {
			q.NamespaceID, q.Limit = ns.ID, MaxLimit
			want, err := scanned.Search(ctx, q)
			if err != nil {
				t.Fatalf("%+q row by row: %v", needle, err)
			}
			got, err := copied.Search(ctx, q)
			if err != nil {
				t.Fatalf("%+v from memory: %v", q, err)
			}
			if fmt.Sprint(ids(got)) != fmt.Sprint(ids(want)) || got.Total != want.Total {
				t.Fatalf("%+v: %v from memory, %v row by row", q, ids(got), ids(want))
			}
		}
	})
}

// deliverTo stores one message from from with the subject in ns, to
// x@default.localhost, and returns its id.
func deliverTo(t testing.TB, in *Ingester, ns tenant.Namespace, from, subject string) string {
	t.Helper()
	raw := []byte(fmt.Sprintf("From: %s\r\nTo: x@default.localhost\r\nSubject: %s\r\n\r\nbody\r\n", from, subject))
	ids, err := in.Deliver(context.Background(), raw, Envelope{}, []Target{{Namespace: ns, Recipients: []string{"x@default.localhost"}}})
	if err != nil {
		t.Fatal(err)
	}
	return ids[0]
}
