package httpapi

import (
	"net/http/httptest"
	"testing"

	"github.com/catchbox/catchbox/internal/config"
)

// The client address is the connection's peer; X-Forwarded-For counts only
// when that peer is a trusted proxy, and then only the hops the trusted proxies
// appended: whatever the client wrote into the header itself is skipped.
func TestClientAddr(t *testing.T) {
	cfg := config.Defaults()
	cfg.TrustedProxies = "10.0.0.0/8, 192.0.2.1"
	l, err := NewLimits(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		remote, xff, want string
	}{
		{"203.0.113.9:5000", "", "203.0.113.9"},
		{"203.0.113.9:5000", "198.51.100.1", "203.0.113.9"}, // not from a proxy: the header is ignored
		{"192.0.2.1:443", "198.51.100.1", "198.51.100.1"},
		{"192.0.2.1:443", "6.6.6.6, 198.51.100.1", "198.51.100.1"}, // the client's own entry is skipped
		{"10.1.2.3:443", "198.51.100.1, 10.9.9.9", "198.51.100.1"}, // past a chain of trusted proxies
		{"10.1.2.3:443", "10.9.9.9", "10.9.9.9"},                   // only proxies: the farthest
		{"10.1.2.3:443", "junk, 198.51.100.1", "198.51.100.1"},
		{"10.1.2.3:443", "198.51.100.1, junk", "10.1.2.3"}, // a malformed hop ends the walk
		{"[2001:db8:1:2::5]:443", "", "2001:db8:1:2::/64"},
		{"[::ffff:192.0.2.1]:443", "198.51.100.7", "198.51.100.7"},
	} {
		r := httptest.NewRequest("GET", "/healthz", nil)
		r.RemoteAddr = tc.remote
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := l.clientKey(r); got != tc.want {
			t.Errorf("remote %s, X-Forwarded-For %q: client %s, want %s", tc.remote, tc.xff, got, tc.want)
		}
	}

	// Without trusted proxies the header never counts.
	l, _ = NewLimits(config.Defaults())
	r := httptest.NewRequest("GET", "/healthz", nil)
	r.RemoteAddr = "10.1.2.3:443"
	r.Header.Set("X-Forwarded-For", "198.51.100.1")
	if got := l.clientKey(r); got != "10.1.2.3" {
		t.Errorf("no trusted proxies: client %s, want 10.1.2.3", got)
	}
}
