package httpx

import (
	"net/http/httptest"
	"net/url"
	"testing"
)

func TestOptSeconds(t *testing.T) {
	const bounds = "must be between 0 and 1099511627776"
	for _, tc := range []struct {
		raw   string
		ms    int64
		whole bool
		err   string
	}{
		{raw: "0", ms: 0, whole: true},
		{raw: "1795579364", ms: 1795579364000, whole: true},
		{raw: "1795579364.5", ms: 1795579364500},
		{raw: "1795579364.000", ms: 1795579364000, whole: true},
		{raw: "1795579364.0019", ms: 1795579364001},
		{raw: "1795579364.9999", ms: 1795579364999},
		{raw: " 12.25 ", ms: 12250},
		{raw: "1099511627776", ms: 1099511627776000, whole: true},
		{raw: "-0", ms: 0, whole: true},
		{raw: "1099511627776.001", err: bounds},
		{raw: "1099511627777", err: bounds},
		{raw: "-1", err: bounds},
		{raw: "-0.001", err: bounds},
		{raw: "99999999999999999999", err: bounds},
		{raw: "1e3", err: "must be a number of seconds such as 1795579364 or 1795579364.5"},
		{raw: "NaN", err: "must be a number of seconds such as 1795579364 or 1795579364.5"},
		{raw: "+Inf", err: "must be a number of seconds such as 1795579364 or 1795579364.5"},
		{raw: "1.", err: "must be a number of seconds such as 1795579364 or 1795579364.5"},
		{raw: ".1", err: "must be a number of seconds such as 1795579364 or 1795579364.5"},
		{raw: "1.2.3", err: "must be a number of seconds such as 1795579364 or 1795579364.5"},
	} {
		r := httptest.NewRequest("GET", "/?t="+url.QueryEscape(tc.raw), nil)
		q := NewQuery(r)
		ms, whole := q.OptSeconds("t", 1<<40)
		fields := q.Fields()
		switch {
		case tc.err != "":
			if ms != nil || len(fields) != 1 || fields[0].Detail != tc.err {
				t.Errorf("%q: %v %v, want the error %q", tc.raw, ms, fields, tc.err)
			}
		case len(fields) != 0 || ms == nil || *ms != tc.ms || whole != tc.whole:
			t.Errorf("%q: %v %v %v, want %d ms, whole %v", tc.raw, ms, whole, fields, tc.ms, tc.whole)
		}
	}
	for _, target := range []string{"/", "/?t=", "/?t=&u=1"} {
		q := NewQuery(httptest.NewRequest("GET", target, nil))
		if ms, _ := q.OptSeconds("t", 1000); ms != nil || q.Err() != nil {
			t.Errorf("%s: an absent or empty parameter is %v, %v", target, ms, q.Err())
		}
	}
}

func TestSeconds(t *testing.T) {
	for ms, want := range map[int64]string{0: "0", 1795579364000: "1795579364", 1795579364500: "1795579364.5",
		1795579364120: "1795579364.12", 1795579364001: "1795579364.001"} {
		if got := Seconds(ms); string(got) != want {
			t.Errorf("Seconds(%d) = %s, want %s", ms, got, want)
		}
	}
}

// Integer parameters: a whole number, written with a fraction of zeros or
// not; an empty value is the default, as an absent one.
func TestInt(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want int64
		err  string
	}{
		{raw: "5", want: 5},
		{raw: "5.0", want: 5},
		{raw: " 5.000 ", want: 5},
		{raw: "20.0", want: 20},
		{raw: "", want: 10},
		{raw: "5.5", err: "must be an integer"},
		{raw: "5.01", err: "must be an integer"},
		{raw: "5.", err: "must be an integer"},
		{raw: ".0", err: "must be an integer"},
		{raw: "5e0", err: "must be an integer"},
		{raw: "five", err: "must be an integer"},
		{raw: "21.0", err: "must be between 1 and 20"},
		{raw: "0.0", err: "must be between 1 and 20"},
	} {
		q := NewQuery(httptest.NewRequest("GET", "/?limit="+url.QueryEscape(tc.raw), nil))
		got := q.Int("limit", 10, 1, 20)
		fields := q.Fields()
		switch {
		case tc.err != "":
			if len(fields) != 1 || fields[0].Detail != tc.err {
				t.Errorf("%q: %d %v, want the error %q", tc.raw, got, fields, tc.err)
			}
		case len(fields) != 0 || got != tc.want:
			t.Errorf("%q: %d %v, want %d", tc.raw, got, fields, tc.want)
		}
	}
}

// An empty value is no value, for every kind of parameter.
func TestEmptyIsAbsent(t *testing.T) {
	q := NewQuery(httptest.NewRequest("GET", "/?s=&n=&b=&o=", nil))
	if q.Has("s") {
		t.Error("Has: an empty value is present")
	}
	if v, ok := q.String("s", 10); ok || v != "" {
		t.Errorf("String: %q %v", v, ok)
	}
	if v := q.OptInt("o", 0, 5); v != nil {
		t.Errorf("OptInt: %v", *v)
	}
	if v, present := q.Bool("b"); v || present {
		t.Errorf("Bool: %v %v", v, present)
	}
	if err := q.Err(); err != nil {
		t.Errorf("empty values refused: %v", err)
	}
}
