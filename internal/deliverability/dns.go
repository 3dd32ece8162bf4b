package deliverability

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// DNSResult is the dns section: the records receivers look up about the
// sender, read as they are published.
type DNSResult struct {
	Section
	Domain string   `json:"domain"` // the From domain
	MX     []string `json:"mx"`     // "preference host", lowest first
	A      []string `json:"a"`      // the domain's own A and AAAA addresses
	// SPF is one entry per domain whose SPF record was read: the From domain,
	// and the envelope sender's domain when it is another.
	SPF         []SPFRecordCheck `json:"spf"`
	DMARCRecord string           `json:"dmarc_record,omitempty"`
	ClientIP    string           `json:"client_ip"`
	PTR         []string         `json:"ptr"`
	// FCrDNS is whether a PTR name of the client IP resolves back to it
	// (forward-confirmed reverse DNS).
	FCrDNS bool   `json:"fcrdns"`
	Helo   string `json:"helo"`
}

// SPFRecordCheck is one domain's SPF record as published.
type SPFRecordCheck struct {
	Domain  string   `json:"domain"`
	Records []string `json:"records"`
	// Lookups is the number of DNS-querying terms evaluating the record can
	// reach (include, a, mx, ptr, exists, redirect, counted through includes
	// and redirects; RFC 7208 section 4.6.4 allows 10).
	Lookups int `json:"lookups"`
}

// spfLookupLimit is RFC 7208 section 4.6.4's limit on DNS-querying terms.
const spfLookupLimit = 10

// checkDNS reads the From domain's MX, A, SPF and DMARC records and the
// client IP's reverse DNS, in parallel.
func checkDNS(ctx context.Context, e *env) *DNSResult {
	r := &DNSResult{Domain: e.fromDomain, MX: []string{}, A: []string{}, SPF: []SPFRecordCheck{}, PTR: []string{},
		ClientIP: e.in.ClientIP, Helo: e.in.Helo}
	defer r.finish()
	var mu sync.Mutex // r's issues, from the parts below
	var wg sync.WaitGroup
	run := func(f func(*Section)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s Section
			defer recoverPart("DNS check", func() {
				s.add(Warning, "check_failed", nil, "A part of this check failed unexpectedly and has no result; request the report again, and report the problem if it persists.")
				mu.Lock()
				r.Issues = append(r.Issues, s.Issues...)
				mu.Unlock()
			})
			f(&s)
			mu.Lock()
			r.Issues = append(r.Issues, s.Issues...)
			mu.Unlock()
		}()
	}
	if validDomain(e.fromDomain) {
		run(func(s *Section) { r.checkMX(ctx, e.dns, s) })
		for _, d := range spfDomains(e) {
			r.SPF = append(r.SPF, SPFRecordCheck{Domain: d})
		}
		for i := range r.SPF {
			run(func(s *Section) { checkSPFRecord(ctx, e.dns, &r.SPF[i], s) })
		}
		run(func(s *Section) { r.checkDMARCRecord(ctx, e.dns, s) })
	} else {
		r.add(Fail, "dns_no_from_domain", map[string]any{"from": e.msg.From.Address},
			"The From header has no domain to look up (%q). Send from an address in your domain.", e.msg.From.Address)
	}
	run(func(s *Section) { r.checkReverse(ctx, e, s) })
	wg.Wait()
	sortIssues(r.Issues)
	return r
}

// spfDomains are the domains whose SPF records are read.
func spfDomains(e *env) []string {
	out := []string{e.fromDomain}
	if env := domainOf(e.in.MailFrom); validDomain(env) && env != e.fromDomain {
		out = append(out, env)
	}
	return out
}

// sortIssues puts issues in a fixed order (by code), whatever order the
// parallel parts finished in.
func sortIssues(is []Issue) {
	slices.SortStableFunc(is, func(a, b Issue) int { return strings.Compare(a.Code, b.Code) })
}

