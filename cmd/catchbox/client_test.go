package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/smtp"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/catchbox/catchbox/client"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/totp"
)

const cliKey = "cbx_cli_test_key_0123456789"

// served is a catchbox serve started by a test, with what the client commands
// need to reach it.
type served struct {
	url, smtp string
	env       []string // the server's settings, for admin commands on its store
}

// serve starts the built binary's serve on the store at dbURL, on loopback
// ports, with a short wait hold, and stops it when the test ends.
func serve(t *testing.T, dbURL string) *served {
	t.Helper()
	s := &served{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CATCHBOX_") {
			s.env = append(s.env, kv)
		}
	}
	s.env = append(s.env, "CATCHBOX_DATA_DIR="+t.TempDir(), "CATCHBOX_DATABASE_URL="+dbURL, "CATCHBOX_API_KEY="+cliKey,
		"CATCHBOX_HTTP_ADDR=127.0.0.1:0", "CATCHBOX_SMTP_ADDR=127.0.0.1:0", "CATCHBOX_IMAP_ADDR=127.0.0.1:0", "CATCHBOX_POP3_ADDR=127.0.0.1:0", "CATCHBOX_LOG_FORMAT=json", "CATCHBOX_WAIT_HOLD=200ms")
	cmd := exec.Command(binary, "serve")
	cmd.Env = s.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan map[string]any, 1)
	exited := make(chan struct{})
	var logs strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["msg"] == "Catchbox is ready" {
				ready <- rec
			}
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	select {
	case rec := <-ready:
		s.url, _ = rec["http"].(string)
		s.smtp = rec["smtp"].([]any)[0].(string)
	case <-exited:
		t.Fatalf("serve exited: %s", logs.String())
	case <-time.After(time.Minute):
		t.Fatal("serve was not ready after a minute")
	}
	return s
}

// run runs the built binary with args against s and returns its stdout,
// stderr and exit status.
func (s *served) run(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(append([]string{}, s.env...), "CATCHBOX_URL="+s.url)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		status = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), status
}

func (s *served) client(t *testing.T) *client.Client {
	c, err := client.New(s.url, cliKey)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// eachStore runs fn against a server on SQLite and one on PostgreSQL (when
// CATCHBOX_TEST_POSTGRES_URL is set).
func eachStore(t *testing.T, fn func(t *testing.T, s *served)) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(d.String(), func(t *testing.T) { fn(t, serve(t, storetest.URL(t, d))) })
	}
}

func TestWaitCommand(t *testing.T) {
	eachStore(t, func(t *testing.T, s *served) {
		ns := fmt.Sprintf("cli%d", time.Now().UnixNano())
		if _, err := s.client(t).SaveNamespace(context.Background(), ns, client.SettingsRequest{}); err != nil {
			t.Fatal(err)
		}
		to := "dana@" + ns + ".localhost"
		// The wait is started before the mail is sent; whichever reaches the
		// server first, the wait answers the mail.
		type result struct {
			out, errOut string
			status      int
		}
		done := make(chan result, 1)
		go func() {
			out, errOut, status := s.run(t, "wait", "--namespace", ns, "--to", "dana@", "--subject", "reset", "--link")
			done <- result{out, errOut, status}
		}()
		mail := "From: Shop <no-reply@shop.example>\r\nTo: " + to + "\r\nSubject: Reset your password\r\n" +
			"Content-Type: text/html\r\n\r\n<p>Your code: 730211</p><p><a href=\"https://shop.example/reset?t=7&amp;u=1\">Reset</a></p>\r\n"
		if err := smtp.SendMail(s.smtp, nil, "no-reply@shop.example", []string{to}, []byte(mail)); err != nil {
			t.Fatal(err)
		}
		r := <-done
		if r.status != 0 || r.out != "https://shop.example/reset?t=7&u=1\n" {
			t.Fatalf("wait --link: %d %q %q", r.status, r.out, r.errOut)
		}
		if out, _, status := s.run(t, "wait", "--namespace", ns, "--code"); status != 0 || out != "730211\n" {
			t.Errorf("wait --code: %d %q", status, out)
		}
		out, _, status := s.run(t, "wait", "--namespace", ns, "--from", "shop.example", "--json")
		var e client.Email
		if err := json.Unmarshal([]byte(out), &e); status != 0 || err != nil || e.Subject != "Reset your password" || len(e.Links) != 1 || e.Codes[0] != "730211" {
			t.Errorf("wait --json: %d %q %v", status, out, err)
		}
		out, _, status = s.run(t, "wait", "--namespace", ns)
		if status != 0 || !strings.Contains(out, "Subject: Reset your password\n") || !strings.Contains(out, "From: Shop <no-reply@shop.example>\n") ||
			!strings.Contains(out, "Link: https://shop.example/reset?t=7&u=1\n") || !strings.Contains(out, "Code: 730211\n") {
			t.Errorf("wait: %d %q", status, out)
		}

		// Nothing matches: exit status 1 at the timeout, with the reason.
		out, errOut, status := s.run(t, "wait", "--namespace", ns, "--subject", "never sent", "--timeout", "700ms")
		if status != 1 || out != "" || !strings.HasPrefix(errOut, "catchbox: no email in namespace "+ns+` matched (subject "never sent") within 700ms (received since `) ||
			strings.Count(errOut, "\n") != 1 {
			t.Errorf("timeout: %d %q %q", status, out, errOut)
		}
		// A match without a link: 1, said so.
		if err := smtp.SendMail(s.smtp, nil, "a@b.example", []string{"eve@" + ns + ".localhost"},
			[]byte("Subject: plain\r\n\r\nNo link here.\r\n")); err != nil {
			t.Fatal(err)
		}
		if _, errOut, status := s.run(t, "wait", "--namespace", ns, "--to", "eve@", "--link"); status != 1 || !strings.Contains(errOut, `("plain") has no link`) {
			t.Errorf("no link: %d %q", status, errOut)
		}
		// Failures other than no match: 2, with the API's message.
		if _, errOut, status := s.run(t, "wait", "--namespace", ns, "--api-key", "cbx_wrong"); status != 2 || !strings.Contains(errOut, "401 invalid_api_key") {
			t.Errorf("wrong key: %d %q", status, errOut)
		}
		if _, errOut, status := s.run(t, "wait", "--namespace", "no-such-namespace-"+ns); status != 2 || !strings.Contains(errOut, "404 not_found") {
			t.Errorf("unknown namespace: %d %q", status, errOut)
		}
		if _, _, status := s.run(t, "wait", "--namespace", ns, "--link", "--code"); status == 0 {
			t.Errorf("--link with --code accepted")
		}
	})
}

