package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/server/servertest"
)

// captureLog sends the process log to a buffer until the test ends.
func captureLog(t *testing.T) *syncBuffer {
	t.Helper()
	var buf syncBuffer
	saved := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(saved) })
	return &buf
}

// syncBuffer is a bytes.Buffer safe for the goroutines that log.
type syncBuffer = server.SyncBuffer

// TestFirstStartBindsFirst checks that a first start whose port is taken
// fails before it creates anything, so the key it would print is not lost:
// the store stays empty, and the next start, on a free port, creates the
// organisation and prints the key. A later start prints no key and logs how
// to make one.
func TestFirstStartBindsFirst(t *testing.T) {
	logs := captureLog(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := servertest.Config(t)
	cfg.HTTPAddr, cfg.SMTPAddr = "127.0.0.1:0", taken.Addr().String()
	var out bytes.Buffer
	err = server.Run(context.Background(), cfg, &out, nil)
	if err == nil || !strings.Contains(err.Error(), "listen SMTP") {
		t.Fatalf("Run on a taken port: %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("a failed start printed %q", out.String())
	}
	db, err := server.OpenStore(context.Background(), cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	var orgs int
	db.QueryRow(context.Background(), "SELECT COUNT(*) FROM orgs").Scan(&orgs)
	db.Close()
	if orgs != 0 {
		t.Fatalf("a start that could not bind created %d organisations", orgs)
	}

	cfg.SMTPAddr = "127.0.0.1:0"
	run := start(t, cfg, &out)
	key := regexpKey(t, out.String())
	if strings.Contains(logs.String(), key) {
		t.Errorf("the key was logged:\n%s", logs.String())
	}
	run.cancel()
	run.wait(t)
	out.Reset()
	run = start(t, cfg, &out)
	if strings.Contains(out.String(), "cbx_") || !strings.Contains(out.String(), "local mode") {
		t.Errorf("a later start printed %q, want the mode and no key", out.String())
	}
	if !strings.Contains(logs.String(), "catchbox admin key create --org default") {
		t.Errorf("a later start did not log how to make a key:\n%s", logs.String())
	}
	run.cancel()
	run.wait(t)
}

// TestAllInterfaces checks that listeners on all interfaces without
// CATCHBOX_PUBLIC_URL give links and SMTP settings that name localhost, not
// the unspecified address, with a warning; with the public URL set, links
// and the SMTP host come from it alone.
func TestAllInterfaces(t *testing.T) {
	logs := captureLog(t)
	cfg := servertest.Config(t)
	cfg.HTTPAddr, cfg.SMTPAddr = "0.0.0.0:0", "0.0.0.0:0"
	var out bytes.Buffer
	run := start(t, cfg, &out)
	key := regexpKey(t, out.String())
	_, port, _ := net.SplitHostPort(run.ready.HTTPAddr)
	if want := "http://localhost:" + port; run.ready.PublicURL != want {
		t.Errorf("links base %q, want %q", run.ready.PublicURL, want)
	}
	var settings struct{ Data struct{ Host string } }
	run.get(t, key, "/api/smtp/default", &settings)
	if settings.Data.Host != "localhost" {
		t.Errorf("SMTP host %q, want localhost", settings.Data.Host)
	}
	for _, w := range []string{"CATCHBOX_PUBLIC_URL is not set", "neither CATCHBOX_PUBLIC_URL nor CATCHBOX_SMTP_PUBLIC_HOST"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("no warning %q in:\n%s", w, logs.String())
		}
	}
	run.cancel()
	run.wait(t)

	// With the public URL, links use it and nothing is warned.
	logs2 := captureLog(t)
	cfg.PublicURL = "https://catchbox.example.test/"
	run = start(t, cfg, &out)
	if run.ready.PublicURL != "https://catchbox.example.test" {
		t.Errorf("links base %q, want the public URL", run.ready.PublicURL)
	}
	if strings.Contains(logs2.String(), "all interfaces") {
		t.Errorf("warned with a public URL set:\n%s", logs2.String())
	}
	run.cancel()
	run.wait(t)
}

// regexpKey returns the API key a first start printed, as the line to paste
// into a shell.
func regexpKey(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^export CATCHBOX_API_KEY=(cbx_\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no API key printed: %q", out)
	}
	return m[1]
}
