package deliverability

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/testkit"
)

// TestAnalyzeFixtures runs the whole report on fixture messages signed and
// sent as a real sender would, and checks each section's verdict.
func TestAnalyzeFixtures(t *testing.T) {
	srv := startDNS(t)
	a := &Analyzer{Resolver: testResolver(srv), Zones: Zones{IP: []string{"zen.test"}, Domain: []string{"dbl.test"}}, ByHost: "localhost"}
	k := keys()
	good := sign(t, fixture(t, "plain.eml"), "shop.test", "r2048", k.rsa2048)
	for _, tc := range []struct {
		name     string
		in       Input
		overall  string
		sections map[string]Status
	}{
		{"signed, from an authorised and listed server", Input{Raw: good, ClientIP: clientIP, Helo: clientHelo, MailFrom: "bounce@shop.test"},
			"issue_detected", map[string]Status{"spf": Pass, "dkim": Pass, "dmarc": Pass, "blocklists": Fail, "spamassassin": Warning, "content": Pass, "dns": Pass}},
		{"signed, from an authorised, unlisted server", Input{Raw: good, ClientIP: "192.0.2.20", Helo: clientHelo, MailFrom: "bounce@shop.test"},
			"warning", map[string]Status{"spf": Pass, "dkim": Pass, "dmarc": Pass, "blocklists": Pass, "spamassassin": Warning, "content": Pass, "dns": Warning}},
		{"a newsletter through a provider", Input{Raw: sign(t, fixture(t, "newsletter.eml"), "esp.test", "k1", k.rsa2048), ClientIP: "192.0.2.20", Helo: "out.esp.test", MailFrom: "bounce@esp.test"},
			"issue_detected", map[string]Status{"spf": Pass, "dkim": Pass, "dmarc": Warning, "blocklists": Fail, "spamassassin": Warning, "content": Warning, "dns": Fail}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.Analyze(ctx, tc.in, received)
			got := map[string]Status{"spf": r.SPF.Status, "dkim": r.DKIM.Status, "dmarc": r.DMARC.Status, "blocklists": r.Blocklists.Status,
				"spamassassin": r.SpamAssassin.Status, "content": r.Content.Status, "dns": r.DNS.Status}
			for s, want := range tc.sections {
				if got[s] != want {
					t.Errorf("%s: %s, want %s (%v)", s, got[s], want, sectionCodes(r, s))
				}
			}
			if r.OverallStatus != tc.overall {
				t.Errorf("overall %s, want %s", r.OverallStatus, tc.overall)
			}
			if r.DNSQueries == 0 || r.GeneratedAt == "" {
				t.Errorf("dns_queries %d generated_at %q", r.DNSQueries, r.GeneratedAt)
			}
			checkShape(t, r)
		})
	}
}

func sectionCodes(r *Report, name string) []string {
	switch name {
	case "spf":
		return r.SPF.codes()
	case "dkim":
		return r.DKIM.codes()
	case "dmarc":
		return r.DMARC.codes()
	case "blocklists":
		return r.Blocklists.codes()
	case "spamassassin":
		return r.SpamAssassin.codes()
	case "content":
		return r.Content.codes()
	}
	return r.DNS.codes()
}

// checkShape reads the report as JSON: every section has a status and an
// issues array, every issue a code, a message and a severity.
func checkShape(t *testing.T, r *Report) {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, s := range []string{"spf", "dkim", "dmarc", "blocklists", "spamassassin", "content", "dns"} {
		sec, ok := m[s].(map[string]any)
		if !ok {
			t.Fatalf("section %s missing", s)
		}
		if st := sec["status"]; st != "pass" && st != "warning" && st != "fail" {
			t.Errorf("%s status %v", s, st)
		}
		issues, ok := sec["issues"].([]any)
		if !ok || len(issues) == 0 {
			t.Errorf("%s issues %v", s, sec["issues"])
		}
		for _, i := range issues {
			i := i.(map[string]any)
			if i["code"] == "" || i["message"] == "" || (i["severity"] != "pass" && i["severity"] != "warning" && i["severity"] != "fail") {
				t.Errorf("%s issue %v", s, i)
			}
		}
	}
}

