package httpx

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

// A body field of the wrong JSON type is named with what it must be, in the
// API's words: an integer field says "integer", never "of type number".
func TestDecodeJSONTypeErrors(t *testing.T) {
	var v struct {
		N *int     `json:"n"`
		U uint16   `json:"u"`
		F float64  `json:"f"`
		S string   `json:"s"`
		B *bool    `json:"b"`
		L []string `json:"l"`
		O struct {
			Inner int `json:"inner"`
		} `json:"o"`
	}
	for body, want := range map[string]string{
		`{"n": 3600.5}`:                 "n must be an integer",
		`{"n": "an hour"}`:              "n must be an integer",
		`{"n": true}`:                   "n must be an integer",
		`{"n": 1e30}`:                   "n is out of range",
		`{"n": 1e-3}`:                   "n must be an integer",
		`{"n": 1e99999}`:                "n must be an integer",
		`{"n": 99999999999999999999}`:   "n is out of range",
		`{"u": -1}`:                     "u is out of range",
		`{"u": 70000}`:                  "u is out of range",
		`{"f": "1.5"}`:                  "f must be a number",
		`{"s": 5}`:                      "s must be a string",
		`{"b": "yes"}`:                  "b must be a boolean",
		`{"l": "x"}`:                    "l must be an array",
		`{"l": [1]}`:                    "l must be a string",
		`{"o": []}`:                     "o must be an object",
		`{"o": {"inner": 0.5}}`:         "o.inner must be an integer",
		`{"n": 1, "s": "ok", "f": 2.5}`: "",
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		err := DecodeJSON(r, &v)
		var got string
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}

// A whole number fills an integer field however JSON writes it (3600,
// 3600.0, 3.6e3), the number in strings and the other fields left as sent.
func TestDecodeJSONWholeNumbers(t *testing.T) {
	type body struct {
		N *int    `json:"n"`
		F float64 `json:"f"`
		S string  `json:"s"`
		L []int   `json:"l"`
	}
	for in, want := range map[string]body{
		`{"n": 3600.0}`:                 {N: ptr(3600)},
		`{"n": 3.6e3}`:                  {N: ptr(3600)},
		`{"n": 36E+2}`:                  {N: ptr(3600)},
		`{"n": -0.0}`:                   {N: ptr(0)},
		`{"n": 5.000}`:                  {N: ptr(5)},
		`{"l": [1.0, 2e0, 3]}`:          {L: []int{1, 2, 3}},
		`{"f": 2.5, "n": 2.0}`:          {F: 2.5, N: ptr(2)},
		`{"s": "5.0 \\\" 6.0", "n": 1}`: {S: `5.0 \" 6.0`, N: ptr(1)},
	} {
		var got body
		if err := DecodeJSON(httptest.NewRequest("POST", "/", strings.NewReader(in)), &got); err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if fmt.Sprint(deref(got.N), got.F, got.S, got.L) != fmt.Sprint(deref(want.N), want.F, want.S, want.L) {
			t.Errorf("%s: %v %v %q %v, want %v %v %q %v", in, deref(got.N), got.F, got.S, got.L, deref(want.N), want.F, want.S, want.L)
		}
	}
	for _, bad := range []string{`{"n": 01.0}`, `{"n": 1.0.0}`, `{"n": .5}`} {
		if err := DecodeJSON(httptest.NewRequest("POST", "/", strings.NewReader(bad)), new(body)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func ptr(n int) *int { return &n }

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
