package smtpd

import "github.com/emersion/go-smtp"

// The listener's own replies. Each names what is wrong in words a sender's log
// can show to a person, and nothing of the server's inside (go-smtp writes a
// plain error's text to the wire, so only these values are returned to it).
// Enhanced status codes are from RFC 3463; docs/smtp.md lists them all.

// Written directly to the connection, before or outside go-smtp's command loop.
const (
	replyTooManyConnections = "421 4.7.0 Too many connections, try again later\r\n"
	replyTooManyFromAddress = "421 4.7.0 Too many connections from your address, try again later\r\n"
	replyTooManyCommands    = "421 4.7.0 Too many commands, closing connection\r\n"
	replyShuttingDown       = "421 4.3.2 Service shutting down, try again later\r\n"
)

func smtpErr(code int, enhanced smtp.EnhancedCode, msg string) *smtp.SMTPError {
	return &smtp.SMTPError{Code: code, EnhancedCode: enhanced, Message: msg}
}

var (
	// replyStored is the success reply to DATA. go-smtp writes an SMTPError's
	// code and text as the reply, whatever the code, so a 250 "error" is how a
	// session chooses its success text; it is returned only after the commit.
	replyStored = smtpErr(250, smtp.EnhancedCode{2, 0, 0}, "Message stored")

	errBadAddress      = smtpErr(550, smtp.EnhancedCode{5, 1, 3}, "Bad recipient address syntax")
	errNotOwnNamespace = smtpErr(550, smtp.EnhancedCode{5, 7, 1}, "Authenticated clients may only send to their own namespace")
	errUTF8Required    = smtpErr(553, smtp.EnhancedCode{5, 6, 7}, "Non-ASCII address requires the SMTPUTF8 parameter on MAIL")
	errTooManyRcpts    = smtpErr(452, smtp.EnhancedCode{4, 5, 3}, "Too many recipients")
	errNeedMail        = smtpErr(503, smtp.EnhancedCode{5, 5, 1}, "Bad sequence of commands")
	errNestedMail      = smtpErr(503, smtp.EnhancedCode{5, 5, 1}, "Nested MAIL command")
	errTooBig          = smtpErr(552, smtp.EnhancedCode{5, 3, 4}, "Message too big")
	errLineTooLong     = smtpErr(500, smtp.EnhancedCode{5, 5, 2}, "Line too long")
	errReadTimeout     = smtpErr(421, smtp.EnhancedCode{4, 4, 2}, "Timeout while receiving the message")
	errReadFailed      = smtpErr(451, smtp.EnhancedCode{4, 3, 0}, "Message transfer failed, try again later")
	errTempLookup      = smtpErr(451, smtp.EnhancedCode{4, 3, 0}, "Temporary failure looking up the recipient, try again later")
	errTempStore       = smtpErr(451, smtp.EnhancedCode{4, 3, 0}, "Temporary failure storing the message, try again later")
	errInternal        = smtpErr(451, smtp.EnhancedCode{4, 3, 0}, "Internal error, try again later")

	errTLSRequired    = smtpErr(530, smtp.EnhancedCode{5, 7, 0}, "Must issue a STARTTLS command first")
	errAuthInMail     = smtpErr(503, smtp.EnhancedCode{5, 5, 1}, "AUTH is not allowed during a mail transaction")
	errAuthMechanism  = smtpErr(504, smtp.EnhancedCode{5, 5, 4}, "Unrecognized authentication type")
	errAuthFailed     = smtpErr(535, smtp.EnhancedCode{5, 7, 8}, "Authentication credentials invalid")
	errAuthMalformed  = smtpErr(501, smtp.EnhancedCode{5, 5, 2}, "Malformed authentication response")
	errAuthTemporary  = smtpErr(454, smtp.EnhancedCode{4, 7, 0}, "Temporary authentication failure, try again later")
	errAuthUnexpected = smtpErr(501, smtp.EnhancedCode{5, 5, 2}, "Unexpected authentication response")

	// errAuthThrottled refuses AUTH from an address that has used up its
	// failed attempts; the connection is closed after it (RFC 5321 section 3.8).
	errAuthThrottled = smtpErr(421, smtp.EnhancedCode{4, 7, 0}, "Too many failed authentications from your address, try again later")
)

// replyNoSuchMailbox refuses a recipient that no namespace takes (and no
// catch-all namespace catches), saying which addresses are taken, so that
// the sender's log tells a person what would have worked.
func replyNoSuchMailbox(domain string) *smtp.SMTPError {
	return smtpErr(550, smtp.EnhancedCode{5, 1, 1},
		"No such mailbox: this server takes mail for <anything>@<namespace>."+domain+", for an existing namespace")
}
