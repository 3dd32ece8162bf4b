package pop3d

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// rich is a message whose exact bytes are worth checking: lines that start
// with dots (stuffed on the wire), a multipart with an attachment, a long line.
var rich = strings.Join([]string{
	"From: App <app@example.org>",
	"To: pop@alpha.localhost",
	"Subject: Your sign-in code",
	"Message-ID: <rich-pop@example.org>",
	"MIME-Version: 1.0",
	`Content-Type: multipart/mixed; boundary="b1"`,
	"",
	"--b1",
	"Content-Type: text/plain; charset=utf-8",
	"",
	"Your code is 654321.",
	".one dot",
	"..two dots",
	".",
	strings.Repeat("long ", 150),
	"--b1",
	`Content-Type: application/octet-stream; name="data.bin"`,
	"Content-Transfer-Encoding: base64",
	"",
	"AAECAwQFBgcICQoLDA0ODw==",
	"--b1--",
	"",
}, "\r\n")

func need(t *testing.T, program string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	if err != nil {
		t.Skipf("%s is not installed: the test of that client is skipped", program)
	}
	return path
}

// Python's poplib retrieves a message sent over SMTP byte for byte, lists its
// unique id and deletes it with DELE and QUIT.
func TestPythonPoplib(t *testing.T) {
	python := need(t, "python3")
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		h.send("pop@alpha.localhost", rich)
		host, port, _ := net.SplitHostPort(h.pop3Addr)
		script := `
import poplib, os, sys
c = poplib.POP3(os.environ["HOST"], int(os.environ["PORT"]))
caps = c.capa()
assert "UIDL" in caps and "TOP" in caps, caps
c.user(os.environ["USER"])
c.pass_(os.environ["PASS"])
count, size = c.stat()
assert count == 1, (count, size)
resp, lines, octets = c.retr(1)
raw = b"\r\n".join(lines) + b"\r\n"
assert octets >= len(raw), (octets, len(raw))
sys.stdout.buffer.write(raw)
resp = c.uidl(1)
sys.stderr.write(resp.decode() + "\n")
c.dele(1)
c.quit()
`
		cmd := exec.Command(python, "-c", script)
		cmd.Env = append(os.Environ(), "HOST="+host, "PORT="+port, "USER=alpha", "PASS="+h.tenants.SMTPPassword(h.ns["alpha"]))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("poplib: %v\n%s", err, stderr.String())
		}
		if string(out) != rich {
			t.Fatalf("poplib read\n%q\nwant\n%q", out, rich)
		}
		eventuallyCount(t, h, 0)
	})
}

// curl's pop3:// retrieves a message sent over SMTP byte for byte.
func TestCurlPOP3(t *testing.T) {
	curl := need(t, "curl")
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		h.send("pop@alpha.localhost", rich)
		cmd := exec.Command(curl, "--silent", "--show-error", "--max-time", "30", "--user", "alpha:"+h.tenants.SMTPPassword(h.ns["alpha"]),
			"pop3://"+h.pop3Addr+"/1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("curl: %v\n%s", err, stderr.String())
		}
		if string(out) != rich {
			t.Fatalf("curl read\n%q\nwant\n%q", out, rich)
		}
	})
}
