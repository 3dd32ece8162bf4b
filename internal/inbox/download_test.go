package inbox

import (
	"mime"
	"strings"
	"testing"
)

func TestContentDisposition(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"report.pdf", `attachment; filename="report.pdf"`},
		{`a "quoted" \ name`, `attachment; filename="a \"quoted\" \\ name"`},
		{"März.csv", `attachment; filename="M_rz.csv"; filename*=utf-8''M%C3%A4rz.csv`},
	} {
		if got := contentDisposition(c.in); got != c.want {
			t.Errorf("contentDisposition(%q) = %s, want %s", c.in, got, c.want)
		}
		_, params, err := mime.ParseMediaType(contentDisposition(c.in))
		if err != nil || params["filename"] != c.in {
			t.Errorf("%q does not round-trip: %v %v", c.in, params, err)
		}
	}
}

// FuzzDownloadName checks that every file name the parser gives an attachment,
// from any bytes sent as one, can be offered as a download: the
// Content-Disposition stays on one line and reads back as the same name.
func FuzzDownloadName(f *testing.F) {
	for _, s := range []string{"report.pdf", "../../x", `C:\a\b.exe`, "a\u202eb", "M\xe4rz.csv", "=?utf-8?B?w5w=?=", "", ".", "\x00", `a "q" \ b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		name = strings.NewReplacer("\r", " ", "\n", " ").Replace(name)
		raw := "Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"" + name + "\"\r\n\r\nx"
		for _, a := range parseMessage([]byte(raw)).Attachments {
			cd := contentDisposition(a.Filename)
			if strings.ContainsAny(cd, "\r\n") {
				t.Fatalf("Content-Disposition %q spans lines", cd)
			}
			if _, params, err := mime.ParseMediaType(cd); err != nil || params["filename"] != a.Filename {
				t.Fatalf("Content-Disposition %q reads back as %q (%v), want %q", cd, params["filename"], err, a.Filename)
			}
		}
	})
}

// An attachment stored empty is served without a parse, even if the parser now
// finds bytes in that part.
func TestAttachmentFromRawEmpty(t *testing.T) {
	raw := []byte("Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: application/octet-stream; name=a.bin\r\n" +
		"Content-Transfer-Encoding: base64\r\n\r\naGVs\xe9bG8=\r\n--b--\r\n")
	got, err := attachmentFromRaw(raw, 0, emptyContentHash)
	if err != nil || len(got) != 0 {
		t.Errorf("empty attachment: %q, %v", got, err)
	}
	got, err = attachmentFromRaw(raw, 0, contentHash([]byte("hello")))
	if err != nil || string(got) != "hello" {
		t.Errorf("attachment: %q, %v", got, err)
	}
	if _, err := attachmentFromRaw(raw, 0, contentHash([]byte("other"))); err == nil {
		t.Error("an attachment that is not in the message was found")
	}
}
