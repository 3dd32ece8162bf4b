package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/config"
)

func TestParseRelayURL(t *testing.T) {
	good := []struct {
		in   string
		want config.Relay
	}{
		{"smtp://u:p@relay.example:2525?tls=none", config.Relay{Host: "relay.example", Port: 2525, Username: "u", Password: "p", TLS: "none"}},
		{"smtp://relay.example", config.Relay{Host: "relay.example", Port: 587, TLS: "starttls"}},
		{"smtp://relay.example?tls=tls", config.Relay{Host: "relay.example", Port: 465, TLS: "tls"}},
		{"smtp://a%40b:p%3Ass@[::1]:25?tls=starttls", config.Relay{Host: "::1", Port: 25, Username: "a@b", Password: "p:ss", TLS: "starttls"}},
	}
	for _, c := range good {
		r, err := config.ParseRelayURL(c.in)
		if err != nil || r == nil || *r != c.want {
			t.Errorf("ParseRelayURL(%q) = %+v, %v; want %+v", c.in, r, err, c.want)
		}
	}
	if r, err := config.ParseRelayURL(""); r != nil || err != nil {
		t.Errorf("ParseRelayURL(\"\") = %v, %v; want no relay", r, err)
	}
	bad := map[string]string{
		"http://u:secretpw@relay:25":         "scheme must be smtp",
		"smtp://u:secretpw@relay:25?tls=yes": "tls must be starttls, tls or none",
		"smtp://u:secretpw@relay:99999":      "port",
		"smtp://u:secretpw@:25":              "host is required",
		"smtp://u@relay:25":                  "both a user and a password",
		"smtp://u:secretpw@relay:25/x":       "nothing may follow",
		"smtp://u:secretpw@relay:25?tsl=tls": "unknown parameter",
	}
	for in, want := range bad {
		_, err := config.ParseRelayURL(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRelayURL(%q) = %v; want an error saying %q", in, err, want)
			continue
		}
		if strings.Contains(err.Error(), "secretpw") {
			t.Errorf("ParseRelayURL(%q)'s error shows the password: %v", in, err)
		}
	}
	r, _ := config.ParseRelayURL("smtp://user:secretpw@relay:25?tls=none")
	if s := r.String(); strings.Contains(s, "secretpw") || !strings.Contains(s, "user@relay:25") {
		t.Errorf("Relay.String() = %q: want the user and address, never the password", s)
	}
}

func TestValidateOutbound(t *testing.T) {
	c := config.Defaults()
	c.RelayURL = "smtp://u:secretpw@relay:25?tls=bad"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--relay-url") || strings.Contains(err.Error(), "secretpw") {
		t.Errorf("Validate with a bad relay URL = %v", err)
	}
	c = config.Defaults()
	c.OutboundMaxAge = time.Second
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "outbound-max-age") {
		t.Errorf("Validate with an outbound-max-age of 1s = %v", err)
	}
}
