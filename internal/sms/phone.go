package sms

import (
	"errors"
	"net/url"
	"strings"
	"unicode"
)

// E.164 (ITU-T E.164, section 6) allows at most 15 digits after the '+'; country
// codes never start with 0. Fewer than 8 digits is no real subscriber number.
const (
	minPhoneDigits = 8
	maxPhoneDigits = 15
)

// ErrPhone is returned for a value that is not a phone number.
var ErrPhone = errors.New("must be an E.164 phone number such as +15551234567")

// NormalizePhone turns a phone number as people and URLs write it into E.164
// with its '+': "+1 (555) 123-4567", "15551234567", "%2B15551234567" and
// " 15551234567" (a '+' that a query string decoded to a space) all become
// "+15551234567". Spaces, '-', '.', and parentheses are formatting and dropped;
// anything else is an error. It is the one place where numbers are normalised,
// so a number stored, looked up by path, or given in a body always compares
// equal.
func NormalizePhone(s string) (string, error) {
	digits, _, ok := cleanPhone(s)
	if !ok || len(digits) < minPhoneDigits || len(digits) > maxPhoneDigits || digits[0] == '0' {
		return "", ErrPhone
	}
	return "+" + digits, nil
}

// cleanPhone strips a phone number's formatting: it returns its ASCII digits and
// whether it was written with a leading '+'. ok is false when s holds anything
// but digits, formatting and one leading '+'.
func cleanPhone(s string) (digits string, plus, ok bool) {
	if strings.Contains(s, "%") {
		u, err := url.PathUnescape(s)
		if err != nil {
			return "", false, false
		}
		s = u
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '+':
			if plus || b.Len() > 0 {
				return "", false, false
			}
			plus = true
		case r == '-', r == '.', r == '(', r == ')', unicode.IsSpace(r):
		default:
			return "", false, false
		}
		if b.Len() > maxPhoneDigits {
			return "", false, false
		}
	}
	return b.String(), plus, true
}

// maxSenderLength bounds a sender that is not a phone number (a short code or an
// alphanumeric sender id, at most 11 characters at the carriers; room to spare).
const maxSenderLength = 64

// fromPrefixes turns the from_number filter into the stored prefixes it matches,
// and the value echoed in options. A number-like value matches E.164 senders
// ("+1555"); written without '+' it also matches short codes ("12345"), which
// providers report without one. Any other value is matched as written, for
// alphanumeric sender ids.
func fromPrefixes(v string) (prefixes []string, echo string, ok bool) {
	if digits, plus, isPhone := cleanPhone(v); isPhone && (digits != "" || plus) {
		if plus || digits == "" {
			return []string{"+" + digits}, "+" + digits, true
		}
		return []string{"+" + digits, digits}, "+" + digits, true
	}
	v = strings.TrimSpace(v)
	if v == "" || len(v) > maxSenderLength {
		return nil, "", false
	}
	return []string{v}, v, true
}

// sender normalises the From of a provider's inbound message: an E.164 number
// when written with '+', else the short code or sender id as reported.
func sender(from string) (string, bool) {
	from = strings.TrimSpace(from)
	if strings.HasPrefix(from, "+") {
		if p, err := NormalizePhone(from); err == nil {
			return p, true
		}
	}
	if from == "" || len(from) > maxSenderLength {
		return "", false
	}
	return from, true
}

// countryByCallingCode maps calling codes that one country dominates to its ISO
// 3166-1 alpha-2 code, so that "sms-number add --phone" needs no --country in the
// common case. +1 is the North American Numbering Plan: US unless told otherwise.
var countryByCallingCode = map[string]string{
	"1": "US", "7": "RU", "20": "EG", "27": "ZA", "30": "GR", "31": "NL", "32": "BE", "33": "FR",
	"34": "ES", "36": "HU", "39": "IT", "40": "RO", "41": "CH", "43": "AT", "44": "GB", "45": "DK",
	"46": "SE", "47": "NO", "48": "PL", "49": "DE", "51": "PE", "52": "MX", "54": "AR", "55": "BR",
	"56": "CL", "57": "CO", "60": "MY", "61": "AU", "62": "ID", "63": "PH", "64": "NZ", "65": "SG",
	"66": "TH", "81": "JP", "82": "KR", "84": "VN", "86": "CN", "90": "TR", "91": "IN", "92": "PK",
	"351": "PT", "352": "LU", "353": "IE", "354": "IS", "358": "FI", "359": "BG", "370": "LT",
	"371": "LV", "372": "EE", "380": "UA", "385": "HR", "386": "SI", "420": "CZ", "421": "SK",
	"852": "HK", "886": "TW", "966": "SA", "971": "AE", "972": "IL",
}

// countryOf returns the country of an E.164 number from its calling code (1 to
// 3 digits, ITU-T E.164 section 6.2.1), or "" when the code is not in the table.
func countryOf(phone string) string {
	d := strings.TrimPrefix(phone, "+")
	for n := 1; n <= 3 && n <= len(d); n++ {
		if c, ok := countryByCallingCode[d[:n]]; ok {
			return c
		}
	}
	return ""
}

// validCountry reports whether c looks like an ISO 3166-1 alpha-2 code.
func validCountry(c string) bool {
	return len(c) == 2 && c[0] >= 'A' && c[0] <= 'Z' && c[1] >= 'A' && c[1] <= 'Z'
}