func (r *DNSResult) checkMX(ctx context.Context, l *Lookups, s *Section) {
	d := r.Domain
	mxs, mxErr := l.LookupMX(ctx, d)
	addrs, aErr := l.LookupIPAddr(ctx, d)
	for _, a := range addrs {
		r.A = append(r.A, a.IP.String())
	}
	slices.SortFunc(mxs, func(a, b *net.MX) int { return int(a.Pref) - int(b.Pref) })
	for _, mx := range mxs {
		r.MX = append(r.MX, strconv.Itoa(int(mx.Pref))+" "+hostname(mx.Host))
	}
	ev := map[string]any{"domain": d, "mx": r.MX, "a": r.A}
	switch {
	case mxErr != nil && !isNotFound(mxErr):
		ev["error"] = lookupFailure(mxErr)
		s.add(Warning, "dns_lookup_failed", ev, "The MX records of %s could not be read (%s).", d, lookupFailure(mxErr))
	case len(mxs) == 1 && hostname(mxs[0].Host) == "":
		s.add(Warning, "dns_null_mx", ev,
			"%s publishes a null MX (\"0 .\", RFC 7505): it receives no mail, so replies and bounces to it fail, and receivers distrust mail from a domain that cannot be answered. Publish the MX of the server that receives its mail.", d)
	case len(mxs) > 0:
		s.add(Pass, "dns_mx_ok", ev, "%s has MX records (%s), so replies and bounces can reach it.", d, strings.Join(r.MX, ", "))
	case isNXDomain(mxErr) && isNXDomain(aErr):
		s.add(Fail, "dns_domain_not_found", ev,
			"The From domain %s does not exist in DNS; receivers reject mail from domains that do not resolve. Send from a registered domain you control.", d)
	case len(r.A) > 0:
		s.add(Warning, "dns_no_mx", ev,
			"%s has no MX record; mail to it falls back to its A/AAAA address (RFC 5321 section 5.1), which often runs no mail server. Publish an MX record naming the server that receives its mail.", d)
	case aErr != nil && !isNotFound(aErr):
		ev["error"] = lookupFailure(aErr)
		s.add(Warning, "dns_lookup_failed", ev, "The addresses of %s could not be read (%s).", d, lookupFailure(aErr))
	default:
		s.add(Fail, "dns_no_mx_or_a", ev,
			"%s has neither MX nor A/AAAA records, so no reply or bounce can reach it, and receivers reject mail from domains they cannot answer. Publish an MX record naming the server that receives its mail.", d)
	}
}

// checkSPFRecord reads a domain's SPF record: present, single, within the
// lookup limit.
func checkSPFRecord(ctx context.Context, l *Lookups, c *SPFRecordCheck, s *Section) {
	_, err := l.LookupTXT(ctx, c.Domain)
	c.Records = []string{}
	ev := map[string]any{"domain": c.Domain}
	if err != nil && !isNotFound(err) {
		ev["error"] = lookupFailure(err)
		s.add(Warning, "dns_lookup_failed", ev, "The TXT records of %s could not be read (%s).", c.Domain, lookupFailure(err))
		return
	}
	c.Records = spfRecords(ctx, l, c.Domain)
	ev["records"] = c.Records
	switch len(c.Records) {
	case 0:
		s.add(Warning, "dns_spf_missing", ev,
			"%s publishes no SPF record. Publish one TXT record at %s listing the servers that send its mail, e.g. \"v=spf1 mx include:<your provider's SPF domain> -all\" (RFC 7208).", c.Domain, c.Domain)
		return
	case 1:
	default:
		s.add(Fail, "dns_spf_multiple", ev,
			"%s publishes %d SPF records; RFC 7208 section 3.2 allows one, and receivers treat more as a permanent error. Merge them into a single TXT record.", c.Domain, len(c.Records))
		return
	}
	c.Lookups = countSPFLookups(ctx, l, c.Records[0], map[string]bool{c.Domain: true}, 0)
	ev["lookups"] = c.Lookups
	if c.Lookups > spfLookupLimit {
		s.add(Fail, "dns_spf_too_many_lookups", ev,
			"The SPF record of %s needs %d DNS lookups, more than the 10 RFC 7208 section 4.6.4 allows; receivers stop at the 11th with a permanent error. Remove unused include: mechanisms or replace them with ip4:/ip6: ranges.", c.Domain, c.Lookups)
		return
	}
	s.add(Pass, "dns_spf_ok", ev, "%s publishes one SPF record, needing %d of the 10 DNS lookups allowed.", c.Domain, c.Lookups)
}

// countSPFLookups counts the DNS-querying terms of an SPF record, following
// include: and redirect= into the records they name (RFC 7208 section
// 4.6.4). A target with macros cannot be followed and counts once. The count
// stops growing past the limit's double, which is enough to report it.
func countSPFLookups(ctx context.Context, l *Lookups, record string, seen map[string]bool, depth int) int {
	n := 0
	for _, term := range strings.Fields(record)[1:] {
		t := strings.ToLower(strings.TrimLeft(term, "+-~?"))
		var target string
		switch {
		case strings.HasPrefix(t, "include:"):
			target = t[len("include:"):]
		case strings.HasPrefix(t, "redirect="):
			target = t[len("redirect="):]
		case t == "a" || t == "mx" || t == "ptr" || strings.HasPrefix(t, "a:") || strings.HasPrefix(t, "a/") ||
			strings.HasPrefix(t, "mx:") || strings.HasPrefix(t, "mx/") || strings.HasPrefix(t, "ptr:") || strings.HasPrefix(t, "exists:"):
			n++
			continue
		default:
			continue
		}
		n++
		if depth >= 2*spfLookupLimit || n > 2*spfLookupLimit || strings.Contains(target, "%") || seen[target] {
			continue
		}
		seen[target] = true
		if recs := spfRecords(ctx, l, target); len(recs) == 1 {
			n += countSPFLookups(ctx, l, recs[0], seen, depth+1)
		}
	}
	return n
}

