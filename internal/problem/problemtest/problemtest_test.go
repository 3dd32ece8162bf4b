package problemtest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/catchbox/catchbox/internal/problem"
)

// recorder is a testing.TB that keeps a failure instead of ending the test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(r)
}

// fails reports whether check failed r, and with what.
func fails(t *testing.T, check func(tb testing.TB)) (msg string) {
	r := &recorder{TB: t}
	defer func() {
		if v := recover(); v != nil && v != r {
			panic(v)
		}
		msg = r.failed
	}()
	check(r)
	return ""
}

func TestWant(t *testing.T) {
	err := fmt.Errorf("send: %w", problem.Errorf(problem.Conflict, "sms_number_inactive", "inactive"))
	if msg := fails(t, func(tb testing.TB) { Want(tb, err, problem.Conflict, "sms_number_inactive") }); msg != "" {
		t.Errorf("a matching problem failed: %s", msg)
	}
	for name, check := range map[string]func(tb testing.TB){
		"another kind":  func(tb testing.TB) { Want(tb, err, problem.NotFound, "sms_number_inactive") },
		"another code":  func(tb testing.TB) { Want(tb, err, problem.Conflict, "not_found") },
		"not a problem": func(tb testing.TB) { Want(tb, errors.New("disk full"), problem.Conflict, "x") },
		"no error":      func(tb testing.TB) { Want(tb, nil, problem.Invalid, "invalid_parameter") },
	} {
		if fails(t, check) == "" {
			t.Errorf("%s: passed", name)
		}
	}
}

func TestWantFields(t *testing.T) {
	var f problem.Fields
	f.AddCode("secret", "invalid_secret", "must be Base32")
	f.Add("digits", "must be 6 or 8")
	err := f.Err()
	if msg := fails(t, func(tb testing.TB) { WantFields(tb, err, "invalid_secret", "secret", "digits") }); msg != "" {
		t.Errorf("the fields as named failed: %s", msg)
	}
	for name, check := range map[string]func(tb testing.TB){
		"another order": func(tb testing.TB) { WantFields(tb, err, "invalid_secret", "digits", "secret") },
		"one missing":   func(tb testing.TB) { WantFields(tb, err, "invalid_secret", "secret") },
		"another code":  func(tb testing.TB) { WantFields(tb, err, "invalid_parameter", "secret", "digits") },
		"not invalid":   func(tb testing.TB) { WantFields(tb, problem.NotFoundf("device"), "not_found") },
	} {
		if fails(t, check) == "" {
			t.Errorf("%s: passed", name)
		}
	}
}

func TestWantFirst(t *testing.T) {
	var f problem.Fields
	f.Add("label", "is too long")
	f.Add("limit", "must be positive")
	err := f.Err()
	for _, field := range []string{"label", ""} {
		if msg := fails(t, func(tb testing.TB) { WantFirst(tb, err, problem.Invalid, "invalid_parameter", field) }); msg != "" {
			t.Errorf("field %q: %s", field, msg)
		}
	}
	for name, check := range map[string]func(tb testing.TB){
		"the second field": func(tb testing.TB) { WantFirst(tb, err, problem.Invalid, "invalid_parameter", "limit") },
		"no fields":        func(tb testing.TB) { WantFirst(tb, problem.NotFoundf("key"), problem.NotFound, "not_found", "id") },
		"another code":     func(tb testing.TB) { WantFirst(tb, err, problem.Invalid, "not_found", "label") },
	} {
		if fails(t, check) == "" {
			t.Errorf("%s: passed", name)
		}
	}
}
