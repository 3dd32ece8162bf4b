package inbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// FuzzSubstringSearch runs any subject_includes and from_addr_includes value
// (the API passes any string of up to 998 characters) through the trigram
// index, row by row in SQLite, and in the namespace's copy in memory, over the
// same emails: none may fail, and all must find the same emails.
func FuzzSubstringSearch(f *testing.F) {
	db := storetest.Open(f, store.SQLite)
	ctx := context.Background()
	ns := defaultNamespace(f, db)
	in := NewIngester(db, notify.NewHub())
	defer in.Close()
	subjects := []string{
		"Order 0042317 password reset", "=?utf-8?q?=C3=89T=C3=89_caf=C3=A9?= \"quoted\" AND OR NOT",
		"Straße ΣΊΣΥΦΟΣ İstanbul KELVIN \u212a-sign", "a*b^c (d) {e} [f] col: x", "tabs\tand  spaces",
	}
	for i, s := range subjects {
		deliverTo(f, in, ns, fmt.Sprintf("Sender%d <S%d.sender@Example.com>", i, i), s)
	}
	indexThrough(f, db, "MIN(seq) + 2") // half of them into the index, half past it
	for _, s := range []string{"order 0042317", "password reset", "ÉTÉ", "\"quoted\"", "AND OR", "ß", "σίσυφος", "i̇stanbul", "kelvin", "k-sign", "a*b", "(d) {e}", "col: x", "\t", "  ", "sender@example", "\x00", "\xff\xfe", `""`, "NEAR(a b)"} {
		f.Add(s)
	}
	indexed, scanned, copied := NewSearcher(db), NewSearcher(db), NewSearcher(db)
	indexed.scanLimit = -1
	indexed.SetColumnBudget(0)
	scanned.SetColumnBudget(0)
	f.Fuzz(func(t *testing.T, needle string) {
		for _, q := range []Query{{SubjectIncludes: needle}, {FromAddrIncludes: needle}} {
			if needle == "" || len([]rune(needle)) > MaxFilterRunes {
				return
			}
			q.NamespaceID, q.Limit = ns.ID, MaxLimit
			a, err := indexed.Search(ctx, q)
			if err != nil {
				t.Fatalf("%+q through the index: %v", needle, err)
			}
			b, err := scanned.Search(ctx, q)
			if err != nil {
				t.Fatalf("%+q row by row: %v", needle, err)
			}
			if fmt.Sprint(ids(a)) != fmt.Sprint(ids(b)) || a.Total != b.Total {
				t.Fatalf("%+q: %v through the index, %v row by row", needle, ids(a), ids(b))
			}
			c, err := copied.Search(ctx, q)
			if err != nil {
				t.Fatalf("%+q from memory: %v", needle, err)
			}
			if fmt.Sprint(ids(c)) != fmt.Sprint(ids(b)) || c.Total != b.Total {
				t.Fatalf("%+q: %v from memory, %v row by row", needle, ids(c), ids(b))
			}
		}
	})
}

// The whole value joins its words in the FTS5 query only where the words are
// common and the value is not.
func TestNeedsPhrase(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	ns := defaultNamespace(t, db)
	in := NewIngester(db, notify.NewHub())
	defer in.Close()
	for i := 0; i < phraseSample+20; i++ {
		deliverTo(t, in, ns, "a@example.com", fmt.Sprintf("Reset for user %d", i))
	}
	indexThrough(t, db, "MAX(seq)")
	s := NewSearcher(db)
	for _, c := range []struct {
		value string
		want  bool
	}{
		{"USER FOR", true},   // every row holds both words, none the value
		{"for user", false},  // every row holds the value
		{"user", false},      // one word: the phrase is the word
		{"user 7", true},     // "7" is too short to be a word, but the value is rare
		{"reset user", true}, // two common words, never in this order
		{"zzz user", false},  // a word no row holds: few candidates
	} {
		got, err := s.needsPhrase(ctx, "subject", c.value)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("needsPhrase(%q) = %v, want %v", c.value, got, c.want)
		}
	}
	// The answer is kept for phraseTTL: with the index emptied, a new sample
	// would find nothing and answer false.
	now := time.Now()
	s.SetClock(func() time.Time { return now })
	s.phrases = nil
	if got, _ := s.needsPhrase(ctx, "subject", "USER FOR"); !got {
		t.Fatal("needsPhrase(USER FOR) = false before emptying the index")
	}
	if _, err := db.Exec(ctx, "INSERT INTO emails_fts (emails_fts) VALUES ('delete-all')"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.needsPhrase(ctx, "subject", "user for"); !got {
		t.Error("the answer was not kept: sampled again within phraseTTL")
	}
	now = now.Add(phraseTTL)
	if got, _ := s.needsPhrase(ctx, "subject", "USER FOR"); got {
		t.Error("the answer was kept past phraseTTL")
	}
}

// deliverTo stores one message from from with the subject in ns and returns
// its id.
func deliverTo(t testing.TB, in *Ingester, ns tenant.Namespace, from, subject string) string {
	t.Helper()
	raw := []byte(fmt.Sprintf("From: %s\r\nTo: x@default.localhost\r\nSubject: %s\r\n\r\nbody\r\n", from, subject))
	ids, err := in.Deliver(context.Background(), raw, Envelope{}, []Target{{Namespace: ns, Recipients: []string{"x@default.localhost"}}})
	if err != nil {
		t.Fatal(err)
	}
	return ids[0]
}

// indexThrough brings the SQLite search index up to the seq that the SQL
// expression over emails gives ("MAX(seq)": every email).
func indexThrough(t testing.TB, db *store.DB, seqExpr string) {
	t.Helper()
	ctx := context.Background()
	err := db.InTx(ctx, func(tx *store.Tx) error {
		var seq int64
		if err := tx.QueryRow(ctx, "SELECT "+seqExpr+" FROM emails").Scan(&seq); err != nil {
			return err
		}
		return catchUpIndex(ctx, tx, seq, true)
	})
	if err != nil {
		t.Fatal(err)
	}
}
