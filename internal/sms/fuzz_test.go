package sms_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/catchbox/catchbox/internal/sms"
)

// FuzzParseSearch feeds arbitrary query strings to the message search parser: it
// must never panic, and what it accepts must be within the documented bounds.
func FuzzParseSearch(f *testing.F) {
	for _, s := range []string{"", "limit=100&offset=5", "body=%25_&from_number=%2B44%207700", "from_number=+1555",
		"direction=inbound&from_date=2026-11-01T14:00:00.5+02:00&to_date=2026-11-01T12:00:00Z&wait=1",
		"limit=0&offset=-1&wait=maybe", "from_number=%ZZ", "from_number=VERIFY"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		u, err := url.ParseRequestURI("/api/sms/+15550001111/messages?" + query)
		if err != nil {
			return // not a request line a server would accept
		}
		r := &http.Request{Method: http.MethodGet, URL: u}
		q, _, _, err := sms.ParseSearch(r)
		if err != nil {
			return
		}
		if q.Limit < 1 || q.Limit > sms.MaxLimit || q.Offset < 0 {
			t.Fatalf("accepted limit %d offset %d", q.Limit, q.Offset)
		}
		if q.Direction != "" && q.Direction != sms.DirectionInbound && q.Direction != sms.DirectionOutbound {
			t.Fatalf("accepted direction %q", q.Direction)
		}
		for _, p := range q.FromPrefixes {
			if p == "" {
				t.Fatal("an empty sender prefix matches everything")
			}
		}
	})
}