func TestSMSWaitCommand(t *testing.T) {
	eachStore(t, func(t *testing.T, s *served) {
		const phone = "+15550003333"
		cmd := exec.Command(binary, "admin", "sms-number", "add", "--org", "default", "--phone", phone)
		cmd.Env = s.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if _, err := s.client(t).SendVirtualSMS(context.Background(), client.VirtualSMS{FromNumber: "+447700900123", ToNumber: phone,
			Body: "Your Acme sign-in code is 552018. Do not share it."}); err != nil {
			t.Fatal(err)
		}
		if out, errOut, status := s.run(t, "sms", "wait", "--number", phone, "--body", "sign-in", "--code"); status != 0 || out != "552018\n" {
			t.Errorf("sms wait --code: %d %q %q", status, out, errOut)
		}
		out, _, status := s.run(t, "sms", "wait", "--number", "15550003333", "--from", "+44", "--json")
		var m client.SMSMessage
		if err := json.Unmarshal([]byte(out), &m); status != 0 || err != nil || m.FromNumber != "+447700900123" || m.Codes[0] != "552018" {
			t.Errorf("sms wait --json: %d %q %v", status, out, err)
		}
		if out, _, status := s.run(t, "sms", "wait", "--number", phone); status != 0 || !strings.Contains(out, "From: +447700900123\n") ||
			!strings.Contains(out, "Code: 552018\n") || !strings.HasSuffix(out, "\nYour Acme sign-in code is 552018. Do not share it.\n") {
			t.Errorf("sms wait: %d %q", status, out)
		}
		_, errOut, status := s.run(t, "sms", "wait", "--number", phone, "--body", "never", "--timeout", "500ms")
		if status != 1 || !strings.Contains(errOut, `no SMS to `+phone+` matched (body "never") within 500ms`) {
			t.Errorf("sms timeout: %d %q", status, errOut)
		}
	})
}

func TestOTPCommand(t *testing.T) {
	const secret = "JBSWY3DPEHPK3PXP"
	key, _ := totp.DecodeSecret(secret)
	// The code is of the period the command ran in: before or after it.
	codes := func(run func() string) (string, []string) {
		before := totp.Generate(key, totp.DefaultParams, time.Now()).Code
		got := run()
		after := totp.Generate(key, totp.DefaultParams, time.Now()).Code
		return got, []string{before + "\n", after + "\n"}
	}
	// --secret needs no server: none is running here.
	s := &served{url: "http://127.0.0.1:1"}
	got, want := codes(func() string {
		out, _, status := s.run(t, "otp", "--secret", "jbsw y3dp ehpk 3pxp")
		if status != 0 {
			t.Fatalf("otp --secret: %d", status)
		}
		return out
	})
	if got != want[0] && got != want[1] {
		t.Errorf("otp --secret = %q, want one of %q", got, want)
	}
	if _, errOut, status := s.run(t, "otp", "--secret", "not base32!"); status != 2 || !strings.Contains(errOut, "--secret") {
		t.Errorf("bad secret: %d %q", status, errOut)
	}

	eachStore(t, func(t *testing.T, s *served) {
		d, err := s.client(t).CreateDevice(context.Background(), client.NewDevice{SharedSecret: secret})
		if err != nil {
			t.Fatal(err)
		}
		got, want := codes(func() string {
			out, errOut, status := s.run(t, "otp", "--device", d.ID)
			if status != 0 {
				t.Fatalf("otp --device: %d %q", status, errOut)
			}
			return out
		})
		if got != want[0] && got != want[1] {
			t.Errorf("otp --device = %q, want one of %q", got, want)
		}
		if _, errOut, status := s.run(t, "otp", "--device", "01a20190-b47b-725c-89f9-47017426285b"); status != 2 || !strings.Contains(errOut, "404 not_found") {
			t.Errorf("unknown device: %d %q", status, errOut)
		}
	})
}

func TestVersionCommand(t *testing.T) {
	s := &served{}
	if out, _, status := s.run(t, "version"); status != 0 || out != "dev\n" {
		t.Errorf("version = %d %q", status, out)
	}
	bin := filepath.Join(t.TempDir(), "catchbox")
	if out, err := exec.Command("go", "build", "-ldflags", "-X github.com/catchbox/catchbox/internal/version.Version=v1.2.3-test", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if out, err := exec.Command(bin, "version").Output(); err != nil || string(out) != "v1.2.3-test\n" {
		t.Errorf("version with -ldflags = %q, %v", out, err)
	}
}
