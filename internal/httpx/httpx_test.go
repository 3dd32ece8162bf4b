package httpx

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/problem"
)

// answer is the status and body WriteError gives err.
func answer(err error) (int, string) {
	w := httptest.NewRecorder()
	WriteError(w, httptest.NewRequest("GET", "/", nil), err)
	return w.Code, w.Body.String()
}

// Every way of reporting invalid fields gives the contract's error body, the
// same for the same fields.
func TestFieldErrors(t *testing.T) {
	one := `{"statusCode":400,"error":"Bad Request","code":"invalid_parameter","message":"limit must be between 1 and 20",` +
		`"errors":[{"field":"limit","detail":[{"description":"must be between 1 and 20"}]}]}` + "\n"
	two := `{"statusCode":400,"error":"Bad Request","code":"invalid_secret","message":"secret is not Base32; digits must be 6 or 8",` +
		`"errors":[{"field":"secret","detail":[{"description":"is not Base32"}]},{"field":"digits","detail":[{"description":"must be 6 or 8"}]}]}` + "\n"
	var add Fields
	add.Add("limit", "must be between 1 and 20")
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"Invalid", Invalid("limit", "must be between 1 and 20"), one},
		{"a FieldError", &FieldError{Field: "limit", Detail: "must be between 1 and 20"}, one},
		{"a wrapped FieldError", fmt.Errorf("settings: %w", &FieldError{Field: "limit", Detail: "must be between 1 and 20"}), one},
		{"Fields.Add", add.Err(), one},
		{"the first field's code", Fields{{Field: "secret", Detail: "is not Base32", Code: "invalid_secret"},
			{Field: "digits", Detail: "must be 6 or 8", Code: "invalid_parameter"}}.Err(), two},
	} {
		if status, body := answer(c.err); status != 400 || body != c.want {
			t.Errorf("%s: %d %s\nwant 400 %s", c.name, status, body, c.want)
		}
	}
	if err := (Fields{}).Err(); err != nil {
		t.Errorf("no fields: %v", err)
	}
	if (&FieldError{Field: "quota_limit", Detail: "must be between 1 and 5"}).Error() != "quota_limit must be between 1 and 5" {
		t.Error("FieldError's text is not the field and its detail")
	}
}

// A refusal that says when to try again is answered with Retry-After, in
// whole seconds rounded up; one that says nothing has none.
func TestRetryAfter(t *testing.T) {
	for _, c := range []struct {
		after time.Duration
		want  string
	}{{0, ""}, {time.Millisecond, "1"}, {1500 * time.Millisecond, "2"}, {time.Hour, "3600"}} {
		pe := problem.Errorf(problem.TooMany, "rate_limited", "slow down")
		pe.RetryAfter = c.after
		w := httptest.NewRecorder()
		WriteError(w, httptest.NewRequest("GET", "/", nil), pe)
		if got := w.Header().Get("Retry-After"); w.Code != 429 || got != c.want {
			t.Errorf("retry after %v: %d, Retry-After %q, want 429 %q", c.after, w.Code, got, c.want)
		}
	}
}
