package inbox

import (
	"context"
	"fmt"
	"testing"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// FuzzSubstringSearch runs any subject_includes and from_addr_includes value
// (the API passes any string of up to 998 characters) through the trigram
// index and row by row over the same emails: neither may fail, and both must
// find the same emails.
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
		raw := []byte(fmt.Sprintf("From: Sender%d <S%d.sender@Example.com>\r\nTo: x@default.localhost\r\nSubject: %s\r\n\r\nbody\r\n", i, i, s))
		if _, err := in.Deliver(ctx, raw, Envelope{}, []Target{{Namespace: ns, Recipients: []string{"x@default.localhost"}}}); err != nil {
			f.Fatal(err)
		}
	}
	// Half of them into the index, half past it.
	err := db.InTx(ctx, func(tx *store.Tx) error {
		var seq int64
		if err := tx.QueryRow(ctx, "SELECT MIN(seq) + 2 FROM emails").Scan(&seq); err != nil {
			return err
		}
		return catchUpIndex(ctx, tx, seq, true)
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"order 0042317", "password reset", "ÉTÉ", "\"quoted\"", "AND OR", "ß", "σίσυφος", "i̇stanbul", "kelvin", "k-sign", "a*b", "(d) {e}", "col: x", "\t", "  ", "sender@example", "\x00", "\xff\xfe", `""`, "NEAR(a b)"} {
		f.Add(s)
	}
	indexed, scanned := NewSearcher(db), NewSearcher(db)
	indexed.scanLimit = -1
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
		raw := []byte(fmt.Sprintf("From: a@example.com\r\nTo: x@default.localhost\r\nSubject: Reset for user %d\r\n\r\nbody\r\n", i))
		if _, err := in.Deliver(ctx, raw, Envelope{}, []Target{{Namespace: ns, Recipients: []string{"x@default.localhost"}}}); err != nil {
			t.Fatal(err)
		}
	}
	err := db.InTx(ctx, func(tx *store.Tx) error {
		var last int64
		if err := tx.QueryRow(ctx, "SELECT MAX(seq) FROM emails").Scan(&last); err != nil {
			return err
		}
		return catchUpIndex(ctx, tx, last, true)
	})
	if err != nil {
		t.Fatal(err)
	}
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
}
