package imapd

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// richMessage is a message whose exact bytes are worth checking: a multipart
// with an attachment, a line that starts with a dot, a non-ASCII subject and a
// long line.
func richMessage(to string) string {
	return strings.Join([]string{
		"From: App <app@example.org>",
		"To: " + to,
		"Subject: =?utf-8?q?Gr=C3=BC=C3=9Fe?= and a reset link",
		"Date: Sun, 22 Nov 2026 03:23:50 +0000",
		"Message-ID: <rich-" + to + ">",
		"MIME-Version: 1.0",
		`Content-Type: multipart/mixed; boundary="b1"`,
		"",
		"--b1",
		"Content-Type: text/plain; charset=utf-8",
		"",
		"Your code is 123456.",
		".a line that starts with a dot",
		strings.Repeat("long ", 150),
		"--b1",
		`Content-Type: application/octet-stream; name="data.bin"`,
		"Content-Transfer-Encoding: base64",
		`Content-Disposition: attachment; filename="data.bin"`,
		"",
		"AAECAwQFBgcICQoLDA0ODw==",
		"--b1--",
		"",
	}, "\r\n")
}

// need skips the test when a client program is not installed.
func need(t *testing.T, program string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	if err != nil {
		t.Skipf("%s is not installed: the test of that client is skipped", program)
	}
	return path
}

// Python's imaplib reads a message sent over SMTP byte for byte, searches,
// flags and expunges it.
func TestPythonImaplib(t *testing.T) {
	python := need(t, "python3")
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		raw := richMessage("py@alpha.localhost")
		h.send("py@alpha.localhost", raw)
		h.send("other@alpha.localhost", message("other@alpha.localhost", "not this one", "x"))
		host, port, _ := net.SplitHostPort(h.imapAddr)
		script := `
import imaplib, os, sys
c = imaplib.IMAP4(os.environ["HOST"], int(os.environ["PORT"]))
c.login(os.environ["USER"], os.environ["PASS"])
typ, data = c.select("INBOX")
assert typ == "OK" and data[0] == b"2", (typ, data)
typ, data = c.uid("SEARCH", None, "SUBJECT", '"reset link"')
assert typ == "OK", (typ, data)
uid = data[0].split()[0]
typ, data = c.uid("FETCH", uid, "(BODY.PEEK[] RFC822.SIZE FLAGS)")
assert typ == "OK", (typ, data)
sys.stdout.buffer.write(data[0][1])
typ, data = c.search(None, "UNSEEN")
assert data[0] == b"1 2", data
c.uid("STORE", uid, "+FLAGS", "(\\Deleted)")
typ, data = c.expunge()
assert typ == "OK" and data == [b"1"], (typ, data)
c.logout()
`
		cmd := exec.Command(python, "-c", script)
		cmd.Env = append(os.Environ(), "HOST="+host, "PORT="+port, "USER=alpha", "PASS="+h.password("alpha"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("imaplib: %v\n%s", err, stderr.String())
		}
		if string(out) != raw {
			t.Fatalf("imaplib read\n%q\nwant\n%q", out, raw)
		}
		if n, _ := h.searcher.Count(context.Background(), h.ns["alpha"].ID); n != 1 {
			t.Fatalf("%d emails after imaplib's expunge, want 1", n)
		}
	})
}

// curl's imap:// reads a message sent over SMTP byte for byte.
func TestCurlIMAP(t *testing.T) {
	curl := need(t, "curl")
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		raw := richMessage("curl@alpha.localhost")
		h.send("curl@alpha.localhost", raw)
		cmd := exec.Command(curl, "--silent", "--show-error", "--max-time", "30", "--user", "alpha:"+h.password("alpha"),
			"imap://"+h.imapAddr+"/INBOX;UID=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("curl: %v\n%s", err, stderr.String())
		}
		if string(out) != raw {
			t.Fatalf("curl read\n%q\nwant\n%q", out, raw)
		}
	})
}
