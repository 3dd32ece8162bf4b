package egress_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/catchbox/catchbox/internal/egress"
	"github.com/catchbox/catchbox/internal/egress/egresstest"
)

func TestParseHost(t *testing.T) {
	for _, c := range []struct {
		host string
		want string // "" for a name
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"0X7F.0.0.1", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"0", "0.0.0.0"},
		{"0.0.0.1", "0.0.0.1"},
		{"4294967295", "255.255.255.255"},
		{"169.254.43518", "169.254.169.254"},
		{"127.0.0.1.", "127.0.0.1"},
		{"[::1]", "::1"},
		{"::ffff:127.0.0.1", "::ffff:127.0.0.1"},
		{"[fe80::1%eth0]", "fe80::1"},
		{"4294967296", ""},
		{"256.0.0.1", ""},
		{"1.2.3.4.5", ""},
		{"08.0.0.1", ""},
		{"0x1g", ""},
		{"example.com", ""},
		{"1.example", ""},
		{"", ""},
	} {
		a, ok := egress.ParseHost(c.host)
		got := ""
		if ok {
			got = a.String()
		}
		if got != c.want {
			t.Errorf("ParseHost(%q) = %q, want %q", c.host, got, c.want)
		}
	}
}

func TestWhy(t *testing.T) {
	public := []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "192.0.3.1", "198.20.0.1", "100.128.0.1",
		"2606:4700::1111", "2a00:1450::1", "64:ff9b::808:808", "2002:808:808::1",
		"2001:0:808:808::f7f7:f7f7"} // Teredo: server 8.8.8.8, client ^f7f7f7f7 = 8.8.8.8
	for _, s := range public {
		if why := egress.Why(netip.MustParseAddr(s)); why != "" {
			t.Errorf("Why(%s) = %q, want public", s, why)
		}
	}
	private := map[string]string{
		"0.0.0.0": "this network", "0.0.0.1": "this network", "10.1.2.3": "private", "100.64.0.1": "CGNAT",
		"127.0.0.1": "loopback", "127.255.255.254": "loopback", "169.254.169.254": "link-local",
		"172.16.0.1": "private", "172.31.255.255": "private", "192.0.0.170": "IETF", "192.0.2.1": "documentation",
		"192.88.99.1": "6to4 relay", "192.168.1.1": "private", "198.18.0.1": "benchmarking", "198.19.255.255": "benchmarking",
		"198.51.100.7": "documentation", "203.0.113.9": "documentation", "224.0.0.1": "multicast",
		"239.255.255.250": "multicast", "240.0.0.1": "reserved", "255.255.255.255": "broadcast",
		"::": "unspecified", "::1": "loopback", "::ffff:127.0.0.1": "IPv4-mapped form of 127.0.0.1",
		"::ffff:169.254.169.254": "link-local", "::a9fe:a9fe": "IPv4-compatible", "::127.0.0.1": "IPv4-compatible",
		"64:ff9b::a9fe:a9fe": "NAT64 form of 169.254.169.254", "64:ff9b::7f00:1": "loopback",
		"64:ff9b:1::a9fe:a9fe": "local-use NAT64", "64:ff9b:1:ffff::1": "local-use NAT64",
		"2002:7f00:1::1": "6to4 form of 127.0.0.1", "2002:a9fe:a9fe::": "link-local", "2002:c0a8:101::1": "private",
		"2001:0:7f00:1::":           "Teredo (server) form of 127.0.0.1",
		"2001:0:808:808::5601:5601": "Teredo (client) form of 169.254.169.254", // ^a9fe = 5601
		"100::1":                    "discard", "2001:2::1": "benchmarking", "2001:db8::1": "documentation", "2001:10::1": "IETF",
		"3fff::1": "documentation", "5f00::1": "SRv6", "fc00::1": "unique local", "fd12:3456::1": "unique local",
		"fe80::1": "link-local", "fe80::1%eth0": "link-local", "fec0::1": "site-local", "ff02::1": "multicast",
		"ff05::1:3": "multicast", "1::1": "not a global unicast", "4000::1": "not a global unicast",
	}
	for s, want := range private {
		if why := egress.Why(netip.MustParseAddr(s)); !strings.Contains(why, want) {
			t.Errorf("Why(%s) = %q, want it to say %q", s, why, want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	ctx := context.Background()
	res := egresstest.Resolver(t)
	server := &egress.Guard{Resolver: res}
	local := &egress.Guard{AllowPrivate: true, Resolver: res}
	for _, f := range egresstest.Forms {
		u, err := url.Parse("http://" + f.Host + ":8080/hook")
		if err != nil {
			t.Fatalf("%s: %v", f.Host, err)
		}
		err = server.CheckURL(ctx, u)
		var re *egress.RefusedError
		if !errors.As(err, &re) {
			t.Errorf("server mode: %s accepted (%v)", f.Host, err)
		} else if !strings.Contains(re.Error(), egress.Setting) {
			t.Errorf("server mode: %s: %q does not name the setting", f.Host, re)
		}
		if err := local.CheckURL(ctx, u); err != nil {
			t.Errorf("local mode: %s refused: %v", f.Host, err)
		}
	}
	for _, host := range []string{"93.184.216.34", "public.test", "[2606:4700::1111]", "[64:ff9b::808:808]", "[2002:808:808::1]"} {
		u, _ := url.Parse("https://" + host + "/hook")
		if err := server.CheckURL(ctx, u); err != nil {
			t.Errorf("server mode: public %s refused: %v", host, err)
		}
	}
	// The older IPv4 spellings are stored as a browser reads them.
	for in, want := range map[string]string{"http://0x7f.1:8080/x": "http://127.0.0.1:8080/x",
		"http://2130706433/": "http://127.0.0.1/", "http://[::FFFF:7F00:1]/": "http://[::ffff:127.0.0.1]/",
		"https://public.test/a?b": "https://public.test/a?b"} {
		u, _ := url.Parse(in)
		local.CheckURL(ctx, u)
		if u.String() != want {
			t.Errorf("CheckURL(%s) wrote %s, want %s", in, u, want)
		}
	}
	u, _ := url.Parse("http://0x7f.1/")
	if err := server.CheckURL(ctx, u); err == nil || !strings.Contains(err.Error(), "0x7f.1 is 127.0.0.1, a loopback address") {
		t.Errorf("refusal of 0x7f.1: %v", err)
	}
	u, _ = url.Parse("http://metadata.test/")
	if err := server.CheckURL(ctx, u); err == nil || !strings.Contains(err.Error(), "metadata.test resolves to 169.254.169.254, a link-local address") {
		t.Errorf("refusal of metadata.test: %v", err)
	}
}

// TestDial: the same egresstest.Forms, dialled as they are given (a URL that got past
// creation, as one whose name resolved elsewhere then would): in server mode
// no connection is made, and in local mode those that lead to loopback reach
// the test's server.
func TestDial(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	l, err := net.Listen("tcp", "[::]:0") // loopback over IPv4 and IPv6
	if err != nil {
		t.Skipf("no dual-stack listener here: %v", err)
	}
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	res := egresstest.Resolver(t)
	get := func(g *egress.Guard, host string) error {
		c := &http.Client{Transport: g.Transport(5e9)}
		defer c.CloseIdleConnections()
		resp, err := c.Get("http://" + host + ":" + port + "/hook")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	server := &egress.Guard{Resolver: res}
	for _, f := range egresstest.Forms {
		if f.Host == "mixed.test" {
			// At a connection each address is checked on its own: the
			// public one may be dialled, the private one never.
			continue
		}
		before := hits.Load()
		err := get(server, f.Host)
		if err == nil || hits.Load() != before {
			t.Errorf("server mode: %s was connected to (%v)", f.Host, err)
			continue
		}
		var re *egress.RefusedError
		var dnsErr *net.DNSError
		switch {
		case errors.As(err, &re):
			if !re.Dial || !strings.HasPrefix(re.Error(), "refused to connect to ") {
				t.Errorf("server mode: %s: %v", f.Host, re)
			}
		case errors.As(err, &dnsErr) && (strings.HasPrefix(f.Host, "missing.") || strings.HasSuffix(f.Host, ".invalid")):
			// A name that does not resolve has no address to connect to.
		default:
			t.Errorf("server mode: %s: %v, want a refusal", f.Host, err)
		}
	}
	local := &egress.Guard{AllowPrivate: true, Resolver: res}
	for _, f := range egresstest.Forms {
		if !f.Reach {
			// No route leads there from a test; the check at the
			// connection lets the address through.
			if a, ok := egress.ParseHost(f.Host); ok {
				if err := local.Control("tcp", net.JoinHostPort(a.String(), port), nil); err != nil {
					t.Errorf("local mode: %s refused at dial: %v", f.Host, err)
				}
			}
			continue
		}
		before := hits.Load()
		if err := get(local, f.Host); err != nil || hits.Load() != before+1 {
			t.Errorf("local mode: %s not reached: %v", f.Host, err)
		}
	}
}
