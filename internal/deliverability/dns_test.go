package deliverability

import (
	"slices"
	"testing"
)

// TestDNSCheck reads the sender's records as published on the test server.
func TestDNSCheck(t *testing.T) {
	srv := startDNS(t)
	for _, tc := range []struct {
		name           string
		from, mailFrom string
		ip, helo       string
		mx, a, ptr     []string
		spfDomains     []string
		spfLookups     []int
		dmarc          string
		fcrdns         bool
		codes          []string
		status         Status
	}{
		{name: "all published and confirmed", from: "alice@shop.test", mailFrom: "bounce@shop.test", ip: clientIP, helo: clientHelo,
			mx: []string{"10 mx.shop.test"}, a: []string{}, ptr: []string{"mail.shop.test"}, spfDomains: []string{"shop.test"}, spfLookups: []int{0},
			dmarc: "v=DMARC1; p=reject; rua=mailto:dmarc@shop.test", fcrdns: true,
			codes: []string{"dns_dmarc_ok", "dns_mx_ok", "dns_ptr_ok", "dns_spf_ok"}, status: Pass},
		{name: "envelope domain's SPF read too; HELO not the PTR name", from: "alice@shop.test", mailFrom: "bounce@esp.test", ip: clientIP, helo: "client.other.test",
			mx: []string{"10 mx.shop.test"}, a: []string{}, ptr: []string{"mail.shop.test"}, spfDomains: []string{"shop.test", "esp.test"}, spfLookups: []int{0, 0},
			dmarc: "v=DMARC1; p=reject; rua=mailto:dmarc@shop.test", fcrdns: true,
			codes: []string{"dns_dmarc_ok", "dns_helo_mismatch", "dns_mx_ok", "dns_spf_ok", "dns_spf_ok"}, status: Warning},
		{name: "no MX nor A, eleven SPF lookups, no DMARC, PTR not confirmed", from: "x@loop.test", mailFrom: "x@loop.test", ip: "192.0.2.11", helo: "host.other.test",
			mx: []string{}, a: []string{}, ptr: []string{"host.other.test"}, spfDomains: []string{"loop.test"}, spfLookups: []int{11},
			codes: []string{"dns_dmarc_missing", "dns_fcrdns_failed", "dns_no_mx_or_a", "dns_spf_too_many_lookups"}, status: Fail},
		{name: "two SPF records, no PTR", from: "x@two.test", mailFrom: "x@two.test", ip: "192.0.2.12", helo: "x.two.test",
			mx: []string{}, a: []string{}, ptr: []string{}, spfDomains: []string{"two.test"}, spfLookups: []int{0},
			codes: []string{"dns_dmarc_missing", "dns_no_mx_or_a", "dns_ptr_missing", "dns_spf_multiple"}, status: Fail},
		{name: "A without MX, no SPF", from: "x@none.test", mailFrom: "", ip: clientIP, helo: clientHelo,
			mx: []string{}, a: []string{"192.0.2.80"}, ptr: []string{"mail.shop.test"}, spfDomains: []string{"none.test"}, spfLookups: []int{0}, fcrdns: true,
			codes: []string{"dns_dmarc_missing", "dns_no_mx", "dns_ptr_ok", "dns_spf_missing"}, status: Warning},
		{name: "domain does not exist", from: "x@nowhere.test", mailFrom: "", ip: clientIP, helo: clientHelo,
			mx: []string{}, a: []string{}, ptr: []string{"mail.shop.test"}, spfDomains: []string{"nowhere.test"}, spfLookups: []int{0}, fcrdns: true,
			codes: []string{"dns_dmarc_missing", "dns_domain_not_found", "dns_ptr_ok", "dns_spf_missing"}, status: Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Raw: shortMessage(tc.from), ClientIP: tc.ip, Helo: tc.helo, MailFrom: tc.mailFrom}
			r := checkDNS(ctx, testEnv(srv, in))
			if !slices.Equal(r.MX, tc.mx) || !slices.Equal(r.A, tc.a) || !slices.Equal(r.PTR, tc.ptr) || r.FCrDNS != tc.fcrdns ||
				r.DMARCRecord != tc.dmarc || r.Domain != domainOf(tc.from) || r.ClientIP != tc.ip || r.Helo != tc.helo {
				t.Errorf("mx %v a %v ptr %v fcrdns %v dmarc %q domain %q", r.MX, r.A, r.PTR, r.FCrDNS, r.DMARCRecord, r.Domain)
			}
			var domains []string
			var lookups []int
			for _, s := range r.SPF {
				domains, lookups = append(domains, s.Domain), append(lookups, s.Lookups)
			}
			if !slices.Equal(domains, tc.spfDomains) || !slices.Equal(lookups, tc.spfLookups) {
				t.Errorf("spf %+v", r.SPF)
			}
			if !slices.Equal(r.codes(), tc.codes) || r.Status != tc.status {
				t.Fatalf("codes %v status %s, want %v %s", r.codes(), r.Status, tc.codes, tc.status)
			}
		})
	}
}
