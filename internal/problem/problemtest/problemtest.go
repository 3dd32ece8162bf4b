// Package problemtest checks, in tests, the errors that operations return:
// that an error is a *problem.Error of the kind and code the contract gives,
// and which fields of the request it names. A test that calls an operation
// directly (no HTTP) asserts its refusals with it, so the words of a failure
// are written once.
package problemtest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/catchbox/catchbox/internal/problem"
)

// kindNames name the kinds in failure messages.
var kindNames = [...]string{
	problem.Invalid:         "Invalid",
	problem.Unauthenticated: "Unauthenticated",
	problem.Forbidden:       "Forbidden",
	problem.NotFound:        "NotFound",
	problem.Conflict:        "Conflict",
	problem.Gone:            "Gone",
	problem.TooLarge:        "TooLarge",
	problem.TooMany:         "TooMany",
	problem.NotImplemented:  "NotImplemented",
	problem.Unavailable:     "Unavailable",
}

func kindName(k problem.Kind) string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Want fails t unless err has a *problem.Error of kind and code in its
// chain, and returns it.
func Want(t testing.TB, err error, kind problem.Kind, code string) *problem.Error {
	t.Helper()
	var pe *problem.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want a problem of kind %s and code %s", err, err, kindName(kind), code)
	}
	if pe.Kind != kind || pe.Code != code {
		t.Fatalf("problem %s %s (%q), want %s %s", kindName(pe.Kind), pe.Code, pe.Message, kindName(kind), code)
	}
	return pe
}

// WantFirst is Want, and fails t unless the problem names field first among
// its fields (no check when field is "").
func WantFirst(t testing.TB, err error, kind problem.Kind, code, field string) *problem.Error {
	t.Helper()
	pe := Want(t, err, kind, code)
	if field != "" && (len(pe.Fields) == 0 || pe.Fields[0].Field != field) {
		t.Fatalf("problem names fields %+v, want %s first (%q)", pe.Fields, field, pe.Message)
	}
	return pe
}

// WantFields fails t unless err is an Invalid problem of code that names
// exactly fields, in that order (one entry per mistake of the request), and
// returns it.
func WantFields(t testing.TB, err error, code string, fields ...string) *problem.Error {
	t.Helper()
	pe := Want(t, err, problem.Invalid, code)
	got := make([]string, len(pe.Fields))
	for i, f := range pe.Fields {
		got[i] = f.Field
	}
	if !slices.Equal(got, fields) {
		t.Fatalf("problem names fields %q, want %q (%q)", got, fields, pe.Message)
	}
	return pe
}
