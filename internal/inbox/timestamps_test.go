package inbox_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// from_timestamp and to_timestamp are numbers (the API description): a
// fraction is read to the millisecond and both bounds are inclusive; a whole
// number of seconds as to_timestamp includes its whole second. Each case runs
// with and without a subject filter, so that both the SQL search and, on
// SQLite, the in-memory copy of the columns are checked.
func TestFractionalTimestamps(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		for _, ms := range []int{10_000, 10_250, 10_999, 11_000} {
			e.clock.Store(base.Add(time.Duration(ms) * time.Millisecond).UnixMilli())
			e.deliver(e.ns, msg{from: "a@example.com", to: "x@default.localhost", subject: fmt.Sprintf("stamp %d", ms), body: "x"})
		}
		e.clock.Store(base.Add(time.Minute).UnixMilli())
		b := base.Unix()
		for _, c := range []struct {
			query string
			want  string // subjects' milliseconds, newest first
		}{
			{fmt.Sprintf("from_timestamp=%d.25", b+10), "11000 10999 10250"},
			{fmt.Sprintf("from_timestamp=%d.2509", b+10), "11000 10999 10250"}, // read to the millisecond
			{fmt.Sprintf("from_timestamp=%d.251", b+10), "11000 10999"},
			{fmt.Sprintf("to_timestamp=%d.25", b+10), "10250 10000"},
			{fmt.Sprintf("to_timestamp=%d.249", b+10), "10000"},
			{fmt.Sprintf("to_timestamp=%d", b+10), "10999 10250 10000"}, // the whole second
			{fmt.Sprintf("to_timestamp=%d.000", b+10), "10999 10250 10000"},
			{fmt.Sprintf("to_timestamp=%d.001", b+10), "10000"},
			{fmt.Sprintf("from_timestamp=%d.999&to_timestamp=%d.999", b+10, b+10), "10999"},
			{fmt.Sprintf("from_timestamp=%d&to_timestamp=%d", b+11, b+11), "11000"},
			{fmt.Sprintf("from_timestamp=%d.5&to_timestamp=%d.25", b+10, b+10), ""},
		} {
			for _, extra := range []string{"", "&subject_includes=stamp"} {
				var r searchResp
				if resp := e.get(e.key, "/api/emails/default/inbox?"+c.query+extra, &r); resp.StatusCode != 200 {
					t.Fatalf("%s: status %d", c.query, resp.StatusCode)
				}
				var got []string
				for _, em := range r.Data {
					got = append(got, strings.TrimPrefix(em.Subject, "stamp "))
				}
				if strings.Join(got, " ") != c.want {
					t.Errorf("%s%s: got %q, want %q", c.query, extra, got, c.want)
				}
			}
		}

		// options echoes the applied values: to the millisecond, as numbers.
		body := e.raw(fmt.Sprintf("/api/emails/default/inbox?from_timestamp=%d.2500&to_timestamp=%d.1239", b+10, b+11))
		for _, want := range []string{fmt.Sprintf(`"from_timestamp":%d.25`, b+10), fmt.Sprintf(`"to_timestamp":%d.123`, b+11)} {
			if !strings.Contains(body, want) {
				t.Errorf("options do not echo %s: %s", want, body)
			}
		}
	})
}

func TestTimestampValidation(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	e := newEnv(t, db)
	const number = "must be a number of seconds such as 1795579364 or 1795579364.5"
	const bounds = "must be between 0 and 1099511627776"
	for _, c := range []struct{ query, detail string }{
		{"from_timestamp=-5", bounds},
		{"from_timestamp=-0.5", bounds},
		{"to_timestamp=1099511627776.001", bounds},
		{"to_timestamp=99999999999999999999", bounds},
		{"from_timestamp=1.7955e9", number},
		{"from_timestamp=NaN", number},
		{"to_timestamp=Infinity", number},
		{"to_timestamp=0x10", number},
		{"to_timestamp=5.", number},
		{"to_timestamp=.5", number},
		{"to_timestamp=1,5", number},
	} {
		var r errResp
		resp := e.get(e.key, "/api/emails/default/inbox?"+c.query, &r)
		field, _, _ := strings.Cut(c.query, "=")
		if resp.StatusCode != 400 || len(r.Errors) != 1 || r.Errors[0].Field != field || r.Errors[0].Detail[0].Description != c.detail {
			t.Errorf("%s: %d %+v, want 400 %s %q", c.query, resp.StatusCode, r.Errors, field, c.detail)
		}
	}
	// An empty value is no bound, as for every parameter.
	for _, q := range []string{"from_timestamp=0", "to_timestamp=1099511627776", "to_timestamp=1099511627775.999", "from_timestamp=-0",
		"to_timestamp=", "from_timestamp=&to_timestamp="} {
		if resp := e.get(e.key, "/api/emails/default/inbox?"+q, nil); resp.StatusCode != 200 {
			t.Errorf("%s: status %d, want 200", q, resp.StatusCode)
		}
	}
}

// raw is the body of a successful GET with the organisation's key.
func (e *env) raw(path string) string {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	req.Header.Set("X-Api-Key", e.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !json.Valid(body) {
		e.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return string(body)
}
