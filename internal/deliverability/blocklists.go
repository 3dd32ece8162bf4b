package deliverability

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/miekg/dns"
)

// Zones are the DNS blocklists asked (RFC 5782): IP zones about the client's
// address, domain zones about the From domain and the domains links point to.
type Zones struct {
	IP     []string
	Domain []string
}

// BlocklistCheck is one question to one list.
type BlocklistCheck struct {
	Target string `json:"target"`
	// Source says what the target is: client_ip, from_domain or link_domain.
	Source string `json:"source"`
	Zone   string `json:"zone"`
	// Result is listed, clean, or lookup_failed.
	Result string   `json:"result"`
	Codes  []string `json:"codes,omitempty"`  // the list's A answers when listed
	Reason string   `json:"reason,omitempty"` // its TXT answer, when it gives one
	Error  string   `json:"error,omitempty"`
}

// BlocklistsResult is the blocklists section.
type BlocklistsResult struct {
	Section
	Checks []BlocklistCheck `json:"checks"`
}

// Bounds on one report's blocklist questions.
const (
	maxLinkDomains  = 20 // link domains asked about; the rest are counted in details
	blocklistAtOnce = 16 // questions in flight at once
)

// checkBlocklists asks every configured list about the client IP and the
// domains, in parallel.
func checkBlocklists(ctx context.Context, e *env, zones Zones, links []link) *BlocklistsResult {
	r := &BlocklistsResult{Checks: []BlocklistCheck{}}
	defer r.finish()
	if len(zones.IP) == 0 && len(zones.Domain) == 0 {
		r.add(Warning, "blocklist_not_configured", nil,
			"No blocklist zones are configured on this server (CATCHBOX_DNSBL_IP_ZONES, CATCHBOX_DNSBL_DOMAIN_ZONES), so the client IP and domains were not checked.")
		return r
	}
	var checks []BlocklistCheck
	if e.ip != nil {
		for _, z := range zones.IP {
			checks = append(checks, BlocklistCheck{Target: e.ip.String(), Source: "client_ip", Zone: z})
		}
	} else if len(zones.IP) > 0 {
		r.add(Warning, "blocklist_no_client_ip", nil,
			"The client IP of this message was not recorded (it did not arrive over SMTP), so it was not checked against the IP blocklists.")
	}
	domains, skipped := blocklistDomains(e.fromDomain, links)
	for _, dm := range domains {
		for _, z := range zones.Domain {
			checks = append(checks, BlocklistCheck{Target: dm.name, Source: dm.source, Zone: z})
		}
	}
	r.Checks = askLists(ctx, e.dns, checks)
	r.explain(skipped)
	return r
}

type listedDomain struct{ name, source string }

// blocklistDomains returns the registered domains to ask about: the From
// domain's, then the links', each once, at most maxLinkDomains of links; and
// how many link domains were left out.
func blocklistDomains(from string, links []link) ([]listedDomain, int) {
	var out []listedDomain
	seen := map[string]bool{}
	if validDomain(from) {
		od := orgDomain(from)
		seen[od] = true
		out = append(out, listedDomain{od, "from_domain"})
	}
	skipped, n := 0, 0
	for _, l := range links {
		if !validDomain(l.host) {
			continue
		}
		od := orgDomain(l.host)
		if seen[od] {
			continue
		}
		seen[od] = true
		if n == maxLinkDomains {
			skipped++
			continue
		}
		n++
		out = append(out, listedDomain{od, "link_domain"})
	}
	return out, skipped
}

// askLists asks every check's question, blocklistAtOnce at a time.
func askLists(ctx context.Context, l *Lookups, checks []BlocklistCheck) []BlocklistCheck {
	sem := make(chan struct{}, blocklistAtOnce)
	var wg sync.WaitGroup
	for i := range checks {
		wg.Add(1)
		sem <- struct{}{}
		go func(c *BlocklistCheck) {
			defer wg.Done()
			defer func() { <-sem }()
			defer recoverPart("blocklist lookup", func() {
				c.Result, c.Error = "lookup_failed", "the lookup failed unexpectedly"
			})
			askList(ctx, l, c)
		}(&checks[i])
	}
	wg.Wait()
	if checks == nil {
		return []BlocklistCheck{}
	}
	return checks
}

