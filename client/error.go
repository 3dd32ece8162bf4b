package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Error is a failed API call: the error body every Catchbox failure carries
// (docs/api.md, "Errors"), or, when a proxy or a crash left no such body, the
// status and the start of what came instead.
type Error struct {
	StatusCode int          `json:"statusCode"`
	Status     string       `json:"error"`   // the reason phrase: "Not Found"
	Code       string       `json:"code"`    // stable, snake_case: "not_found", "invalid_parameter"
	Message    string       `json:"message"` // for people; its wording may change
	Errors     []FieldError `json:"errors,omitempty"`
	// RequestID is the server's X-Request-Id: quote it when reporting a
	// problem (the server logs it with every failure).
	RequestID string `json:"request_id,omitempty"`
}

// FieldError is one field, query or path parameter at fault in a validation
// failure.
type FieldError struct {
	Field  string `json:"field"`
	Detail []struct {
		Description string `json:"description"`
	} `json:"detail"`
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "catchbox: %d", e.StatusCode)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.RequestID != "" {
		b.WriteString(" (request " + e.RequestID + ")")
	}
	return b.String()
}

// ErrorCode returns the API's error code of err ("not_found",
// "invalid_parameter", ...), or "" when err is not an *Error.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// readError reads a failed response into an *Error.
func readError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &Error{}
	if json.Unmarshal(body, e) != nil || e.Code == "" {
		e = &Error{Status: http.StatusText(resp.StatusCode), Message: strings.TrimSpace(string(body))}
		if len(e.Message) > 200 {
			e.Message = e.Message[:200]
		}
	}
	e.StatusCode = resp.StatusCode
	if e.RequestID == "" {
		e.RequestID = resp.Header.Get("X-Request-Id")
	}
	return e
}
