package totp

import (
	"encoding/base32"
	"errors"
	"strings"
	"unicode"
)

// MaxSecretLength caps a Base32 secret as given, in bytes: real secrets are 16 to
// 128 characters, and a cap keeps an absurd value from costing HMAC work.
const MaxSecretLength = 1024

// Errors of DecodeSecret. They never quote the secret: it must not reach a log
// line or an error body.
var (
	ErrSecretEmpty   = errors.New("must not be empty")
	ErrSecretTooLong = errors.New("must be at most 1024 characters")
	ErrSecretBase32  = errors.New("must be Base32 (letters A-Z and digits 2-7; case, spaces, '-' and '=' padding are ignored)")
)

var rawBase32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// DecodeSecret decodes a Base32 shared secret (RFC 4648 section 6) the way people
// paste them: case-insensitive, spaces and '-' ignored (apps show secrets in
// groups), trailing '=' padding optional.
func DecodeSecret(s string) ([]byte, error) {
	if len(s) > MaxSecretLength {
		return nil, ErrSecretTooLong
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '-' || unicode.IsSpace(r):
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		default:
			b.WriteRune(r)
		}
	}
	t := strings.TrimRight(b.String(), "=")
	if t == "" {
		return nil, ErrSecretEmpty
	}
	switch len(t) % 8 {
	case 1, 3, 6: // no whole number of bytes ends there (RFC 4648 section 6)
		return nil, ErrSecretBase32
	}
	key, err := rawBase32.DecodeString(t)
	if err != nil {
		return nil, ErrSecretBase32
	}
	if len(key) == 0 {
		return nil, ErrSecretEmpty
	}
	return key, nil
}

// EncodeSecret is the canonical Base32 form of a secret: upper case, unpadded, as
// authenticator apps expect it in an otpauth URL.
func EncodeSecret(key []byte) string { return rawBase32.EncodeToString(key) }
