package relay

import (
	"errors"
	"fmt"
	"testing"

	"github.com/emersion/go-smtp"
)

// TestRelayReplies: how each reply of the relay, or its absence, becomes a
// recipient's outcome.
func TestRelayReplies(t *testing.T) {
	for _, c := range []struct {
		stage          string
		err            error
		outcome        Outcome
		subtype        string
		code, enhanced string
	}{
		{"RCPT TO", &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: "greylisted"}, Deferred, "transient", "451", "4.7.1"},
		{"RCPT TO", &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}, Bounced, "permanent", "550", "5.1.1"},
		{"MAIL FROM", &smtp.SMTPError{Code: 553, EnhancedCode: smtp.NoEnhancedCode, Message: "sender refused"}, Bounced, "permanent", "553", ""},
		{"DATA", &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 3, 1}, Message: "full"}, Deferred, "transient", "452", "4.3.1"},
		{"connect", fmt.Errorf("authenticate as u: %w", &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "bad credentials"}), Deferred, "relay_connect", "535", "5.7.8"},
		{"connect", errors.New("dial tcp 127.0.0.1:1: connection refused"), Deferred, "connection", "", ""},
		{"DATA", errors.New("EOF"), Deferred, "connection", "", ""},
	} {
		var rep Reply
		if se, ok := c.err.(*smtp.SMTPError); ok && c.stage == "RCPT TO" {
			rep = smtpReply(se)
		} else {
			rep = failureReply(c.stage, c.err)
		}
		if rep.Outcome != c.outcome || rep.Subtype != c.subtype || rep.Code != c.code || rep.Enhanced != c.enhanced {
			t.Errorf("%s %v: %+v; want %s/%s %s %s", c.stage, c.err, rep, c.outcome, c.subtype, c.code, c.enhanced)
		}
	}
	for text, want := range map[string]string{
		"2.0.0 Ok: queued as 4XyZ1b2C3d":                "4XyZ1b2C3d",
		"OK id=1tEstX-0001Ab-Cd":                        "1tEstX-0001Ab-Cd",
		"2.6.0 <abc@relay> Queued mail for delivery":    "",
		"queued as <0100018c-abcd@email.amazonses.com>": "0100018c-abcd@email.amazonses.com",
	} {
		if got := queueID(text); got != want {
			t.Errorf("queueID(%q) = %q, want %q", text, got, want)
		}
	}
	if rep := okReply("2.0.0 OK: queued as X1"); rep.Enhanced != "2.0.0" || rep.Text != "OK: queued as X1" || rep.Outcome != Sent {
		t.Errorf("okReply: %+v", rep)
	}
}
