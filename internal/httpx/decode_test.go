package httpx

import (
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
		`{"n": 3600.0}`:                 "n must be an integer written without a decimal point or exponent",
		`{"n": 1e3}`:                    "n must be an integer written without a decimal point or exponent",
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