// TestAnalyzeWithoutNetwork: with a DNS server that never answers (no
// network at all), the report still completes, each lookup failing at its
// time limit, and the checks that needed DNS say their lookups failed.
func TestAnalyzeWithoutNetwork(t *testing.T) {
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	a := &Analyzer{Resolver: NewResolver(silent.LocalAddr().String(), 300*time.Millisecond),
		Zones: Zones{IP: []string{"zen.test"}, Domain: []string{"dbl.test"}}, ByHost: "localhost"}
	raw := sign(t, fixture(t, "plain.eml"), "shop.test", "r2048", keys().rsa2048)
	r := a.Analyze(ctx, input(raw, "bounce@shop.test"), received)
	for name, code := range map[string]string{"spf": "spf_temperror", "dkim": "dkim_temperror", "dmarc": "dmarc_temperror",
		"blocklists": "blocklist_lookup_failed", "dns": "dns_lookup_failed"} {
		if !slices.Contains(sectionCodes(r, name), code) {
			t.Errorf("%s: codes %v, want %s", name, sectionCodes(r, name), code)
		}
	}
	if r.SPF.Result != "temperror" || r.DMARC.Result != "temperror" || r.DKIM.Signatures[0].Result != "temperror" {
		t.Errorf("results: spf %s dmarc %s dkim %s", r.SPF.Result, r.DMARC.Result, r.DKIM.Signatures[0].Result)
	}
	if r.OverallStatus != "warning" {
		t.Errorf("overall %s", r.OverallStatus)
	}
	checkShape(t, r)
}

// TestAnalyzeCheckLimit: the checks' lookups end with their check's time
// limit, whatever the resolver's own; each reports its lookups as failed.
func TestAnalyzeCheckLimit(t *testing.T) {
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	a := &Analyzer{Resolver: NewResolver(silent.LocalAddr().String(), time.Minute), CheckTimeout: 300 * time.Millisecond,
		Zones: Zones{IP: []string{"zen.test"}}}
	r := a.Analyze(ctx, input(fixture(t, "plain.eml"), "bounce@shop.test"), received)
	for name, code := range map[string]string{"spf": "spf_temperror", "blocklists": "blocklist_lookup_failed", "dns": "dns_lookup_failed"} {
		if !slices.Contains(sectionCodes(r, name), code) {
			t.Errorf("%s: %v, want %s", name, sectionCodes(r, name), code)
		}
	}
	checkShape(t, r)
}

// TestCheckTimedOut: a check that ignores its context past its time limit,
// or panics, gets a section saying so; the report does not wait for it.
func TestCheckTimedOut(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	late := func(code, msg string) *SPFResult {
		r := &SPFResult{Result: "temperror"}
		r.late(code, msg)
		return r
	}
	stuck := start(ctx, 50*time.Millisecond, func(context.Context) *SPFResult {
		<-release
		return &SPFResult{Result: "pass"}
	}, late)
	if r := stuck(); r.Result != "temperror" || !slices.Equal(r.codes(), []string{"check_timed_out"}) || r.Status != Warning {
		t.Errorf("stuck check: %+v", r)
	}
	broken := start(ctx, time.Minute, func(context.Context) *SPFResult { panic("broken check") }, late)
	if r := broken(); !slices.Equal(r.codes(), []string{"check_failed"}) {
		t.Errorf("panicking check: %+v", r)
	}
}

// TestRecoverPart: a panic in a goroutine a check starts for one of its
// parts is recovered there and recorded as that part's failure, instead of
// ending the process.
func TestRecoverPart(t *testing.T) {
	failed := make(chan string, 1)
	go func() {
		defer recoverPart("test lookup", func() { failed <- "recorded" })
		panic("a lookup went wrong")
	}()
	if got := testkit.Receive(t, "the part's failure recorded", failed); got != "recorded" {
		t.Fatalf("failed got %q", got)
	}
}
