package deliverability

import (
	"fmt"
	"slices"
	"testing"
)

// shortMessage is a short message from the address, as a fixture for the checks
// that read only headers and domains.
func shortMessage(from string) []byte {
	return crlf(fmt.Sprintf("From: %s\nTo: bob@default.localhost\nSubject: Hello\nDate: Wed, 25 Nov 2026 09:00:00 +0000\nMessage-ID: <m1@example.test>\n\nHello Bob.\n", from))
}

// TestDMARC evaluates policies found as RFC 7489 section 6.6.3 finds them,
// with relaxed and strict alignment of SPF and DKIM.
func TestDMARC(t *testing.T) {
	srv := startDNS(t)
	k := keys()
	for _, tc := range []struct {
		name              string
		raw               []byte
		mailFrom          string
		result, applied   string
		policyDomain      string
		policy, subPolicy string
		percent           int
		spfMode, dkimMode string
		spfDomain         string
		spfAligned        bool
		dkimDomain        string
		dkimAligned       bool
		codes             []string
		status            Status
	}{
		{name: "SPF and DKIM aligned", raw: sign(t, shortMessage("alice@shop.test"), "shop.test", "r2048", k.rsa2048), mailFrom: "bounce@shop.test",
			result: "pass", applied: "none", policyDomain: "shop.test", policy: "reject", percent: 100, spfMode: "relaxed", dkimMode: "relaxed",
			spfDomain: "shop.test", spfAligned: true, dkimDomain: "shop.test", dkimAligned: true, codes: []string{"dmarc_pass"}, status: Pass},
		{name: "relaxed: SPF of a subdomain aligns", raw: shortMessage("alice@shop.test"), mailFrom: "bounce@bounces.shop.test",
			result: "pass", applied: "none", policyDomain: "shop.test", policy: "reject", percent: 100, spfMode: "relaxed", dkimMode: "relaxed",
			spfDomain: "bounces.shop.test", spfAligned: true, codes: []string{"dmarc_pass"}, status: Pass},
		{name: "a provider's SPF and DKIM, neither aligned: p=reject applies", raw: sign(t, shortMessage("alice@shop.test"), "esp.test", "k1", k.rsa2048), mailFrom: "bounce@esp.test",
			result: "fail", applied: "reject", policyDomain: "shop.test", policy: "reject", percent: 100, spfMode: "relaxed", dkimMode: "relaxed",
			spfDomain: "esp.test", dkimDomain: "esp.test", codes: []string{"dmarc_fail", "dmarc_spf_not_aligned", "dmarc_dkim_not_aligned"}, status: Fail},
		{name: "strict: SPF of a subdomain does not align, DKIM of the domain does", raw: sign(t, shortMessage("news@strict.test"), "strict.test", "k1", k.rsa2048), mailFrom: "b@bounces.strict.test",
			result: "pass", applied: "none", policyDomain: "strict.test", policy: "quarantine", percent: 100, spfMode: "strict", dkimMode: "strict",
			spfDomain: "bounces.strict.test", dkimDomain: "strict.test", dkimAligned: true, codes: []string{"dmarc_pass"}, status: Pass},
		{name: "strict: SPF of a subdomain alone fails, p=quarantine applies", raw: shortMessage("news@strict.test"), mailFrom: "b@bounces.strict.test",
			result: "fail", applied: "quarantine", policyDomain: "strict.test", policy: "quarantine", percent: 100, spfMode: "strict", dkimMode: "strict",
			spfDomain: "bounces.strict.test", codes: []string{"dmarc_fail", "dmarc_spf_not_aligned"}, status: Fail},
		{name: "organisational domain's record, its sp= for the subdomain", raw: shortMessage("hello@news.org.test"), mailFrom: "bounce@news.org.test",
			result: "fail", applied: "reject", policyDomain: "org.test", policy: "none", subPolicy: "reject", percent: 50, spfMode: "relaxed", dkimMode: "relaxed",
			spfDomain: "news.org.test", codes: []string{"dmarc_fail"}, status: Fail},
		{name: "no record anywhere", raw: shortMessage("alice@pass.test"), mailFrom: "bounce@pass.test",
			result: "none", applied: "none", spfMode: "relaxed", dkimMode: "relaxed", spfDomain: "pass.test", spfAligned: true,
			codes: []string{"dmarc_no_record"}, status: Warning},
		{name: "invalid record", raw: shortMessage("x@bad.test"), mailFrom: "bounce@bad.test",
			result: "permerror", applied: "none", policyDomain: "bad.test", codes: []string{"dmarc_invalid_record"}, status: Fail},
		{name: "two records", raw: shortMessage("x@multi.test"), mailFrom: "bounce@multi.test",
			result: "permerror", applied: "none", policyDomain: "multi.test", codes: []string{"dmarc_multiple_records"}, status: Fail},
		{name: "lookup fails", raw: shortMessage("x@temperror.test"), mailFrom: "bounce@pass.test",
			result: "temperror", applied: "none", codes: []string{"dmarc_temperror"}, status: Warning},
		{name: "no From domain", raw: crlf("To: bob@default.localhost\nSubject: x\n\nHello.\n"), mailFrom: "bounce@pass.test",
			result: "permerror", applied: "none", codes: []string{"dmarc_no_from_domain"}, status: Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := testEnv(srv, input(tc.raw, tc.mailFrom))
			r := checkDMARC(ctx, e, checkSPF(ctx, e), checkDKIM(ctx, e))
			if r.Result != tc.result || r.AppliedPolicy != tc.applied || r.PolicyDomain != tc.policyDomain ||
				r.Policy != tc.policy || r.SubdomainPolicy != tc.subPolicy || r.Percent != tc.percent {
				t.Errorf("result %q applied %q policy domain %q p=%q sp=%q pct=%d", r.Result, r.AppliedPolicy, r.PolicyDomain, r.Policy, r.SubdomainPolicy, r.Percent)
			}
			if r.SPF.Mode != tc.spfMode || r.SPF.Domain != tc.spfDomain && tc.spfMode != "" || r.SPF.Aligned != tc.spfAligned ||
				r.DKIM.Mode != tc.dkimMode || r.DKIM.Domain != tc.dkimDomain || r.DKIM.Aligned != tc.dkimAligned {
				t.Errorf("spf %+v dkim %+v", r.SPF, r.DKIM)
			}
			if !slices.Equal(r.codes(), tc.codes) || r.Status != tc.status {
				t.Fatalf("codes %v status %s, want %v %s: %+v", r.codes(), r.Status, tc.codes, tc.status, r.Issues)
			}
			if tc.result == "fail" || tc.result == "pass" {
				d := details(t, &r.Issues[0])
				if d["policy"] != tc.policy || d["policy_domain"] != tc.policyDomain || d["from_domain"] != e.fromDomain {
					t.Errorf("details %v", d)
				}
				if tc.result == "fail" && d["applied_policy"] != tc.applied {
					t.Errorf("details applied_policy %v", d["applied_policy"])
				}
			}
		})
	}
}
