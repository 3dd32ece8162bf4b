// Package totp is Catchbox's virtual authenticator: saved TOTP devices of an
// organisation, and the one-time passwords they (or a bare shared secret) produce,
// so an end-to-end test can get past two-factor sign-in without a phone.
//
// Codes follow RFC 6238 (TOTP) on top of RFC 4226 (HOTP) directly: the standard
// library's HMAC with SHA-1, SHA-256 or SHA-512, 6 or 8 digits, a period of 10 to
// 300 seconds and T0 = 0. Secrets arrive as Base32 (RFC 4648) or in an otpauth Key
// URI; they are sealed at rest with a key derived from the server secret and never
// leave the service again.
package totp

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"fmt"
	"hash"
	"strings"

	"github.com/catchbox/catchbox/internal/problem"
	"time"
)

// Algorithm is the HMAC hash of a device (RFC 6238 section 1.2 allows SHA-1,
// SHA-256 and SHA-512).
type Algorithm string

// The algorithms a device may use, spelled as the API spells them.
const (
	SHA1   Algorithm = "SHA1"
	SHA256 Algorithm = "SHA256"
	SHA512 Algorithm = "SHA512"
)

// ParseAlgorithm accepts an algorithm name case-insensitively, with or without the
// dash ("sha-256"), as otpauth URLs in the wild spell it both ways.
func ParseAlgorithm(s string) (Algorithm, bool) {
	switch strings.ReplaceAll(strings.ToUpper(strings.TrimSpace(s)), "-", "") {
	case "SHA1":
		return SHA1, true
	case "SHA256":
		return SHA256, true
	case "SHA512":
		return SHA512, true
	}
	return "", false
}

func (a Algorithm) hash() func() hash.Hash {
	switch a {
	case SHA256:
		return sha256.New
	case SHA512:
		return sha512.New
	}
	return sha1.New
}

// Limits and defaults of a device's parameters (the seed's Limits section).
const (
	DefaultDigits    = 6
	DefaultPeriod    = 30 // seconds
	MinPeriod        = 10
	MaxPeriod        = 300
	DefaultAlgorithm = SHA1
)

// Params are the parameters of a TOTP generator besides its secret.
type Params struct {
	Digits    int
	Period    int // seconds
	Algorithm Algorithm
}

// DefaultParams are those of POST /api/devices and POST /api/devices/otp: 6 digits,
// 30 seconds, SHA-1, the values every authenticator app assumes.
var DefaultParams = Params{Digits: DefaultDigits, Period: DefaultPeriod, Algorithm: DefaultAlgorithm}

// Check reports the first parameter out of its range, named by its API field, or
// nil when all are valid.
func (p Params) Check() *problem.FieldError {
	if p.Digits != 6 && p.Digits != 8 {
		return &problem.FieldError{Field: "digits", Detail: "must be 6 or 8"}
	}
	if p.Period < MinPeriod || p.Period > MaxPeriod {
		return &problem.FieldError{Field: "period", Detail: fmt.Sprintf("must be between %d and %d seconds", MinPeriod, MaxPeriod)}
	}
	switch p.Algorithm {
	case SHA1, SHA256, SHA512:
		return nil
	}
	return &problem.FieldError{Field: "algorithm", Detail: "must be SHA1, SHA256 or SHA512"}
}

// withDefaults is p with the default of every parameter left unset.
func (p Params) withDefaults() Params {
	if p.Digits == 0 {
		p.Digits = DefaultDigits
	}
	if p.Period == 0 {
		p.Period = DefaultPeriod
	}
	if p.Algorithm == "" {
		p.Algorithm = DefaultAlgorithm
	}
	return p
}

// OTP is a one-time password and the instant it stops being valid: the end of its
// time step.
type OTP struct {
	Code    string
	Expires time.Time
}

// Counter is the RFC 6238 time step T = floor((unix time - T0) / X) with T0 = 0.
func Counter(t time.Time, period int) uint64 {
	return uint64(t.Unix()) / uint64(period)
}

// Generate returns the code of secret for the time step containing t
// (RFC 6238 section 4).
func Generate(secret []byte, p Params, t time.Time) OTP {
	return AtCounter(secret, p, Counter(t, p.Period))
}

// AtCounter returns the code of time step counter, valid until the step ends.
func AtCounter(secret []byte, p Params, counter uint64) OTP {
	return OTP{
		Code:    hotp(secret, p.Algorithm, counter, p.Digits),
		Expires: time.Unix(int64((counter+1)*uint64(p.Period)), 0).UTC(),
	}
}

var pow10 = [...]uint32{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000}

// hotp is RFC 4226 section 5.3: HMAC over the big-endian counter, dynamic
// truncation, modulo 10^digits, left-padded with zeros.
func hotp(secret []byte, alg Algorithm, counter uint64, digits int) string {
	mac := hmac.New(alg.hash(), secret)
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], counter)
	mac.Write(msg[:])
	var buf [sha512.Size]byte
	sum := mac.Sum(buf[:0])
	off := sum[len(sum)-1] & 0x0f
	bin := binary.BigEndian.Uint32(sum[off:off+4]) & 0x7fffffff
	return fmt.Sprintf("%0*d", digits, bin%pow10[digits])
}
