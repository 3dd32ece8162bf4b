package deliverability

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/emersion/go-msgauth/dmarc"
)

// Alignment is how one authentication mechanism stands against the From
// domain (RFC 7489 section 3.1).
type Alignment struct {
	// Mode is the policy's: relaxed (the organisational domains match) or
	// strict (the domains are equal).
	Mode string `json:"mode"`
	// Domain is the domain the mechanism authenticated: the SPF domain, or
	// the d= of the passing DKIM signature compared (the aligned one if any).
	Domain string `json:"domain,omitempty"`
	// Authenticated is whether the mechanism passed at all.
	Authenticated bool `json:"authenticated"`
	Aligned       bool `json:"aligned"`
}

// DMARCResult is the dmarc section: the From domain's policy, found as RFC
// 7489 section 6.6.3 finds it, and the message's result under it.
type DMARCResult struct {
	Section
	// Result is pass, fail, none (no policy), temperror or permerror.
	Result               string `json:"result"`
	FromDomain           string `json:"from_domain"`
	OrganizationalDomain string `json:"organizational_domain,omitempty"`
	// PolicyDomain is where the record was found: the From domain, or its
	// organisational domain when the From domain has none.
	PolicyDomain    string `json:"policy_domain,omitempty"`
	Record          string `json:"record,omitempty"`
	Policy          string `json:"policy,omitempty"`           // p=
	SubdomainPolicy string `json:"subdomain_policy,omitempty"` // sp=
	Percent         int    `json:"percent,omitempty"`          // pct=, 100 when absent
	// AppliedPolicy is what a receiver applies to this message: none when it
	// passes or there is no policy, else the policy for the From domain.
	AppliedPolicy string    `json:"applied_policy"`
	SPF           Alignment `json:"spf_alignment"`
	DKIM          Alignment `json:"dkim_alignment"`
}

// policy is a DMARC record found for a domain.
type policy struct {
	domain string
	txt    string
	rec    *dmarc.Record
}

// Causes of a failed policy lookup.
var (
	errMultipleDMARC = errors.New("more than one DMARC record")
	errInvalidDMARC  = errors.New("invalid DMARC record")
)

// lookupDMARC returns the DMARC record at _dmarc.<domain>: nil when there is
// none; errMultipleDMARC or errInvalidDMARC (wrapping the parser's reason)
// with the record's text; or a lookup's temporary error.
func lookupDMARC(ctx context.Context, l *Lookups, domain string) (*policy, error) {
	txts, err := l.LookupTXT(ctx, "_dmarc."+domain)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var recs []string
	for _, t := range txts {
		// RFC 7489 section 6.6.3: records not starting with v=DMARC1 are discarded.
		if strings.HasPrefix(t, "v=DMARC1") {
			recs = append(recs, t)
		}
	}
	switch len(recs) {
	case 0:
		return nil, nil
	case 1:
	default:
		return &policy{domain: domain, txt: strings.Join(recs, " | ")}, errMultipleDMARC
	}
	p := &policy{domain: domain, txt: recs[0]}
	rec, err := dmarc.Parse(recs[0])
	if err != nil {
		return p, fmt.Errorf("%w: %v", errInvalidDMARC, strings.TrimPrefix(err.Error(), "dmarc: "))
	}
	p.rec = rec
	return p, nil
}

// discoverPolicy finds the policy for the From domain (RFC 7489 section
// 6.6.3): its own record, else its organisational domain's.
func discoverPolicy(ctx context.Context, l *Lookups, from string) (*policy, error) {
	p, err := lookupDMARC(ctx, l, from)
	if p != nil || err != nil {
		return p, err
	}
	if org := orgDomain(from); org != from {
		return lookupDMARC(ctx, l, org)
	}
	return nil, nil
}

