package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/smtp"
	"net/textproto"
	"strconv"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testkit"
)

// TestRun starts catchbox serve as the binary does (server.Run, listeners on
// 127.0.0.1:0), takes a mail over SMTP and finds it over HTTP with the key the
// first start printed, with links and SMTP settings that name the listeners.
// Cancelling the context stops it cleanly: an idle SMTP client is told, a message
// being received is finished, stored and answered, Run returns nil and the
// listeners are closed. A second start on the same store prints no key and
// finds both messages.
func TestRun(t *testing.T) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(d.String(), func(t *testing.T) {
			cfg := servertest.Config(t)
			cfg.DatabaseURL = storetest.URL(t, d)
			cfg.HTTPAddr, cfg.SMTPAddr = "127.0.0.1:0", "127.0.0.1:0"
			cfg.MailDomain = "Mail.Test"

			var out bytes.Buffer
			run := start(t, cfg, &out)
			key := regexpKey(t, out.String())
			smtpAddr := run.ready.SMTPAddrs[0]
			if run.ready.PublicURL != "http://"+run.ready.HTTPAddr {
				t.Errorf("public URL %q, want the HTTP listener's http://%s", run.ready.PublicURL, run.ready.HTTPAddr)
			}

			// GET /api/smtp/{namespace} names the listener clients reach.
			var settings struct {
				Data struct {
					Host     string
					Port     int
					IMAPPort int `json:"imap_port"`
					POP3Port int `json:"pop3_port"`
				}
			}
			run.get(t, key, "/api/smtp/default", &settings)
			if _, port, _ := net.SplitHostPort(smtpAddr); settings.Data.Host != "127.0.0.1" || strconv.Itoa(settings.Data.Port) != port {
				t.Errorf("SMTP settings %+v, want the listener %s", settings.Data, smtpAddr)
			}
			_, imapPort, _ := net.SplitHostPort(run.ready.IMAPAddr)
			_, pop3Port, _ := net.SplitHostPort(run.ready.POP3Addr)
			if strconv.Itoa(settings.Data.IMAPPort) != imapPort || strconv.Itoa(settings.Data.POP3Port) != pop3Port {
				t.Errorf("imap_port %d, pop3_port %d; want the listeners %s and %s", settings.Data.IMAPPort, settings.Data.POP3Port, run.ready.IMAPAddr, run.ready.POP3Addr)
			}

			// A message over SMTP is found over HTTP, its attachment fetched bare
			// through the signed link.
			if err := smtp.SendMail(smtpAddr, nil, "sender@example.org", []string{"someone@default.mail.test"},
				message("someone@default.mail.test", "first over smtp")); err != nil {
				t.Fatal(err)
			}
			found := run.search(t, key)
			if len(found) != 1 || found[0].Subject != "first over smtp" || len(found[0].Attachments) != 1 {
				t.Fatalf("found %+v, want the message with its attachment", found)
			}
			var att struct {
				Data struct {
					DownloadURL string `json:"download_url"`
				}
			}
			run.get(t, key, "/api/attachments/"+found[0].Attachments[0].ID, &att)
			link := att.Data.DownloadURL
			if !strings.HasPrefix(link, run.ready.PublicURL+"/download/") {
				t.Errorf("download link %q is not under %s", link, run.ready.PublicURL)
			}
			if body := run.fetch(t, link); strings.TrimSpace(body) != "attached text" {
				t.Errorf("attachment %q", body)
			}

			// Shutdown while one SMTP client is idle and another is sending.
			idle := dialSMTP(t, smtpAddr)
			idle.cmd(t, 250, "EHLO idle.example")
			busy := dialSMTP(t, smtpAddr)
			busy.cmd(t, 250, "EHLO busy.example")
			busy.cmd(t, 250, "MAIL FROM:<sender@example.org>")
			busy.cmd(t, 250, "RCPT TO:<late@default.mail.test>")
			busy.cmd(t, 354, "DATA")
			late := message("late@default.mail.test", "during shutdown")
			busy.W.Write(late[:40])
			busy.W.Flush()

			run.cancel()
			if _, _, err := idle.ReadResponse(421); err != nil {
				t.Fatalf("idle client at shutdown: %v, want 421", err)
			}
			busy.W.Write(late[40:])
			busy.W.WriteString(".\r\n")
			busy.W.Flush()
			if _, msg, err := busy.ReadResponse(250); err != nil {
				t.Fatalf("message finished during shutdown: %v %q, want 250", err, msg)
			}
			if err := run.wait(t); err != nil {
				t.Fatalf("Run returned %v after a clean shutdown", err)
			}
			for _, addr := range []string{run.ready.HTTPAddr, smtpAddr} {
				if c, err := net.Dial("tcp", addr); err == nil {
					c.Close()
					t.Errorf("%s still accepts connections after Run returned", addr)
				}
			}

			// The store kept both messages, and the key.
			out.Reset()
			run = start(t, cfg, &out)
			if strings.Contains(out.String(), "cbx_") {
				t.Errorf("second start printed a key: %q", out.String())
			}
			found = run.search(t, key)
			if len(found) != 2 || found[0].Subject != "during shutdown" || found[1].Subject != "first over smtp" {
				t.Errorf("after a restart found %+v, want both messages", found)
			}
			run.cancel()
			if err := run.wait(t); err != nil {
				t.Fatalf("second Run returned %v", err)
			}
		})
	}
}

