package outbound_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/outbound"
)

// sample reads a report of testdata/returns with its placeholders filled and
// CRLF line ends, as it travels over SMTP.
func sample(t *testing.T, name, returnPath, rcpt, messageID string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "returns", name))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer("{{RETURN_PATH}}", returnPath, "{{RCPT}}", rcpt, "{{MESSAGE_ID}}", messageID).Replace(string(b))
	return []byte(strings.ReplaceAll(s, "\n", "\r\n"))
}

func TestParseReport(t *testing.T) {
	const rp, rcpt = "bounce+0193@localhost", "mary@example.org"
	for _, tc := range []struct {
		file string
		want outbound.Report
	}{
		{"postfix-bounce.eml", outbound.Report{Kind: outbound.ReportDSN, Recipients: []outbound.ReportRecipient{
			{Original: rcpt, Final: rcpt, Action: "failed", Status: "5.1.1", SMTPCode: "550", RemoteMTA: "mail.example.org",
				DiagnosticCode: "smtp; 550 5.1.1 <mary@example.org>: Recipient address rejected: User unknown in virtual mailbox table"},
			{Original: "nobody@example.org", Final: "nobody@example.org", Action: "failed", Status: "5.1.1", SMTPCode: "550",
				RemoteMTA: "mail.example.org", DiagnosticCode: "smtp; 550 5.1.1 <nobody@example.org>: Recipient address rejected: User unknown in virtual mailbox table"},
		}}},
		{"postfix-delayed.eml", outbound.Report{Kind: outbound.ReportDSN, Recipients: []outbound.ReportRecipient{
			{Original: rcpt, Final: rcpt, Action: "delayed", Status: "4.4.1",
				DiagnosticCode: "X-Postfix; connect to mail.example.com[203.0.113.9]:25: Connection timed out"},
		}}},
		{"yahoo-arf.eml", outbound.Report{Kind: outbound.ReportFeedback, FeedbackType: "abuse", Complained: []string{rcpt}}},
		{"gmail-arf.eml", outbound.Report{Kind: outbound.ReportFeedback, FeedbackType: "fraud", Complained: []string{rcpt}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := outbound.ParseReport(sample(t, tc.file, rp, rcpt, "<m1@localhost>"))
			if err != nil {
				t.Fatal(err)
			}
			if got.ID == "" {
				t.Error("no report id")
			}
			got.ID = ""
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestParseReportRefuses: what is not a report of a known kind is
// ErrNotReport, never a half-read report.
func TestParseReportRefuses(t *testing.T) {
	vacation := string(sample(t, "vacation.eml", "bounce+1@localhost", "mary@example.org", "<m@x>"))
	for name, raw := range map[string]string{
		"auto-reply":       vacation,
		"empty":            "",
		"other report":     "Content-Type: multipart/report; report-type=disposition-notification; boundary=b\r\n\r\n--b\r\nContent-Type: message/disposition-notification\r\n\r\nFinal-Recipient: rfc822; a@b\r\n\r\n--b--\r\n",
		"no recipient":     "Content-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; x\r\n\r\n--b--\r\n",
		"no feedback type": "Content-Type: multipart/report; report-type=feedback-report; boundary=b\r\n\r\n--b\r\nContent-Type: message/feedback-report\r\n\r\nVersion: 1\r\n\r\n--b--\r\n",
		"not multipart":    "Content-Type: multipart/report; report-type=delivery-status\r\n\r\nFinal-Recipient: rfc822; a@b\r\n",
	} {
		if _, err := outbound.ParseReport([]byte(raw)); !errors.Is(err, outbound.ErrNotReport) {
			t.Errorf("%s: %v, want ErrNotReport", name, err)
		}
	}
}
