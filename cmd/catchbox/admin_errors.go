package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/tenant"
)

// adminErrorJSON is how an admin command run with --json reports a failure
// (contract section 3): one JSON object on stdout, where the script that
// asked for JSON reads, and a non-zero exit status. code is stable, for
// scripts to branch on; message is for people and may change.
type adminErrorJSON struct {
	Error   string `json:"error"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// adminErrorCodes maps what an admin command can fail with to its stable code
// and the category (error) it falls in; the first match wins. An error none
// matches is "failed".
var adminErrorCodes = []struct {
	err      error
	code     string
	category string
}{
	{errNoStore, "store_not_found", "Not Found"},
	{tenant.ErrAlreadyRevoked, "already_revoked", "Conflict"},
	{tenant.ErrNameTaken, "name_taken", "Conflict"},
	{tenant.ErrNamespaceName, "invalid_argument", "Bad Request"},
	{tenant.ErrReserved, "invalid_argument", "Bad Request"},
	{errUsage, "invalid_argument", "Bad Request"},
	{sms.ErrPhoneTaken, "phone_number_taken", "Conflict"},
	{sms.ErrPhone, "invalid_argument", "Bad Request"},
	{tenant.ErrNotFound, "not_found", "Not Found"},
}

// errUsage is a command line that cannot be parsed or names a bad value.
var errUsage = errors.New("invalid command line")

// writeAdminError writes err as the --json error object.
func writeAdminError(w io.Writer, err error) {
	e := adminErrorJSON{Error: "Failed", Code: "failed", Message: err.Error()}
	for _, c := range adminErrorCodes {
		if errors.Is(err, c.err) {
			e.Error, e.Code = c.category, c.code
			break
		}
	}
	var pe *problem.Error
	var fe *httpx.FieldError
	var ae argError
	if e.Code == "failed" && errors.As(err, &ae) {
		e.Error, e.Code = "Bad Request", "invalid_argument"
	} else if e.Code == "failed" && errors.As(err, &pe) {
		e.Error, e.Code = http.StatusText(httpx.FromProblem(pe).Status), pe.Code
	} else if e.Code == "failed" && errors.As(err, &fe) {
		e.Error, e.Code = "Bad Request", "invalid_argument"
	}
	b, _ := json.Marshal(e)
	fmt.Fprintln(w, string(b))
}

// argError is a value of the command line (a namespace name, a retention, a
// label) that an operation refused as an invalid field: --json names it
// invalid_argument, as every bad value of the command line, and its text is
// the operation's.
type argError struct{ err *problem.Error }

func (e argError) Error() string { return e.err.Error() }
func (e argError) Unwrap() error { return e.err }

// asArgument is err as an argError when an operation refused the request's
// fields, else err as it is.
func asArgument(err error) error {
	var pe *problem.Error
	if errors.As(err, &pe) && pe.Kind == problem.Invalid {
		return argError{pe}
	}
	return err
}
