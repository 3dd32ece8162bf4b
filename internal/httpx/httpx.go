// Package httpx holds the HTTP conventions every handler shares: the contract's
// error body, JSON encoding and decoding, query-parameter parsing with per-field
// validation errors, request ids, and time formatting. Domain packages own their
// handlers and use these helpers; internal/httpapi wires the routes.
package httpx

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/big"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/catchbox/catchbox/internal/problem"
)

// MaxBodyBytes is the largest request body accepted (contract section 4).
const MaxBodyBytes = 8 << 20

// FieldError is one rejected input value, named by its API field. It is
// problem.FieldError: domain checks return it without knowing of HTTP, and
// WriteError answers it as a 400.
type FieldError = problem.FieldError

// Fields collects the invalid fields of one request (problem.Fields); its Err
// is a problem.Error of kind Invalid, answered as a 400 that names each field.
type Fields = problem.Fields

// Error is a failure answered with the contract's error body.
type Error struct {
	Status  int
	Code    string
	Message string
	Fields  []FieldError
	// RetryAfter, when positive, is answered as the Retry-After header.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Message }

// Errorf builds an *Error.
func Errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// NotFound is the 404 for a resource that does not exist or that the key cannot see.
func NotFound(what string) *Error {
	return &Error{Status: http.StatusNotFound, Code: "not_found", Message: what + " not found"}
}

// Invalid is a 400 for one bad field: "limit must be between 1 and 20".
func Invalid(field, detail string) error {
	return problem.Field(field, detail)
}

// statusOf is the HTTP status of each kind of failed operation.
var statusOf = [...]int{
	problem.Invalid:         http.StatusBadRequest,
	problem.Unauthenticated: http.StatusUnauthorized,
	problem.Forbidden:       http.StatusForbidden,
	problem.NotFound:        http.StatusNotFound,
	problem.Conflict:        http.StatusConflict,
	problem.Gone:            http.StatusGone,
	problem.TooLarge:        http.StatusRequestEntityTooLarge,
	problem.TooMany:         http.StatusTooManyRequests,
	problem.NotImplemented:  http.StatusNotImplemented,
	problem.Unavailable:     http.StatusServiceUnavailable,
}

// AsError is the HTTP form of err when err says what the client did wrong or
// why the action failed (an *Error, a *problem.Error or a *FieldError
// anywhere in its chain), and nil for an internal failure.
func AsError(err error) *Error {
	var he *Error
	var pe *problem.Error
	var fe *FieldError
	switch {
	case errors.As(err, &he):
		return he
	case errors.As(err, &pe):
		return FromProblem(pe)
	case errors.As(err, &fe):
		return FromProblem(Fields{*fe}.Error())
	}
	return nil
}

// FromProblem is the HTTP form of an operation's failure.
func FromProblem(pe *problem.Error) *Error {
	status := http.StatusInternalServerError
	if int(pe.Kind) < len(statusOf) {
		status = statusOf[pe.Kind]
	}
	return &Error{Status: status, Code: pe.Code, Message: pe.Message, Fields: pe.Fields, RetryAfter: pe.RetryAfter}
}

type errorDetail struct {
	Description string `json:"description"`
}

type errorField struct {
	Field  string        `json:"field"`
	Detail []errorDetail `json:"detail"`
}

type errorBody struct {
	StatusCode int          `json:"statusCode"`
	Error      string       `json:"error"`
	Code       string       `json:"code"`
	Message    string       `json:"message"`
	Errors     []errorField `json:"errors,omitempty"`
	RequestID  string       `json:"request_id,omitempty"`
}

// WriteError answers err with the contract's error body. An *Error is sent as it
// is and a *FieldError as a 400; anything else is logged and answered 500 with
// only the request id, so no internal detail reaches a client.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	he := AsError(err)
	switch {
	case he != nil:
	default:
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			return // the client went away; nobody to answer
		}
		slog.Error("Request failed", "method", r.Method, "path", r.URL.Path, "request_id", RequestID(r.Context()), "err", err)
		he = &Error{Status: http.StatusInternalServerError, Code: "internal_error",
			Message: "internal error; quote the request id when reporting it"}
	}
	if n := Noted(r.Context()); n != nil {
		n.Code = he.Code
	}
	body := errorBody{StatusCode: he.Status, Error: http.StatusText(he.Status), Code: he.Code, Message: he.Message}
	for _, f := range he.Fields {
		body.Errors = append(body.Errors, errorField{Field: f.Field, Detail: []errorDetail{{Description: f.Detail}}})
	}
	if he.Status >= 500 {
		body.RequestID = RequestID(r.Context())
	}
	if he.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `ApiKey header="X-Api-Key"`)
	}
	if he.RetryAfter > 0 {
		// Whole seconds, rounded up (RFC 9110 section 10.2.3).
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(he.RetryAfter.Seconds()))))
	}
	WriteJSON(w, he.Status, body)
}

