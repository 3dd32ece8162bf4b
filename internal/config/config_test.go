package config_test

import (
	"errors"
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

// TestValidateNamesTheSetting: a refused value is named by its flag, and a
// string setting that has a default may not be empty (an empty
// CATCHBOX_MAIL_DOMAIN is a mistake, not a wish).
func TestValidateNamesTheSetting(t *testing.T) {
	for _, c := range []struct {
		set  func(*config.Serve)
		want string
	}{
		{func(c *config.Serve) { c.MailDomain = "" }, "--mail-domain is empty"},
		{func(c *config.Serve) { c.MailDomain = "  " }, "--mail-domain is empty"},
		{func(c *config.Serve) { c.MailDomain = "mail_example.com" }, "--mail-domain must be a domain name"},
		{func(c *config.Serve) { c.MailDomain = "-x.example" }, "--mail-domain must be a domain name"},
		{func(c *config.Serve) { c.DataDir = "" }, "--data-dir is empty"},
		{func(c *config.Serve) { c.HTTPAddr = "" }, "--http-addr is empty"},
		{func(c *config.Serve) { c.HTTPAddr = "8025" }, "--http-addr must be host:port"},
		{func(c *config.Serve) { c.SMTPAddr = "127.0.0.1:2525,2526" }, "--smtp-addr must be host:port"},
		{func(c *config.Serve) { c.DNSBLIPZones = "" }, "--dnsbl-ip-zones is empty"},
		{func(c *config.Serve) { c.WaitHold = 0 }, "--wait-hold must be positive"},
		{func(c *config.Serve) { c.TLSCert = "cert.pem" }, "--tls-cert and --tls-key must be set together"},
		{func(c *config.Serve) { c.RateLimitIPBurst = 0 }, "--rate-limit-ip-burst must be at least 1"},
		{func(c *config.Serve) { c.TrustedProxies = "nonsense" }, "--trusted-proxies names \"nonsense\""},
		{func(c *config.Serve) { c.WebhookWorkers = 0 }, "--webhook-workers must be at least 1"},
		{func(c *config.Serve) { c.ReportTimeout = 0 }, "--report-timeout must be positive"},
		{func(c *config.Serve) { c.Chromium = "/nonexistent/chromium" }, "--chromium names no program"},
		{func(c *config.Serve) { c.PreviewWorkers = 0 }, "--preview-workers must be at least 1"},
		{func(c *config.Serve) { c.PreviewTimeout = 0 }, "--preview-timeout must be positive"},
	} {
		cfg := config.Defaults()
		c.set(&cfg)
		err := cfg.Validate()
		var se *config.SettingError
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || !errors.As(err, &se) {
			t.Errorf("Validate() = %v; want a SettingError starting %q", err, c.want)
		}
	}
	cfg := config.Defaults()
	cfg.MailDomain = "Mail.Example.COM."
	if err := cfg.Validate(); err != nil || cfg.MailDomain != "mail.example.com" {
		t.Errorf("Validate() = %v, mail domain %q; want mail.example.com", err, cfg.MailDomain)
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
	if err := cli.Serve.Validate(); err != nil {
		t.Fatalf("an empty IMAP address was refused: %v", err)
	}
	cli.Serve.IMAPSAddr = "127.0.0.1:1993"
	if err := cli.Serve.Validate(); err == nil {
		t.Fatal("an implicit TLS address without a certificate was accepted")
	}
}
