package imapd

import (
	"strings"
	"testing"
)

func TestLiteralWatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   string // prefix of the refusal, "" for none
	}{
		{"plain commands", []string{"a LOGIN alice secret\r\n", "b SELECT INBOX\r\n"}, ""},
		{"small literal", []string{"a LOGIN {5}\r\n", "alice {6}\r\n", "secret\r\n"}, ""},
		{"oversized literal", []string{"a LOGIN {5000}\r\n"}, "a NO [TOOBIG]"},
		{"oversized literal, split", []string{"a SEARCH SUBJECT {50", "00}\r\n"}, "a NO [TOOBIG]"},
		{"oversized literal after a small one", []string{"a LOGIN {5}\r\nalice {5000}\r\n"}, "a NO [TOOBIG]"},
		{"oversized non-synchronising literal", []string{"a LOGIN alice {5000+}\r\n"}, "* BYE"},
		{"large APPEND", []string{"a APPEND INBOX {100000}\r\n"}, ""},
		{"APPEND data that looks like a literal", []string{"a APPEND INBOX {29}\r\n", "Subject: x\r\n\r\nsize {9999}\r\n\r\n", "b NOOP\r\n"}, ""},
		{"APPEND data then an oversized literal", []string{"a APPEND INBOX (\\Seen) {7}\r\nabc {9}\r\n", "b LOGIN {5000}\r\n"}, "b NO [TOOBIG]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w literalWatch
			got := ""
			for _, c := range tc.chunks {
				if r := w.feed([]byte(c)); r != "" {
					got = r
					break
				}
			}
			if tc.want == "" && got != "" || tc.want != "" && !strings.HasPrefix(got, tc.want) {
				t.Fatalf("refusal %q, want %q", got, tc.want)
			}
		})
	}
}