// WriteJSON writes v as the JSON response body.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// Handler is an http.Handler that returns its error instead of writing it.
type Handler func(w http.ResponseWriter, r *http.Request) error

func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h(w, r); err != nil {
		WriteError(w, r, err)
	}
}

// DecodeJSON reads a JSON object body into v. Unknown fields are ignored (contract
// section 4); a body that is not JSON, or a field of the wrong type, is a 400 that
// names the field; a body over MaxBodyBytes is a 413. A whole number written with
// a fraction or an exponent (3600.0, 3.6e3) fills an integer field (wholeNumbers).
func DecodeJSON(r *http.Request, v any) error {
	body := http.MaxBytesReader(nil, r.Body, MaxBodyBytes)
	data, err := io.ReadAll(body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return Errorf(http.StatusRequestEntityTooLarge, "body_too_large", "request body is larger than %d bytes", MaxBodyBytes)
		}
		return Errorf(http.StatusBadRequest, "invalid_body", "request body could not be read")
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		data = []byte("{}")
	}
	if err := json.Unmarshal(wholeNumbers(data), v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return Invalid(te.Field, TypeDetail(te))
		}
		return Errorf(http.StatusBadRequest, "invalid_json", "request body is not a valid JSON object")
	}
	return nil
}

// TypeDetail says what a body field that JSON could not decode must be, in
// the words of the API rather than Go's: an integer field given 3600.5 or
// "an hour" "must be an integer", one given a whole number too large for it
// "is out of range"; other fields "must be a number", "a string", "a boolean",
// "an array" or "an object".
func TypeDetail(te *json.UnmarshalTypeError) string {
	switch kind := te.Type.Kind(); {
	case kind >= reflect.Int && kind <= reflect.Uint64:
		lit, isNumber := strings.CutPrefix(te.Value, "number ")
		if isNumber && isDigits(strings.TrimPrefix(lit, "-")) {
			return "is out of range"
		}
		return "must be an integer"
	case kind == reflect.Float32 || kind == reflect.Float64:
		return "must be a number"
	case kind == reflect.String:
		return "must be a string"
	case kind == reflect.Bool:
		return "must be a boolean"
	case kind == reflect.Slice || kind == reflect.Array:
		return "must be an array"
	case kind == reflect.Struct || kind == reflect.Map:
		return "must be an object"
	}
	return "has the wrong type"
}

