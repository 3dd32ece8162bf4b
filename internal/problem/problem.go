// Package problem is the error vocabulary of Catchbox's operations: what went
// wrong with a user's action, in words every listener can answer with. An
// operation (send an email, set a namespace's fault rules, add a device) returns
// a *Error of a Kind, or the invalid fields of its request; the HTTP API turns
// the Kind into a status and the contract's error body, the dashboard into a
// page, IMAP and POP3 into their own replies. The package imports nothing of
// Catchbox, so that any domain package can use it.
package problem

import (
	"fmt"
	"strings"
	"time"
)

// Kind is the class of a failure, independent of any protocol.
type Kind uint8

// The kinds an operation can fail with. Each maps to one HTTP status
// (internal/httpx); the zero Kind is Invalid.
const (
	Invalid         Kind = iota // the request is malformed or a field is wrong (400)
	Unauthenticated             // no valid credentials (401)
	Forbidden                   // the caller may not do this (403)
	NotFound                    // the thing does not exist or the caller cannot see it (404)
	Conflict                    // the thing's state does not allow the action (409)
	Gone                        // the thing existed and its content was removed (410)
	TooLarge                    // the input is over a size limit (413)
	TooMany                     // a rate or count limit was reached (429)
	NotImplemented              // the feature is not configured on this service (501)
	Unavailable                 // the service cannot do it now; retry later (503)
)

// FieldError is one rejected input value, named by its API field
// ("rules[2].reply"): one entry of the error body's errors list.
type FieldError struct {
	Field  string
	Detail string // what is wrong, read after the field's name: "must be at least 0"
	Code   string // the API error code; "" is invalid_parameter
}

func (e *FieldError) Error() string { return e.Field + " " + e.Detail }

// Fields collects the invalid fields of one request, so that a client learns
// of every mistake at once.
type Fields []FieldError

// Add records that field is invalid, with the code invalid_parameter.
func (f *Fields) Add(field, detail string) { *f = append(*f, FieldError{Field: field, Detail: detail}) }

// AddCode records that field is invalid, with its own error code.
func (f *Fields) AddCode(field, code, detail string) {
	*f = append(*f, FieldError{Field: field, Detail: detail, Code: code})
}

// Err is the Invalid error for every field collected, or nil when there is
// none. Its code is that of the first field; its message names every field.
func (f Fields) Err() error {
	if len(f) == 0 {
		return nil
	}
	return f.Error()
}

// Error is Err's value as an *Error, for callers that need the type.
func (f Fields) Error() *Error {
	msgs := make([]string, len(f))
	for i := range f {
		msgs[i] = f[i].Error()
	}
	code := f[0].Code
	if code == "" {
		code = "invalid_parameter"
	}
	return &Error{Kind: Invalid, Code: code, Message: strings.Join(msgs, "; "), Fields: f}
}

// Error is a failed action: its kind, a stable snake_case code for programs and
// a sentence for people. It carries no internal detail; wrap the cause in a
// log line, not here.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Fields  []FieldError
	// RetryAfter is how long the caller should wait before the action can
	// succeed (a TooMany or Unavailable refusal); 0 says nothing. HTTP
	// answers it as Retry-After.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Message }

// Errorf builds an *Error.
func Errorf(kind Kind, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// NotFoundf is the NotFound error with the code not_found: "email not found".
func NotFoundf(what string) *Error {
	return &Error{Kind: NotFound, Code: "not_found", Message: what + " not found"}
}

// Field is the Invalid error for one bad field.
func Field(field, detail string) *Error {
	return Fields{{Field: field, Detail: detail}}.Error()
}
