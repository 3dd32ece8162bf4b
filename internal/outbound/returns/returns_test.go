package returns_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/outbound/returns"
)

// sample reads a report of testdata with its placeholders filled and CRLF
// line ends, as it travels over SMTP.
func sample(t testing.TB, name, returnPath, rcpt, messageID string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer("{{RETURN_PATH}}", returnPath, "{{RCPT}}", rcpt, "{{MESSAGE_ID}}", messageID).Replace(string(b))
	return []byte(strings.ReplaceAll(s, "\n", "\r\n"))
}

// BenchmarkParse reads the Postfix DSN sample.
func BenchmarkParse(b *testing.B) {
	raw := sample(b, "postfix-bounce.eml", "bounce+x@localhost", "mary@example.org", "<m@localhost>")
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := returns.Parse(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParse(t *testing.T) {
	const rp, rcpt = "bounce+0193@localhost", "mary@example.org"
	for _, tc := range []struct {
		file string
		want returns.Report
	}{
		{"postfix-bounce.eml", returns.Report{Kind: returns.DSN, Recipients: []returns.Recipient{
			{Original: rcpt, Final: rcpt, Action: "failed", Status: "5.1.1", SMTPCode: "550", RemoteMTA: "mail.example.org",
				DiagnosticCode: "smtp; 550 5.1.1 <mary@example.org>: Recipient address rejected: User unknown in virtual mailbox table"},
			{Original: "nobody@example.org", Final: "nobody@example.org", Action: "failed", Status: "5.1.1", SMTPCode: "550",
				RemoteMTA: "mail.example.org", DiagnosticCode: "smtp; 550 5.1.1 <nobody@example.org>: Recipient address rejected: User unknown in virtual mailbox table"},
		}}},
		{"postfix-delayed.eml", returns.Report{Kind: returns.DSN, Recipients: []returns.Recipient{
			{Original: rcpt, Final: rcpt, Action: "delayed", Status: "4.4.1",
				DiagnosticCode: "X-Postfix; connect to mail.example.com[203.0.113.9]:25: Connection timed out"},
		}}},
		{"yahoo-arf.eml", returns.Report{Kind: returns.Feedback, FeedbackType: "abuse", Complained: []string{rcpt}}},
		{"gmail-arf.eml", returns.Report{Kind: returns.Feedback, FeedbackType: "fraud", Complained: []string{rcpt}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := returns.Parse(sample(t, tc.file, rp, rcpt, "<m1@localhost>"))
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

// TestParseRefuses: what is not a report of a known kind is
// ErrNotReport, never a half-read report.
func TestParseRefuses(t *testing.T) {
	vacation := string(sample(t, "vacation.eml", "bounce+1@localhost", "mary@example.org", "<m@x>"))
	for name, raw := range map[string]string{
		"auto-reply":       vacation,
		"empty":            "",
		"other report":     "Content-Type: multipart/report; report-type=disposition-notification; boundary=b\r\n\r\n--b\r\nContent-Type: message/disposition-notification\r\n\r\nFinal-Recipient: rfc822; a@b\r\n\r\n--b--\r\n",
		"no recipient":     "Content-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; x\r\n\r\n--b--\r\n",
		"no feedback type": "Content-Type: multipart/report; report-type=feedback-report; boundary=b\r\n\r\n--b\r\nContent-Type: message/feedback-report\r\n\r\nVersion: 1\r\n\r\n--b--\r\n",
		"not multipart":    "Content-Type: multipart/report; report-type=delivery-status\r\n\r\nFinal-Recipient: rfc822; a@b\r\n",
	} {
		if _, err := returns.Parse([]byte(raw)); !errors.Is(err, returns.ErrNotReport) {
			t.Errorf("%s: %v, want ErrNotReport", name, err)
		}
	}
}

// FuzzParse reads arbitrary messages as a return path receives them:
// no panic, and a report it returns is within the limits (a kind, an id,
// at most MaxReportRecipients recipients each naming an address, a feedback
// type for a feedback report).
func FuzzParse(f *testing.F) {
	for _, name := range []string{"postfix-bounce.eml", "postfix-delayed.eml", "yahoo-arf.eml", "gmail-arf.eml", "vacation.eml"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		rep, err := returns.Parse(raw)
		if err != nil {
			if !errors.Is(err, returns.ErrNotReport) {
				t.Fatalf("error %v is not ErrNotReport", err)
			}
			return
		}
		if rep.ID == "" || len(rep.Recipients) > returns.MaxRecipients || len(rep.Complained) > returns.MaxRecipients {
			t.Fatalf("report %+v", rep)
		}
		switch rep.Kind {
		case returns.DSN:
			if len(rep.Recipients) == 0 {
				t.Fatal("a DSN without recipients")
			}
			for _, r := range rep.Recipients {
				if r.Original == "" && r.Final == "" {
					t.Fatalf("a block naming no recipient: %+v", r)
				}
			}
		case returns.Feedback:
			if rep.FeedbackType == "" {
				t.Fatal("a feedback report without its type")
			}
		default:
			t.Fatalf("kind %q", rep.Kind)
		}
	})
}

// TestParseIsLenient: a report is read as leniently as internal/message reads
// any mail: one cut off before its close-delimiter, or whose Content-Type
// lacks a semicolon, still says what it says.
func TestParseIsLenient(t *testing.T) {
	const block = "--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example.org\r\n\r\n" +
		"Final-Recipient: rfc822; mary@example.org\r\nAction: failed\r\nStatus: 5.1.1\r\n"
	for name, raw := range map[string]string{
		"no close-delimiter":       "Content-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n" + block,
		"a Content-Type without ;": "Content-Type: multipart/report report-type=delivery-status; boundary=b\r\n\r\n" + block + "--b--\r\n",
	} {
		rep, err := returns.Parse([]byte(raw))
		if err != nil || rep.Kind != returns.DSN || len(rep.Recipients) != 1 || rep.Recipients[0].Final != "mary@example.org" ||
			rep.Recipients[0].Status != "5.1.1" {
			t.Errorf("%s: %+v %v", name, rep, err)
		}
	}
}
