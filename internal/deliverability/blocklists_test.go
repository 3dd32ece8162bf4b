package deliverability

import (
	"slices"
	"testing"
)

// TestBlocklists asks the test lists about the client IP, the From domain
// and the link domains: listed, clean, refused and failed questions.
func TestBlocklists(t *testing.T) {
	srv := startDNS(t)
	srv.ServFail("shop.test.down.test")
	raw := crlf("From: alice@shop.test\nSubject: x\nContent-Type: text/html\n\n" +
		`<a href="https://www.evil.test/x">offer</a> <a href="https://cdn.shop.test/y">shop</a> <a href="mailto:a@b.test">mail</a>` + "\n")
	zones := Zones{IP: []string{"zen.test", "refuse.test"}, Domain: []string{"dbl.test", "down.test"}}
	e := testEnv(srv, input(raw, "bounce@shop.test"))
	r := checkBlocklists(ctx, e, zones, mustLinks(e))
	want := []BlocklistCheck{
		{Target: clientIP, Source: "client_ip", Zone: "zen.test", Result: "listed", Codes: []string{"127.0.0.2"}, Reason: "Listed for testing: see https://zen.test/lookup?ip=192.0.2.10"},
		{Target: clientIP, Source: "client_ip", Zone: "refuse.test", Result: "lookup_failed", Codes: []string{"127.255.255.254"}},
		{Target: "shop.test", Source: "from_domain", Zone: "dbl.test", Result: "clean"},
		{Target: "shop.test", Source: "from_domain", Zone: "down.test", Result: "lookup_failed"},
		{Target: "evil.test", Source: "link_domain", Zone: "dbl.test", Result: "listed", Codes: []string{"127.0.1.2"}},
		{Target: "evil.test", Source: "link_domain", Zone: "down.test", Result: "clean"},
	}
	if len(r.Checks) != len(want) {
		t.Fatalf("checks %+v", r.Checks)
	}
	for i, w := range want {
		c := r.Checks[i]
		if c.Target != w.Target || c.Source != w.Source || c.Zone != w.Zone || c.Result != w.Result || !slices.Equal(c.Codes, w.Codes) || c.Reason != w.Reason {
			t.Errorf("check %d: %+v, want %+v", i, c, w)
		}
		if (c.Result == "lookup_failed") != (c.Error != "") {
			t.Errorf("check %d: result %s error %q", i, c.Result, c.Error)
		}
	}
	wantCodes := []string{"blocklist_listed", "blocklist_listed", "blocklist_lookup_failed", "blocklist_lookup_failed", "blocklist_clean"}
	if !slices.Equal(r.codes(), wantCodes) || r.Status != Fail {
		t.Fatalf("codes %v status %s", r.codes(), r.Status)
	}
	d := details(t, r.issue("blocklist_listed"))
	if d["target"] != clientIP || d["zone"] != "zen.test" || d["reason"] == nil {
		t.Errorf("listing details %v", d)
	}
}

// TestBlocklistsRFC5782TestPoints: 127.0.0.2 must be listed by every list,
// and 127.0.0.1 must not (RFC 5782 section 5).
func TestBlocklistsRFC5782TestPoints(t *testing.T) {
	srv := startDNS(t)
	for ip, want := range map[string]string{"127.0.0.2": "listed", "127.0.0.1": "clean"} {
		in := Input{Raw: shortMessage("a@pass.test"), ClientIP: ip, Helo: "x.test"}
		r := checkBlocklists(ctx, testEnv(srv, in), Zones{IP: []string{"zen.test"}}, nil)
		if len(r.Checks) != 1 || r.Checks[0].Result != want {
			t.Errorf("%s: %+v, want %s", ip, r.Checks, want)
		}
	}
}

func TestBlocklistsNotConfigured(t *testing.T) {
	srv := startDNS(t)
	r := checkBlocklists(ctx, testEnv(srv, input(shortMessage("a@pass.test"), "")), Zones{}, nil)
	if !slices.Equal(r.codes(), []string{"blocklist_not_configured"}) || r.Status != Warning || len(r.Checks) != 0 {
		t.Errorf("codes %v status %s checks %v", r.codes(), r.Status, r.Checks)
	}
}

func TestReverseIP(t *testing.T) {
	for ip, want := range map[string]string{
		"192.0.2.10":  "10.2.0.192.",
		"2001:db8::1": "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.",
	} {
		if got := reverseIP(parseIP(ip)); got != want {
			t.Errorf("reverseIP(%s) = %q, want %q", ip, got, want)
		}
	}
}

func mustLinks(e *env) []link {
	_, links := checkContent(e)
	return links
}