// checkDMARC evaluates DMARC for the From domain from the spf and dkim
// sections' results.
func checkDMARC(ctx context.Context, e *env, spfRes *SPFResult, dkimRes *DKIMResult) *DMARCResult {
	r := &DMARCResult{FromDomain: e.fromDomain, AppliedPolicy: "none", Result: "none"}
	defer r.finish()
	if !validDomain(e.fromDomain) {
		r.Result = "permerror"
		r.add(Fail, "dmarc_no_from_domain", map[string]any{"from": e.msg.From.Address},
			"The From header has no usable domain (%q): RFC 5322 section 3.6.2 requires one From address, and DMARC cannot be applied; receivers reject or junk such mail. Send from an address in your domain.", e.msg.From.Address)
		return r
	}
	r.OrganizationalDomain = orgDomain(e.fromDomain)
	p, err := discoverPolicy(ctx, e.dns, e.fromDomain)
	if p != nil {
		r.PolicyDomain, r.Record = p.domain, p.txt
	}
	d := map[string]any{"from_domain": r.FromDomain, "organizational_domain": r.OrganizationalDomain}
	switch {
	case errors.Is(err, errMultipleDMARC):
		r.Result = "permerror"
		d["records"] = r.Record
		r.add(Fail, "dmarc_multiple_records", d,
			"_dmarc.%s holds more than one DMARC record, so receivers apply no DMARC policy at all (RFC 7489 section 6.6.3). Keep exactly one TXT record starting with v=DMARC1.", p.domain)
		return r
	case errors.Is(err, errInvalidDMARC):
		r.Result = "permerror"
		d["record"], d["error"] = r.Record, err.Error()
		r.add(Fail, "dmarc_invalid_record", d,
			"The DMARC record at _dmarc.%s is invalid (%v), so receivers cannot apply it. Fix it, for example \"v=DMARC1; p=quarantine; rua=mailto:dmarc@%s\" (RFC 7489 section 6.3).", p.domain, strings.TrimPrefix(err.Error(), errInvalidDMARC.Error()+": "), r.OrganizationalDomain)
		return r
	case err != nil:
		r.Result = "temperror"
		d["error"] = lookupFailure(err)
		r.add(Warning, "dmarc_temperror", d,
			"The DMARC record of %s could not be read (%s); receivers may defer the mail. Check that the domain's name servers answer.", r.FromDomain, lookupFailure(err))
		return r
	}
	spfMode, dkimMode := dmarc.AlignmentRelaxed, dmarc.AlignmentRelaxed
	if p != nil {
		spfMode, dkimMode = string(p.rec.SPFAlignment), string(p.rec.DKIMAlignment)
	}
	r.SPF = alignSPF(spfRes, e.fromDomain, spfMode)
	r.DKIM = alignDKIM(dkimRes, e.fromDomain, dkimMode)
	d["spf_alignment"], d["dkim_alignment"] = r.SPF, r.DKIM
	if p == nil {
		r.add(Warning, "dmarc_no_record", d,
			"%s publishes no DMARC record (nor does its organisational domain %s), so receivers have no policy for mail failing authentication, and Gmail and Yahoo require one from bulk senders. Publish a TXT record at _dmarc.%s such as \"v=DMARC1; p=none; rua=mailto:dmarc@%s\", then tighten p= once reports show your mail aligns.",
			r.FromDomain, r.OrganizationalDomain, r.OrganizationalDomain, r.OrganizationalDomain)
		return r
	}
	r.describePolicy(p)
	d["record"], d["policy_domain"], d["policy"], d["percent"] = r.Record, r.PolicyDomain, r.Policy, r.Percent
	if r.SPF.Aligned || r.DKIM.Aligned {
		r.Result = "pass"
		r.add(Pass, "dmarc_pass", d, "DMARC passes for %s through %s.", r.FromDomain, passedBy(r.SPF, r.DKIM))
		return r
	}
	r.Result = "fail"
	r.AppliedPolicy = r.effectivePolicy(p)
	d["applied_policy"] = r.AppliedPolicy
	sev := Fail
	consequence := fmt.Sprintf("its policy (p=%s) asks receivers to %s it", r.AppliedPolicy, map[string]string{"quarantine": "file it as spam", "reject": "reject"}[r.AppliedPolicy])
	if r.AppliedPolicy == "none" {
		sev, consequence = Warning, "its policy (p=none) asks receivers only to report it, but they may still junk it"
	}
	if r.Percent < 100 {
		consequence += fmt.Sprintf(" (for %d%% of failing mail)", r.Percent)
	}
	r.add(sev, "dmarc_fail", d,
		"DMARC fails for %s: neither SPF nor DKIM passed for a domain aligned with it (%s alignment for SPF, %s for DKIM), and %s. Sign with DKIM as d=%s, or send with an envelope sender in %s that SPF allows.",
		r.FromDomain, r.SPF.Mode, r.DKIM.Mode, consequence, r.OrganizationalDomain, r.OrganizationalDomain)
	r.explainMisalignment()
	return r
}

