package inbox

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/catchbox/catchbox/internal/store"
)

func FuzzParseSearch(f *testing.F) {
	for _, s := range []string{
		"limit=5&offset=2", "from_timestamp=0&to_timestamp=99", "subject_includes=%25_%22&wait=1",
		"to_addr_prefix=%FF%FE", "limit=-1&offset=abc&wait=maybe", "limit=99999999999999999999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest("GET", "/api/emails/ns/inbox", nil)
		r.URL.RawQuery = query
		q, opt, _, err := ParseSearch(r)
		if err != nil {
			return
		}
		if q.Limit < 1 || q.Limit > MaxLimit || q.Offset < 0 {
			t.Fatalf("accepted out-of-range page %d/%d", q.Limit, q.Offset)
		}
		if (q.FromTimestamp != nil && *q.FromTimestamp < 0) || (q.ToTimestamp != nil && *q.ToTimestamp < 0) {
			t.Fatal("accepted a negative timestamp")
		}
		if int64(q.Limit) != opt.Limit || int64(q.Offset) != opt.Offset {
			t.Fatal("options do not echo the applied page")
		}
		for _, s := range []string{q.SubjectIncludes, q.FromAddrIncludes, q.ToAddrPrefix} {
			if utf8.RuneCountInString(s) > MaxFilterRunes {
				t.Fatal("accepted an over-long filter")
			}
		}
		// The SQL built from any accepted query has one argument per placeholder.
		for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
			s := &Searcher{db: &store.DB{Dialect: d}, now: time.Now}
			for _, p := range []searchPlan{{}, {drive: true}} {
				where, args := s.where(q, p)
				if n := strings.Count(where, "?"); n != len(args) {
					t.Fatalf("%s %+v: %d placeholders, %d arguments: %s", d, p, n, len(args), where)
				}
			}
		}
		if hi, ok := store.PrefixUpperBound(strings.ToLower(q.ToAddrPrefix)); ok && hi <= strings.ToLower(q.ToAddrPrefix) {
			t.Fatalf("prefix upper bound %q not above %q", hi, q.ToAddrPrefix)
		}
	})
}
