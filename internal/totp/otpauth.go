package totp

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxURLLength caps an otpauth URL; real ones are a few hundred bytes.
const MaxURLLength = 4096

// MaxTextLength caps a device's name, username and issuer, in characters.
const MaxTextLength = 255

// Key is what an otpauth Key URI describes (the Key Uri Format of Google
// Authenticator, the de-facto standard every authenticator app reads):
//
//	otpauth://totp/Issuer:account?secret=BASE32&issuer=Issuer&algorithm=SHA1&digits=6&period=30
//
// Digits, Period and Algorithm are zero when the URL leaves them out, so a caller
// can tell "absent" from "the default" and fill the gap from elsewhere.
type Key struct {
	Secret    []byte
	Issuer    string
	Account   string
	Digits    int
	Period    int
	Algorithm Algorithm
}

// URLError is a rejected otpauth URL. Code is the API's error code; Detail never
// quotes the URL, which carries the secret.
type URLError struct {
	Code   string
	Detail string
}

func (e *URLError) Error() string { return e.Detail }

func badURL(format string, args ...any) *URLError {
	return &URLError{Code: "invalid_otpauth_url", Detail: fmt.Sprintf(format, args...)}
}

// ErrHOTP rejects counter-based (hotp) URLs: a virtual authenticator that anyone
// may ask for codes cannot keep an HOTP counter in step with the verifier.
var ErrHOTP = &URLError{Code: "hotp_not_supported", Detail: "is an HOTP (counter-based) URL; only TOTP URLs are supported"}

// ParseOtpauthURL parses an otpauth totp URL. The label is "Issuer:account" or
// "account", URL-encoded, with optional spaces after the colon; the issuer
// parameter wins over the label's prefix. secret is required; algorithm, digits and
// period are checked against the limits a device accepts.
func ParseOtpauthURL(raw string) (Key, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return Key{}, badURL("must not be empty")
	}
	if len(raw) > MaxURLLength {
		return Key{}, badURL("must be at most %d characters", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil { // err quotes the URL, secret included: say nothing of it
		return Key{}, badURL("is not a valid URL")
	}
	if !strings.EqualFold(u.Scheme, "otpauth") {
		return Key{}, badURL("must start with otpauth://")
	}
	if u.Opaque != "" || u.User != nil {
		return Key{}, badURL("must have the form otpauth://totp/LABEL?secret=BASE32")
	}
	switch strings.ToLower(u.Host) {
	case "totp":
	case "hotp":
		return Key{}, ErrHOTP
	default:
		return Key{}, badURL("must have the type totp (otpauth://totp/...)")
	}

	var k Key
	label := strings.TrimPrefix(u.Path, "/")
	if prefix, account, ok := strings.Cut(label, ":"); ok {
		k.Issuer, k.Account = strings.TrimSpace(prefix), strings.TrimSpace(account)
	} else {
		k.Account = strings.TrimSpace(label)
	}

	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return Key{}, badURL("has a malformed query string")
	}
	if !q.Has("secret") {
		return Key{}, badURL("has no secret parameter")
	}
	if k.Secret, err = DecodeSecret(q.Get("secret")); err != nil {
		return Key{}, badURL("secret parameter %s", err)
	}
	if iss := strings.TrimSpace(q.Get("issuer")); iss != "" {
		k.Issuer = iss
	}
	if q.Has("algorithm") {
		alg, ok := ParseAlgorithm(q.Get("algorithm"))
		if !ok {
			return Key{}, badURL("algorithm parameter must be SHA1, SHA256 or SHA512")
		}
		k.Algorithm = alg
	}
	if q.Has("digits") {
		n, err := strconv.Atoi(strings.TrimSpace(q.Get("digits")))
		if err != nil || (n != 6 && n != 8) {
			return Key{}, badURL("digits parameter must be 6 or 8")
		}
		k.Digits = n
	}
	if q.Has("period") {
		n, err := strconv.Atoi(strings.TrimSpace(q.Get("period")))
		if err != nil || n < MinPeriod || n > MaxPeriod {
			return Key{}, badURL("period parameter must be between %d and %d seconds", MinPeriod, MaxPeriod)
		}
		k.Period = n
	}
	if d := CheckText(k.Issuer); d != "" {
		return Key{}, badURL("issuer %s", d)
	}
	if d := CheckText(k.Account); d != "" {
		return Key{}, badURL("account name %s", d)
	}
	return k, nil
}

// CheckText reports why s cannot be a device's name, username or issuer, or "".
// Invalid UTF-8 and control characters (NUL above all) are refused because
// PostgreSQL will not store them and no display wants them.
func CheckText(s string) string {
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	if utf8.RuneCountInString(s) > MaxTextLength {
		return fmt.Sprintf("must be at most %d characters", MaxTextLength)
	}
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return "must not contain control characters"
	}
	return ""
}

// URL is the otpauth URL of the key, for showing a device as a QR code in an
// authenticator app. ParseOtpauthURL(k.URL()) gives k back (with Digits, Period
// and Algorithm filled in). The label carries the issuer prefix only when the
// issuer has no colon of its own; an account with a colon and no prefix is written
// after an empty one (":a:b"), so the account survives parsing.
func (k Key) URL() string {
	p := Params{Digits: k.Digits, Period: k.Period, Algorithm: k.Algorithm}.withDefaults()
	label := k.Account
	switch {
	case k.Issuer != "" && !strings.Contains(k.Issuer, ":"):
		label = k.Issuer + ":" + k.Account
	case strings.Contains(k.Account, ":"):
		label = ":" + k.Account
	}
	v := url.Values{}
	v.Set("secret", EncodeSecret(k.Secret))
	if k.Issuer != "" {
		v.Set("issuer", k.Issuer)
	}
	v.Set("algorithm", string(p.Algorithm))
	v.Set("digits", strconv.Itoa(p.Digits))
	v.Set("period", strconv.Itoa(p.Period))
	u := url.URL{Scheme: "otpauth", Host: "totp", Path: "/" + label, RawQuery: v.Encode()}
	return u.String()
}

// MergeOtpauth applies the otpauth precedence rules: the URL's issuer, account,
// digits, period and algorithm win over body's; body values fill the gaps. The
// secret comes from the URL alone; name, expires_at and source stay body's.
func MergeOtpauth(k Key, body NewDevice) NewDevice {
	out := body
	out.Secret = k.Secret
	if k.Issuer != "" {
		out.Issuer = k.Issuer
	}
	if k.Account != "" {
		out.Username = k.Account
	}
	if k.Digits != 0 {
		out.Params.Digits = k.Digits
	}
	if k.Period != 0 {
		out.Params.Period = k.Period
	}
	if k.Algorithm != "" {
		out.Params.Algorithm = k.Algorithm
	}
	return out
}

// asURLError unwraps a *URLError.
func asURLError(err error) (*URLError, bool) {
	var ue *URLError
	ok := errors.As(err, &ue)
	return ue, ok
}