// TestBuildRefusesBadConfig checks that a setting Validate refuses stops Build
// before the store is opened.
func TestBuildRefusesBadConfig(t *testing.T) {
	cfg := servertest.Config(t)
	cfg.DatabaseURL = "postgres://nowhere.invalid/none"
	cfg.WaitHold = 0
	if _, err := server.Build(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "wait-hold") {
		t.Fatalf("Build with wait-hold 0: %v, want the setting named", err)
	}
}

// running is a server.Run in progress.
type running struct {
	ready   server.Ready
	cancel  context.CancelFunc
	stopped chan struct{} // closed when Run has returned err
	err     error
	client  *http.Client
}

// start runs the service in the background and returns once it serves; it is
// stopped when the test ends, if the test did not stop it.
func start(t *testing.T, cfg config.Serve, out io.Writer) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, stopped: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	ready := make(chan *server.Ready, 1)
	go func() {
		defer close(r.stopped)
		r.err = server.Run(ctx, cfg, out, func(rd server.Ready) { ready <- &rd })
		close(ready) // Run returned: if it never was ready, the receive gets nil
	}()
	rd := testkit.Receive(t, "the service to serve", ready)
	if rd == nil {
		cancel()
		t.Fatalf("Run: %v", r.err)
	}
	r.ready = *rd
	t.Cleanup(func() {
		cancel()
		testkit.Receive(t, "Run to return after the test", r.stopped)
	})
	return r
}

// wait returns Run's result once it has returned.
func (r *running) wait(t *testing.T) error {
	t.Helper()
	testkit.Receive(t, "Run to return", r.stopped)
	return r.err
}

// get decodes the JSON answer of a GET with the API key, which must be 200.
func (r *running) get(t *testing.T, key, path string, out any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.ready.PublicURL+path, nil)
	req.Header.Set("X-Api-Key", key)
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

type email struct {
	Subject     string
	Attachments []struct{ ID string }
}

// search lists the default namespace's emails, newest first.
func (r *running) search(t *testing.T, key string) []email {
	t.Helper()
	var res struct{ Data []email }
	r.get(t, key, "/api/emails/default/inbox", &res)
	return res.Data
}

// fetch GETs url without a key and returns the body of its 200 answer.
func (r *running) fetch(t *testing.T, url string) string {
	t.Helper()
	resp, err := r.client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return string(body)
}

// message is a multipart message to rcpt with a text attachment.
func message(rcpt, subject string) []byte {
	return []byte(fmt.Sprintf("From: sender@example.org\r\nTo: %s\r\nSubject: %s\r\nMIME-Version: 1.0\r\n"+
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n"+
		"--b\r\nContent-Type: text/plain\r\n\r\nhello\r\n"+
		"--b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=a.txt\r\n\r\nattached text\r\n"+
		"--b--\r\n", rcpt, subject))
}

// smtpConn is a raw SMTP client, for conversations net/smtp cannot hold open.
type smtpConn struct{ *textproto.Conn }

func dialSMTP(t *testing.T, addr string) *smtpConn {
	t.Helper()
	c, err := textproto.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, _, err := c.ReadResponse(220); err != nil {
		t.Fatal(err)
	}
	return &smtpConn{c}
}

// cmd sends a command and expects its reply code.
func (c *smtpConn) cmd(t *testing.T, code int, line string) {
	t.Helper()
	if err := c.PrintfLine("%s", line); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := c.ReadResponse(code); err != nil {
		t.Fatalf("%s: %v %q", line, err, msg)
	}
}
