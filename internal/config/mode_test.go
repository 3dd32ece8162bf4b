package config_test

import (
	"testing"

	"github.com/catchbox/catchbox/internal/config"
)

// TestModeRule: the service is in local mode when its HTTP listener is on
// loopback and no public URL is set, unless CATCHBOX_MODE says otherwise;
// the mode gives the defaults of the catch-all namespace and of private
// outgoing targets, and each setting overrides its default.
func TestModeRule(t *testing.T) {
	for _, c := range []struct {
		httpAddr, publicURL, mode, catchAll, allowPrivate string
		wantMode, wantCatchAll                            string
		wantPrivate                                       bool
	}{
		{"127.0.0.1:8025", "", "", "", "", "local", "default", true},
		{"[::1]:8025", "", "", "", "", "local", "default", true},
		{"localhost:8025", "", "", "", "", "local", "default", true},
		{"0.0.0.0:8025", "", "", "", "", "server", "", false},
		{":8025", "", "", "", "", "server", "", false},
		{"192.168.1.10:8025", "", "", "", "", "server", "", false},
		// Behind a reverse proxy: loopback listener, public URL set.
		{"127.0.0.1:8025", "https://mail.example.com", "", "", "", "server", "", false},
		{"0.0.0.0:8025", "", "local", "", "", "local", "default", true},
		{"127.0.0.1:8025", "", "server", "", "", "server", "", false},
		{"0.0.0.0:8025", "", "", "", "true", "server", "", true},
		{"127.0.0.1:8025", "", "", "", "false", "local", "default", false},
		{"127.0.0.1:8025", "", "", "none", "", "local", "", true},
		{"0.0.0.0:8025", "", "", "Catch", "", "server", "catch", false},
	} {
		cfg := config.Defaults()
		cfg.HTTPAddr, cfg.PublicURL, cfg.Mode.Mode, cfg.CatchAll, cfg.AllowPrivateTargets =
			c.httpAddr, c.publicURL, c.mode, c.catchAll, c.allowPrivate
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if got := cfg.EffectiveMode(); got != c.wantMode {
			t.Errorf("%+v: mode %s, want %s", c, got, c.wantMode)
		}
		if got := cfg.CatchAllNamespace(); got != c.wantCatchAll {
			t.Errorf("%+v: catch-all %q, want %q", c, got, c.wantCatchAll)
		}
		if got := cfg.AllowPrivate(); got != c.wantPrivate {
			t.Errorf("%+v: allow private %v, want %v", c, got, c.wantPrivate)
		}
	}
	cfg := config.Defaults()
	cfg.AllowPrivateTargets = "sometimes"
	if err := cfg.Validate(); err == nil {
		t.Error("allow-private-targets=sometimes was accepted")
	}
	cfg = config.Defaults()
	cfg.WebhookMaxBackoff = cfg.WebhookBackoff / 2
	if err := cfg.Validate(); err == nil {
		t.Error("a maximum backoff below the first was accepted")
	}
}