func (r *DNSResult) checkDMARCRecord(ctx context.Context, l *Lookups, s *Section) {
	p, err := discoverPolicy(ctx, l, r.Domain)
	ev := map[string]any{"domain": r.Domain}
	if p != nil {
		r.DMARCRecord = p.txt
		ev["record"], ev["policy_domain"] = p.txt, p.domain
	}
	switch {
	case errors.Is(err, errMultipleDMARC):
		s.add(Fail, "dns_dmarc_multiple", ev,
			"_dmarc.%s holds more than one DMARC record, so receivers ignore them all (RFC 7489 section 6.6.3). Keep exactly one.", p.domain)
	case errors.Is(err, errInvalidDMARC):
		ev["error"] = err.Error()
		s.add(Fail, "dns_dmarc_invalid", ev,
			"The DMARC record at _dmarc.%s is invalid (%v). Fix it, e.g. \"v=DMARC1; p=none; rua=mailto:dmarc@%s\" (RFC 7489 section 6.3).", p.domain, err, orgDomain(r.Domain))
	case err != nil:
		ev["error"] = lookupFailure(err)
		s.add(Warning, "dns_lookup_failed", ev, "The DMARC record of %s could not be read (%s).", r.Domain, lookupFailure(err))
	case p == nil:
		s.add(Warning, "dns_dmarc_missing", ev,
			"Neither %s nor %s publishes a DMARC record. Publish a TXT record at _dmarc.%s such as \"v=DMARC1; p=none; rua=mailto:dmarc@%s\".",
			r.Domain, orgDomain(r.Domain), orgDomain(r.Domain), orgDomain(r.Domain))
	default:
		s.add(Pass, "dns_dmarc_ok", ev, "A valid DMARC record is published at _dmarc.%s (p=%s).", p.domain, p.rec.Policy)
	}
}

// checkReverse reads the client IP's PTR names and confirms them forward
// (FCrDNS), then compares them with the HELO name: receivers distrust a
// server without reverse DNS, or one whose greeting names another host.
func (r *DNSResult) checkReverse(ctx context.Context, e *env, s *Section) {
	if e.ip == nil {
		s.add(Warning, "dns_no_client_ip", nil,
			"The client IP of this message was not recorded (it did not arrive over SMTP), so its reverse DNS was not checked.")
		return
	}
	ip := e.ip.String()
	names, err := e.dns.LookupAddr(ctx, ip)
	ev := map[string]any{"client_ip": ip, "helo": e.in.Helo}
	switch {
	case isNotFound(err):
		s.add(Warning, "dns_ptr_missing", ev,
			"The sending server's IP %s has no reverse DNS (PTR) record; many receivers reject or junk mail from such servers. Ask the IP's owner (your host or provider) to set its PTR to the server's name, e.g. %s.", ip, orDefault(hostname(e.in.Helo), "mail.<your domain>"))
		return
	case err != nil:
		ev["error"] = lookupFailure(err)
		s.add(Warning, "dns_lookup_failed", ev, "The reverse DNS of %s could not be read (%s).", ip, lookupFailure(err))
		return
	}
	var confirmed []string
	for _, n := range names {
		name := hostname(n)
		r.PTR = append(r.PTR, name)
		addrs, _ := e.dns.LookupIPAddr(ctx, name)
		if slices.ContainsFunc(addrs, func(a net.IPAddr) bool { return a.IP.Equal(e.ip) }) {
			confirmed = append(confirmed, name)
		}
	}
	r.FCrDNS = len(confirmed) > 0
	ev["ptr"], ev["confirmed"] = r.PTR, confirmed
	if !r.FCrDNS {
		s.add(Warning, "dns_fcrdns_failed", ev,
			"The reverse DNS of %s names %s, which does not resolve back to %s (forward-confirmed reverse DNS fails); receivers treat that as a forged or unmanaged host. Publish an A/AAAA record for the PTR name pointing to the IP.", ip, strings.Join(r.PTR, ", "), ip)
		return
	}
	helo := hostname(e.in.Helo)
	if !slices.Contains(confirmed, helo) {
		s.add(Warning, "dns_helo_mismatch", ev,
			"The sending server greets as %q but its IP %s has reverse DNS %s; receivers score a greeting that is not the server's own name. Configure the server's HELO name to %s.", e.in.Helo, ip, strings.Join(confirmed, ", "), confirmed[0])
		return
	}
	s.add(Pass, "dns_ptr_ok", ev, "The sending server's IP %s has reverse DNS %s, confirmed forward and matching its HELO name.", ip, helo)
}
