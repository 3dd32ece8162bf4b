package config_test

import (
	"testing"

	"github.com/catchbox/catchbox/internal/config"
)

// TestAllowPrivateWebhooks: private webhook addresses are allowed by default
// only while the HTTP listener is on loopback; the setting overrides that; a
// value that is not a boolean is refused.
func TestAllowPrivateWebhooks(t *testing.T) {
	for _, c := range []struct {
		httpAddr, setting string
		want              bool
	}{
		{"127.0.0.1:8025", "", true},
		{"[::1]:8025", "", true},
		{"localhost:8025", "", true},
		{"0.0.0.0:8025", "", false},
		{":8025", "", false},
		{"192.168.1.10:8025", "", false},
		{"0.0.0.0:8025", "true", true},
		{"127.0.0.1:8025", "false", false},
	} {
		cfg := config.Defaults()
		cfg.HTTPAddr, cfg.WebhookAllowPrivate = c.httpAddr, c.setting
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if got := cfg.AllowPrivateWebhooks(); got != c.want {
			t.Errorf("http %s, setting %q: %v, want %v", c.httpAddr, c.setting, got, c.want)
		}
	}
	cfg := config.Defaults()
	cfg.WebhookAllowPrivate = "sometimes"
	if err := cfg.Validate(); err == nil {
		t.Error("webhook-allow-private=sometimes was accepted")
	}
	cfg = config.Defaults()
	cfg.WebhookMaxBackoff = cfg.WebhookBackoff / 2
	if err := cfg.Validate(); err == nil {
		t.Error("a maximum backoff below the first was accepted")
	}
}
