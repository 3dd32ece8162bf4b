package config_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/catchbox/catchbox/internal/config"
)

// TestDefaults checks that Defaults gives what kong gives for an empty command
// line and environment, and that the defaults are valid.
func TestDefaults(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "CATCHBOX_") {
			t.Setenv(k, "") // restored when the test ends
			os.Unsetenv(k)
		}
	}
	var cli struct {
		Serve config.Serve `embed:""`
	}
	parser, err := kong.New(&cli)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse(nil); err != nil {
		t.Fatal(err)
	}
	got := config.Defaults()
	if !reflect.DeepEqual(got, cli.Serve) {
		t.Errorf("Defaults() =\n%+v\nkong parses\n%+v", got, cli.Serve)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Defaults() are not valid: %v", err)
	}
}

// An empty CATCHBOX_IMAP_ADDR or CATCHBOX_POP3_ADDR turns that listener off
// (contract section 2), and GET /api/smtp/{namespace} then has no port for
// it; otherwise the port is the address's unless a public port is set.
func TestMailboxListenersOff(t *testing.T) {
	t.Setenv("CATCHBOX_IMAP_ADDR", "")
	t.Setenv("CATCHBOX_POP3_ADDR", "127.0.0.1:2110")
	t.Setenv("CATCHBOX_POP3_PUBLIC_PORT", "110")
	var cli struct {
		Serve config.Serve `embed:""`
	}
	parser, err := kong.New(&cli)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if cli.Serve.IMAPAddr != "" || cli.Serve.POP3Addr != "127.0.0.1:2110" {
		t.Fatalf("imap %q, pop3 %q", cli.Serve.IMAPAddr, cli.Serve.POP3Addr)
	}
	if imap, pop3 := cli.Serve.MailboxPublicPorts(); imap != 0 || pop3 != 110 {
		t.Fatalf("public ports %d, %d", imap, pop3)
	}
	cli.Serve.IMAPSAddr = "127.0.0.1:1993"
	if err := cli.Serve.Validate(); err == nil {
		t.Fatal("an implicit TLS address without a certificate was accepted")
	}
}