// askList asks one list about one target (RFC 5782 section 2): an address
// is listed when <reversed address>.<zone> has an A record in 127.0.0.0/8,
// a domain when <domain>.<zone> has one. Answers in 127.255.255.0/24 are the
// lists' refusals (Spamhaus answers so to queries through public resolvers),
// and answers outside 127.0.0.0/8 come from a resolver that rewrites
// NXDOMAIN: both are failed lookups, not listings.
func askList(ctx context.Context, l *Lookups, c *BlocklistCheck) {
	name := c.Target + "." + c.Zone
	if c.Source == "client_ip" {
		name = reverseIP(net.ParseIP(c.Target)) + c.Zone
	}
	ips, err := l.LookupA(ctx, name)
	switch {
	case isNotFound(err):
		c.Result = "clean"
		return
	case err != nil:
		c.Result, c.Error = "lookup_failed", lookupFailure(err)
		return
	}
	for _, ip := range ips {
		c.Codes = append(c.Codes, ip.String())
	}
	sort.Strings(c.Codes)
	for _, ip := range ips {
		v4 := ip.To4()
		switch {
		case v4 == nil || v4[0] != 127:
			c.Result, c.Error = "lookup_failed", "answer outside 127.0.0.0/8 ("+ip.String()+"): the DNS server rewrites answers for names that do not exist"
			return
		case v4[1] == 255 && v4[2] == 255:
			c.Result, c.Error = "lookup_failed", "the list refused the query ("+ip.String()+"): it does not answer this DNS server, often a public resolver"
			return
		}
	}
	c.Result = "listed"
	if txts, err := l.LookupTXT(ctx, name); err == nil {
		c.Reason = strings.Join(txts, " ")
	}
}

// reverseIP writes an address as a blocklist query's prefix, with a trailing
// dot: octets reversed for IPv4, nibbles reversed for IPv6 (RFC 5782
// section 2.1 and 2.4).
func reverseIP(ip net.IP) string {
	rev, err := dns.ReverseAddr(ip.String())
	if err != nil {
		return ""
	}
	rev = strings.TrimSuffix(rev, "in-addr.arpa.")
	return strings.TrimSuffix(rev, "ip6.arpa.")
}

// explain adds the issues: one per listing, one per list whose questions
// failed, and a summary of the clean ones.
func (r *BlocklistsResult) explain(skipped int) {
	clean, failed := map[string]int{}, map[string][]string{}
	for _, c := range r.Checks {
		switch c.Result {
		case "listed":
			d := map[string]any{"target": c.Target, "source": c.Source, "zone": c.Zone, "codes": c.Codes}
			if c.Reason != "" {
				d["reason"] = c.Reason
			}
			what := map[string]string{"client_ip": "The sending server's IP", "from_domain": "The From domain", "link_domain": "A domain linked from the message,"}[c.Source]
			r.add(Fail, "blocklist_listed", d,
				"%s %s is listed on %s (answer %s%s): receivers that use this list reject or junk the mail. Look the listing up on the list's web site, fix its cause (a compromised account or server, an open relay, complaints), then ask for removal.",
				what, c.Target, c.Zone, strings.Join(c.Codes, ", "), reasonSuffix(c.Reason))
		case "clean":
			clean[c.Source]++
		default:
			failed[c.Zone] = append(failed[c.Zone], c.Target)
		}
	}
	zones := make([]string, 0, len(failed))
	for z := range failed {
		zones = append(zones, z)
	}
	slices.Sort(zones)
	for _, z := range zones {
		errs := []string{}
		for _, c := range r.Checks {
			if c.Zone == z && c.Result == "lookup_failed" && !slices.Contains(errs, c.Error) {
				errs = append(errs, c.Error)
			}
		}
		r.add(Warning, "blocklist_lookup_failed", map[string]any{"zone": z, "targets": failed[z], "errors": errs},
			"The blocklist %s could not be asked about %s (%s), so this report cannot say whether they are listed there.", z, strings.Join(failed[z], ", "), strings.Join(errs, "; "))
	}
	if len(clean) > 0 {
		d := map[string]any{"clean": len(r.Checks) - countListedOrFailed(r.Checks)}
		if skipped > 0 {
			d["link_domains_not_checked"] = skipped
		}
		r.add(Pass, "blocklist_clean", d, "Not listed: %d of %d questions to the configured blocklists found no listing.",
			d["clean"], len(r.Checks))
	}
}

func countListedOrFailed(cs []BlocklistCheck) int {
	n := 0
	for _, c := range cs {
		if c.Result != "clean" {
			n++
		}
	}
	return n
}

func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return fmt.Sprintf("; the list says: %q", reason)
}
