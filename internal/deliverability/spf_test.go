package deliverability

import (
	"fmt"
	"strings"
	"testing"
)

// TestSPFResults evaluates every RFC 7208 result against the test zones, as
// the DNS server on loopback answers them.
func TestSPFResults(t *testing.T) {
	srv := startDNS(t)
	raw := fixture(t, "lunch.eml")
	for _, tc := range []struct {
		name, mailFrom, helo, ip string
		result, code             string
		severity                 Status
		identity, domain, record string
	}{
		{"pass", "bounce@pass.test", clientHelo, clientIP, "pass", "spf_pass", Pass, "mailfrom", "pass.test", "v=spf1 ip4:192.0.2.0/24 -all"},
		{"fail", "bounce@fail.test", clientHelo, clientIP, "fail", "spf_fail", Fail, "mailfrom", "fail.test", "v=spf1 ip4:198.51.100.0/24 -all"},
		{"softfail", "bounce@softfail.test", clientHelo, clientIP, "softfail", "spf_softfail", Warning, "mailfrom", "softfail.test", "v=spf1 ip4:198.51.100.0/24 ~all"},
		{"neutral", "bounce@neutral.test", clientHelo, clientIP, "neutral", "spf_neutral", Warning, "mailfrom", "neutral.test", "v=spf1 ?all"},
		{"none: no TXT record", "bounce@none.test", clientHelo, clientIP, "none", "spf_none", Warning, "mailfrom", "none.test", ""},
		{"none: no such domain", "bounce@nowhere.test", clientHelo, clientIP, "none", "spf_none", Warning, "mailfrom", "nowhere.test", ""},
		{"temperror: SERVFAIL", "bounce@temperror.test", clientHelo, clientIP, "temperror", "spf_temperror", Warning, "mailfrom", "temperror.test", ""},
		{"permerror: two records", "bounce@two.test", clientHelo, clientIP, "permerror", "spf_multiple_records", Fail, "mailfrom", "two.test", ""},
		{"permerror: eleven lookups", "bounce@loop.test", clientHelo, clientIP, "permerror", "spf_too_many_lookups", Fail, "mailfrom", "loop.test", loopRecord()},
		{"null sender: the HELO identity passes", "", "mail.helo.test", clientIP, "pass", "spf_pass", Pass, "helo", "mail.helo.test", "v=spf1 ip4:192.0.2.10 -all"},
		{"null sender: the HELO identity fails from another IP", "", "mail.helo.test", "192.0.2.11", "fail", "spf_fail", Fail, "helo", "mail.helo.test", "v=spf1 ip4:192.0.2.10 -all"},
		{"null sender, HELO an address literal", "", "[192.0.2.10]", clientIP, "none", "spf_none", Warning, "helo", "[192.0.2.10]", ""},
		{"IPv6 client not in an ip4 record", "bounce@pass.test", clientHelo, "2001:db8::10", "fail", "spf_fail", Fail, "mailfrom", "pass.test", "v=spf1 ip4:192.0.2.0/24 -all"},
		{"no client IP recorded", "bounce@pass.test", clientHelo, "", "none", "spf_not_evaluated", Warning, "mailfrom", "pass.test", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Raw: raw, ClientIP: tc.ip, Helo: tc.helo, MailFrom: tc.mailFrom}
			r := checkSPF(ctx, testEnv(srv, in))
			if r.Result != tc.result || r.Identity != tc.identity || r.Domain != tc.domain || r.Record != tc.record || r.ClientIP != tc.ip {
				t.Errorf("result %q identity %q domain %q record %q ip %q, want %q %q %q %q %q",
					r.Result, r.Identity, r.Domain, r.Record, r.ClientIP, tc.result, tc.identity, tc.domain, tc.record, tc.ip)
			}
			if len(r.Issues) != 1 || r.Issues[0].Code != tc.code || r.Issues[0].Severity != tc.severity || r.Status != tc.severity {
				t.Fatalf("issues %+v status %s, want one %s (%s)", r.Issues, r.Status, tc.code, tc.severity)
			}
			if r.Issues[0].Message == "" {
				t.Error("issue without a message")
			}
			if tc.code == "spf_not_evaluated" || tc.identity == "helo" && tc.result == "none" {
				return
			}
			d := details(t, &r.Issues[0])
			if d["result"] != tc.result || d["domain"] != tc.domain || d["client_ip"] != tc.ip || d["identity"] != tc.identity {
				t.Errorf("details %v", d)
			}
		})
	}
}

// TestSPFEvidence checks what a failing result tells the reader: the record,
// the IP and the mechanism to add.
func TestSPFEvidence(t *testing.T) {
	srv := startDNS(t)
	r := checkSPF(ctx, testEnv(srv, input(fixture(t, "lunch.eml"), "bounce@fail.test")))
	i := r.issue("spf_fail")
	if i == nil {
		t.Fatalf("issues %v", r.codes())
	}
	for _, want := range []string{"fail.test", clientIP, "ip4:" + clientIP} {
		if !strings.Contains(i.Message, want) {
			t.Errorf("message %q does not name %q", i.Message, want)
		}
	}
	d := details(t, i)
	if recs, _ := d["records"].([]any); len(recs) != 1 || recs[0] != "v=spf1 ip4:198.51.100.0/24 -all" {
		t.Errorf("records %v", d["records"])
	}
	if tr, _ := d["trace"].([]any); len(tr) == 0 {
		t.Error("no evaluation trace in the details")
	}

	two := checkSPF(ctx, testEnv(srv, input(nil, "x@two.test"))).issue("spf_multiple_records")
	if recs, _ := details(t, two)["records"].([]any); len(recs) != 2 {
		t.Errorf("two records: %v", details(t, two)["records"])
	}
}

// TestResolverTCP asks for an answer too long for UDP: it must come over TCP.
func TestResolverTCP(t *testing.T) {
	srv := startDNS(t)
	r := checkSPF(ctx, testEnv(srv, input(nil, "bounce@tcp.test")))
	if r.Result != "pass" || r.Record != "v=spf1 ip4:192.0.2.0/24 -all" {
		t.Fatalf("result %q record %q, issues %v", r.Result, r.Record, r.Issues)
	}
	if udp, tcp := srv.Queries(); udp == 0 || tcp == 0 {
		t.Errorf("queries: %d over UDP, %d over TCP; want the truncated answer asked again over TCP", udp, tcp)
	}
}

// loopRecord is loop.test's SPF record: eleven includes.
func loopRecord() string {
	r := "v=spf1"
	for i := 1; i <= 11; i++ {
		r += fmt.Sprintf(" include:l%d.loop.test", i)
	}
	return r + " -all"
}