func (r *DMARCResult) describePolicy(p *policy) {
	r.Policy, r.SubdomainPolicy, r.Percent = string(p.rec.Policy), string(p.rec.SubdomainPolicy), 100
	if p.rec.Percent != nil {
		r.Percent = *p.rec.Percent
	}
}

// effectivePolicy is the policy for the From domain: sp= when the record is
// the organisational domain's and the From domain is below it (RFC 7489
// section 6.3), else p=.
func (r *DMARCResult) effectivePolicy(p *policy) string {
	if p.domain != r.FromDomain && p.rec.SubdomainPolicy != "" {
		return string(p.rec.SubdomainPolicy)
	}
	return string(p.rec.Policy)
}

// explainMisalignment adds, for a failing message, why each mechanism that
// passed did not count.
func (r *DMARCResult) explainMisalignment() {
	if r.SPF.Authenticated && !r.SPF.Aligned {
		r.add(Warning, "dmarc_spf_not_aligned", map[string]any{"spf_domain": r.SPF.Domain, "from_domain": r.FromDomain, "mode": r.SPF.Mode},
			"SPF passed for %s, which is not aligned with the From domain %s (%s alignment). Use an envelope sender (return path) in %s%s.",
			r.SPF.Domain, r.FromDomain, r.SPF.Mode, r.FromDomain, alignHint(r.SPF.Mode))
	}
	if r.DKIM.Authenticated && !r.DKIM.Aligned {
		r.add(Warning, "dmarc_dkim_not_aligned", map[string]any{"dkim_domain": r.DKIM.Domain, "from_domain": r.FromDomain, "mode": r.DKIM.Mode},
			"DKIM passed for d=%s, which is not aligned with the From domain %s (%s alignment). Sign with d=%s%s.",
			r.DKIM.Domain, r.FromDomain, r.DKIM.Mode, r.FromDomain, alignHint(r.DKIM.Mode))
	}
}

func alignHint(mode string) string {
	if mode == "strict" {
		return " exactly (the policy's strict alignment allows no subdomain)"
	}
	return " or one of its subdomains"
}

func passedBy(spfA, dkimA Alignment) string {
	var by []string
	if spfA.Aligned {
		by = append(by, fmt.Sprintf("SPF aligned for %s (%s)", spfA.Domain, spfA.Mode))
	}
	if dkimA.Aligned {
		by = append(by, fmt.Sprintf("DKIM aligned for d=%s (%s)", dkimA.Domain, dkimA.Mode))
	}
	return strings.Join(by, " and ")
}

// aligned reports whether an authenticated domain is aligned with the From
// domain in the mode (RFC 7489 section 3.1.1 and 3.1.2).
func aligned(authDomain, fromDomain, mode string) bool {
	a, f := hostname(authDomain), hostname(fromDomain)
	if a == "" || f == "" {
		return false
	}
	if mode == dmarc.AlignmentRelaxed {
		return orgDomain(a) == orgDomain(f)
	}
	return a == f
}

func modeName(m string) string {
	if m == string(dmarc.AlignmentStrict) {
		return "strict"
	}
	return "relaxed"
}

// alignSPF aligns the domain SPF checked (the envelope sender's, or the HELO
// name's for a null sender: RFC 7489 section 3.1.2).
func alignSPF(s *SPFResult, from, mode string) Alignment {
	a := Alignment{Mode: modeName(mode), Domain: s.Domain, Authenticated: s.Result == "pass"}
	a.Aligned = a.Authenticated && aligned(s.Domain, from, mode)
	return a
}

// alignDKIM aligns the passing signatures' d= domains; one aligned is enough.
func alignDKIM(k *DKIMResult, from, mode string) Alignment {
	a := Alignment{Mode: modeName(mode)}
	for _, s := range k.Signatures {
		if s.Result != "pass" {
			continue
		}
		if !a.Authenticated || aligned(s.Domain, from, mode) {
			a.Authenticated, a.Domain = true, s.Domain
		}
		if aligned(s.Domain, from, mode) {
			a.Aligned = true
			break
		}
	}
	return a
}
