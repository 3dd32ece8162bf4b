package deliverability

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"blitiri.com.ar/go/spf"
)

// SPFResult is the spf section: the RFC 7208 check_host() result for the
// client's IP and the envelope sender's domain, or the HELO name's when the
// sender is null (RFC 7208 section 2.4), as a receiving server computes it.
type SPFResult struct {
	Section
	// Result is one of RFC 7208 section 2.6: pass, fail, softfail, neutral,
	// none, temperror, permerror.
	Result string `json:"result"`
	// Identity is the identity checked: "mailfrom", or "helo" for a null sender.
	Identity string `json:"identity"`
	Domain   string `json:"domain"`
	Sender   string `json:"sender"`
	ClientIP string `json:"client_ip"`
	// Record is the domain's SPF record, when it has exactly one.
	Record string `json:"record,omitempty"`
}

// checkSPF evaluates SPF with blitiri.com.ar/go/spf over the run's resolver,
// and explains the result.
func checkSPF(ctx context.Context, e *env) *SPFResult {
	r := &SPFResult{Identity: "mailfrom", ClientIP: e.in.ClientIP, Sender: e.in.MailFrom, Domain: domainOf(e.in.MailFrom)}
	defer r.finish()
	if r.Domain == "" {
		r.Identity, r.Domain = "helo", hostname(e.in.Helo)
		r.Sender = "postmaster@" + r.Domain
	}
	base := map[string]any{"identity": r.Identity, "domain": r.Domain, "client_ip": r.ClientIP}
	if e.ip == nil {
		r.Result = string(spf.None)
		r.add(Warning, "spf_not_evaluated", base,
			"SPF was not evaluated: the client IP of this message was not recorded (it did not arrive over SMTP), and SPF authorises IP addresses.")
		return r
	}
	if !validDomain(r.Domain) {
		r.Result = string(spf.None)
		r.add(Warning, "spf_none", base,
			"SPF has nothing to check: the message has a null envelope sender and its HELO name %q is not a domain name (RFC 7208 section 2.3). Have the sending server greet with its fully qualified host name, and publish an SPF record for it.", e.in.Helo)
		return r
	}
	var trace []string
	result, err := spf.CheckHostWithSender(e.ip, e.in.Helo, r.Sender,
		spf.WithContext(ctx), spf.WithResolver(e.dns),
		spf.WithTraceFunc(func(f string, a ...any) { trace = append(trace, fmt.Sprintf(f, a...)) }))
	r.Result = string(result)
	records := spfRecords(ctx, e.dns, r.Domain)
	if len(records) == 1 {
		r.Record = records[0]
	}
	d := map[string]any{"identity": r.Identity, "domain": r.Domain, "client_ip": r.ClientIP, "result": r.Result,
		"records": records, "trace": trace}
	if err != nil && result != spf.Pass && result != spf.Fail && result != spf.SoftFail && result != spf.Neutral {
		d["error"] = err.Error()
	}
	ip := e.ip.String()
	mech := "ip4:" + ip
	if e.ip.To4() == nil {
		mech = "ip6:" + ip
	}
	switch result {
	case spf.Pass:
		r.add(Pass, "spf_pass", d, "SPF passes: the SPF record of %s allows %s to send its mail.", r.Domain, ip)
	case spf.Fail:
		r.add(Fail, "spf_fail", d,
			"SPF fails: the SPF record of %s does not allow %s to send its mail and asks receivers to reject what it does not allow (-all). Add the sending server to the record (for example %s) or send through a server it already lists.", r.Domain, ip, mech)
	case spf.SoftFail:
		r.add(Warning, "spf_softfail", d,
			"SPF soft-fails: the SPF record of %s does not allow %s (~all); receivers accept the mail but treat it as suspicious. Add the sending server to the record (for example %s).", r.Domain, ip, mech)
	case spf.Neutral:
		r.add(Warning, "spf_neutral", d,
			"SPF is neutral: the SPF record of %s says nothing about %s (?all, or no mechanism matched). Add the sending server to the record (for example %s) and end it with -all or ~all.", r.Domain, ip, mech)
	case spf.None:
		r.add(Warning, "spf_none", d,
			"%s publishes no SPF record, so receivers cannot tell whether %s may send its mail. Publish a TXT record at %s such as \"v=spf1 %s -all\" (RFC 7208).", r.Domain, ip, r.Domain, mech)
	case spf.TempError:
		r.add(Warning, "spf_temperror", d,
			"The SPF record of %s could not be read (%s); receivers defer such mail and try again later (RFC 7208 section 8.6). Check that the domain's name servers answer.", r.Domain, lookupFailure(err))
	default:
		r.addPermError(err, d, records)
	}
	return r
}

// addPermError explains an SPF permerror by its cause.
func (r *SPFResult) addPermError(err error, d map[string]any, records []string) {
	switch {
	case errors.Is(err, spf.ErrMultipleRecords):
		r.add(Fail, "spf_multiple_records", d,
			"%s publishes %d SPF records; RFC 7208 section 3.2 allows one, so receivers treat its SPF as a permanent error. Merge them into a single TXT record starting with v=spf1.", r.Domain, len(records))
	case errors.Is(err, spf.ErrLookupLimitReached):
		r.add(Fail, "spf_too_many_lookups", d,
			"Evaluating the SPF record of %s needs more than 10 DNS lookups (include, a, mx, ptr, exists, redirect; RFC 7208 section 4.6.4), so receivers treat it as a permanent error. Remove unused include: mechanisms or replace them with ip4:/ip6: ranges.", r.Domain)
	case errors.Is(err, spf.ErrVoidLookupLimitReached):
		r.add(Fail, "spf_too_many_void_lookups", d,
			"Evaluating the SPF record of %s meets more than 2 names that do not exist or have no records (RFC 7208 section 4.6.4), so receivers treat it as a permanent error. Remove the mechanisms that name them.", r.Domain)
	default:
		r.add(Fail, "spf_permerror", d,
			"The SPF record of %s is invalid (%v), so receivers treat it as a permanent error. Fix its syntax (RFC 7208 section 4.6).", r.Domain, err)
	}
}

// spfRecords returns the SPF records among the TXT records at domain (RFC
// 7208 section 4.5: those starting with "v=spf1" followed by a space or
// nothing), for the evidence; a failed lookup returns none.
func spfRecords(ctx context.Context, l *Lookups, domain string) []string {
	txts, err := l.LookupTXT(ctx, domain)
	if err != nil {
		return []string{}
	}
	out := []string{}
	for _, t := range txts {
		if lt := strings.ToLower(t); lt == "v=spf1" || strings.HasPrefix(lt, "v=spf1 ") {
			out = append(out, t)
		}
	}
	return out
}
