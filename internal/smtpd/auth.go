package smtpd

import (
	"github.com/catchbox/catchbox/internal/mailauth"
)

// Authentication mechanisms offered (RFC 4954): mailauth's, shared with the
// IMAP and POP3 listeners.
const (
	mechPlain = mailauth.MechPlain
	mechLogin = mailauth.MechLogin
)

// saslErrors are SMTP's replies to a malformed AUTH exchange.
var saslErrors = mailauth.SASLErrors{Malformed: errAuthMalformed, Unexpected: errAuthUnexpected}
