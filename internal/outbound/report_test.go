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
	return sampleB(t, name, returnPath, rcpt, messageID)
}

// sampleB is sample for tests and benchmarks.
func sampleB(t testing.TB, name, returnPath, rcpt, messageID string) []byte {
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

// FuzzParseReport reads arbitrary messages as a return path receives them:
// no panic, and a report it returns is within the limits (a kind, an id,
// at most MaxReportRecipients recipients each naming an address, a feedback
// type for a feedback report).
func FuzzParseReport(f *testing.F) {
	for _, name := range []string{"postfix-bounce.eml", "postfix-delayed.eml", "yahoo-arf.eml", "gmail-arf.eml", "vacation.eml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "returns", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		rep, err := outbound.ParseReport(raw)
		if err != nil {
			if !errors.Is(err, outbound.ErrNotReport) {
				t.Fatalf("error %v is not ErrNotReport", err)
			}
			return
		}
		if rep.ID == "" || len(rep.Recipients) > outbound.MaxReportRecipients || len(rep.Complained) > outbound.MaxReportRecipients {
			t.Fatalf("report %+v", rep)
		}
		switch rep.Kind {
		case outbound.ReportDSN:
			if len(rep.Recipients) == 0 {
				t.Fatal("a DSN without recipients")
			}
			for _, r := range rep.Recipients {
				if r.Original == "" && r.Final == "" {
					t.Fatalf("a block naming no recipient: %+v", r)
				}
			}
		case outbound.ReportFeedback:
			if rep.FeedbackType == "" {
				t.Fatal("a feedback report without its type")
			}
		default:
			t.Fatalf("kind %q", rep.Kind)
		}
	})
}