// jsonNumber is the grammar of a JSON number (RFC 8259, section 6), split into
// its integer part, fraction and exponent.
var jsonNumber = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?([0-9]+))?$`)

// wholeNumbers rewrites every number of a JSON text whose value is whole but
// which is written with a fraction or an exponent (3600.0, 3.6e3, 1e30) as
// that whole number in plain digits, so that an integer field takes it: JSON
// has one number type, and the API description types these fields "number".
// A number that is not whole (3600.5), text that is not JSON, and strings are
// left as they are. Exponents of more than four digits are left alone too:
// no field holds such a number, and writing it out would take a gigabyte.
func wholeNumbers(data []byte) []byte {
	var out []byte // nil while nothing changed
	last := 0
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		case c == '"':
			inString = true
			continue
		case c != '-' && (c < '0' || c > '9'):
			continue
		}
		j := i
		for j < len(data) && strings.IndexByte("+-.0123456789eE", data[j]) >= 0 {
			j++
		}
		if w, ok := wholeNumber(data[i:j]); ok {
			out = append(append(out, data[last:i]...), w...)
			last = j
		}
		i = j - 1
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

// wholeNumber is lit in plain digits when lit is a JSON number with a fraction
// or an exponent whose value is whole.
func wholeNumber(lit []byte) ([]byte, bool) {
	m := jsonNumber.FindSubmatch(lit)
	if m == nil || !bytes.ContainsAny(lit, ".eE") || len(m[1]) > 4 {
		return nil, false
	}
	var r big.Rat
	if _, ok := r.SetString(string(lit)); !ok || !r.IsInt() {
		return nil, false
	}
	return r.Num().Append(nil, 10), true
}

// Query parses query parameters, collecting one FieldError per bad parameter so a
// client learns of every mistake at once.
type Query struct {
	r      *http.Request
	fields Fields
}

// NewQuery starts parsing r's query string.
func NewQuery(r *http.Request) *Query { return &Query{r: r} }

func (q *Query) fail(field, detail string) { q.fields.Add(field, detail) }

// Has reports whether the parameter is given a value. An empty value
// (`?from_timestamp=`, what an HTML form sends for a field left empty) counts
// as absent, for every parameter: a client that leaves a filter empty means no
// filter, not a malformed one.
func (q *Query) Has(name string) bool { return q.r.URL.Query().Get(name) != "" }

// String returns the parameter, or "" and false when absent. A value longer than
// max runes is an error, and so is one that is not UTF-8 text or holds a NUL:
// no stored text can contain either, and the stores refuse them in a query
// (PostgreSQL) or stop reading the query at the NUL (SQLite's FTS5).
func (q *Query) String(name string, max int) (string, bool) {
	if !q.Has(name) {
		return "", false
	}
	v := q.r.URL.Query().Get(name)
	if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
		q.fail(name, "must be UTF-8 text without NUL characters")
		return "", false
	}
	if max > 0 && len([]rune(v)) > max {
		q.fail(name, fmt.Sprintf("must be at most %d characters", max))
		return "", false
	}
	return v, true
}

// Int returns the integer parameter (def when absent), checked against [min, max]
// (max < min means no upper bound). Out of range is an error, never clamped. A
// whole number may be written with a fraction of zeros (5.0, 5.00), since the
// API description types these parameters "number"; 5.5 is an error, and so are
// an exponent, "5." and ".0", which only a mistake writes.
func (q *Query) Int(name string, def, min, max int64) int64 {
	if !q.Has(name) {
		return def
	}
	raw := strings.TrimSpace(q.r.URL.Query().Get(name))
	if whole, frac, ok := strings.Cut(raw, "."); ok && isDigits(frac) && strings.Trim(frac, "0") == "" {
		raw = whole
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		q.fail(name, "must be an integer")
		return def
	}
	if n < min || (max >= min && n > max) {
		if max >= min {
			q.fail(name, fmt.Sprintf("must be between %d and %d", min, max))
		} else {
			q.fail(name, fmt.Sprintf("must be at least %d", min))
		}
		return def
	}
	return n
}

// OptInt is Int for an optional parameter: nil when absent.
func (q *Query) OptInt(name string, min, max int64) *int64 {
	if !q.Has(name) {
		return nil
	}
	before := len(q.fields)
	n := q.Int(name, 0, min, max)
	if len(q.fields) > before {
		return nil
	}
	return &n
}

// OptSeconds returns the parameter, Unix seconds with an optional decimal
// fraction (1795579364 or 1795579364.5), in Unix milliseconds: nil when
// absent; digits past the third decimal are dropped, since times are stored
// and compared at millisecond precision (contract section 4). whole reports
// that the value is a whole number of seconds. It must lie in [0, max]
// seconds. Only plain decimal notation is read: a sign, an exponent (1.7e9),
// NaN, Infinity or a bare "5." is refused, since no client writes a Unix time
// that way except by mistake.
func (q *Query) OptSeconds(name string, max int64) (ms *int64, whole bool) {
	if !q.Has(name) {
		return nil, false
	}
	raw := strings.TrimSpace(q.r.URL.Query().Get(name))
	outOfRange := fmt.Sprintf("must be between 0 and %d", max)
	digits, frac, dotted := strings.Cut(strings.TrimPrefix(raw, "-"), ".")
	if !isDigits(digits) || (dotted && !isDigits(frac)) {
		q.fail(name, "must be a number of seconds such as 1795579364 or 1795579364.5")
		return nil, false
	}
	secs, err := strconv.ParseInt(digits, 10, 64)
	whole = strings.Trim(frac, "0") == ""
	if err != nil || secs > max || (secs == max && !whole) || (raw[0] == '-' && (secs > 0 || !whole)) {
		q.fail(name, outOfRange)
		return nil, false
	}
	m, _ := strconv.Atoi((frac + "000")[:3])
	v := secs*1000 + int64(m)
	return &v, whole
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Seconds writes Unix milliseconds as a JSON number of seconds, with the
// fraction only when there is one: 1795579364, 1795579364.5.
func Seconds(ms int64) json.Number {
	s := strconv.FormatInt(ms/1000, 10)
	if f := ms % 1000; f != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%03d", f), "0")
	}
	return json.Number(s)
}

// Bool returns the boolean parameter: true/false/1/0 (contract section 4).
func (q *Query) Bool(name string) (value, present bool) {
	if !q.Has(name) {
		return false, false
	}
	switch strings.ToLower(q.r.URL.Query().Get(name)) {
	case "true", "1":
		return true, true
	case "false", "0":
		return false, true
	}
	q.fail(name, "must be true, false, 1 or 0")
	return false, false
}

// Fields are the invalid parameters seen, for a caller that checks more of the
// request and answers every problem at once.
func (q *Query) Fields() Fields { return q.fields }

// Err is the 400 for every invalid parameter seen, or nil.
func (q *Query) Err() error { return q.fields.Err() }

// Time formats t as the contract's timestamps: RFC 3339, UTC, milliseconds.
func Time(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// TimeMillis formats stored Unix milliseconds.
func TimeMillis(ms int64) string { return Time(time.UnixMilli(ms)) }

type ctxKey int

const requestIDKey ctxKey = 1

// NewRequestID returns a random request id.
func NewRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// WithRequestID stores the request id in ctx.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey, id)
}

// RequestID returns the request id stored in ctx, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// Note is what the handlers of a request tell the access log about it: the
// API key that authenticated it (its id, never the key) and, for a failure,
// the error code answered. The access log puts one in the context before the
// request is routed; Noted returns it, nil outside one.
type Note struct {
	KeyID string
	Code  string
}

const noteKey ctxKey = 2

// WithNote returns ctx with a new, empty Note.
func WithNote(ctx context.Context) (context.Context, *Note) {
	n := &Note{}
	return context.WithValue(ctx, noteKey, n), n
}

// Noted returns the request's Note, or nil.
func Noted(ctx context.Context) *Note {
	n, _ := ctx.Value(noteKey).(*Note)
	return n
}

// AskAgain answers a held request whose hold ended with no match: 307 to the
// identical path and query (contract section 4), so the client repeats it.
func AskAgain(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Location", r.URL.RequestURI())
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusTemporaryRedirect)
}
