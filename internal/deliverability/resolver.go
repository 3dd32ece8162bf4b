package deliverability

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// Resolver sends every DNS query of the checks to one recursive server: the
// configured CATCHBOX_DNS_SERVER, or the name servers of /etc/resolv.conf. Each
// query has its own time limit (2 s by default), so a report completes even
// when no server answers: its lookups fail as temporary errors, and the checks
// report them as lookup failures.
//
// It speaks DNS itself (miekg/dns) rather than through net.Resolver, so that a
// check can tell apart what the RFCs treat differently: a name that does not
// exist (NXDOMAIN), a name without records of the type (NODATA), and a server
// that failed or did not answer (RFC 7208 section 2.6.6, temperror; RFC 5782
// section 2.1, a blocklist that could not be asked).
type Resolver struct {
	servers []string
	timeout time.Duration
	err     error // why there is no server to ask, when servers is empty
}

// ednsSize is the UDP payload size offered (EDNS0, RFC 6891): the size DNS
// flag day 2020 settled on, below common path MTUs. Longer answers come back
// truncated and are asked again over TCP (RFC 7766).
const ednsSize = 1232

// NewResolver returns a resolver asking server (host:port), or the name
// servers of /etc/resolv.conf when server is "". Without a usable
// resolv.conf every lookup fails as temporary, with the reason.
func NewResolver(server string, timeout time.Duration) *Resolver {
	r := &Resolver{timeout: timeout}
	if r.timeout <= 0 {
		r.timeout = 2 * time.Second
	}
	if server != "" {
		r.servers = []string{server}
		return r
	}
	cfg, err := dns.ClientConfigFromFile("/etc/resolv.conf")
	if err != nil {
		r.err = fmt.Errorf("no DNS server: /etc/resolv.conf: %w", err)
		return r
	}
	for _, s := range cfg.Servers {
		r.servers = append(r.servers, net.JoinHostPort(s, cfg.Port))
	}
	if len(r.servers) == 0 {
		r.err = errors.New("no DNS server: /etc/resolv.conf names no nameserver")
	}
	return r
}

// Servers are the servers asked, in order.
func (r *Resolver) Servers() []string { return r.servers }

// exchange asks the servers in turn until one answers, each within the
// timeout, over UDP and then over TCP when the answer was truncated.
func (r *Resolver) exchange(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	if len(r.servers) == 0 {
		return nil, r.err
	}
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), qtype)
	q.RecursionDesired = true
	q.SetEdns0(ednsSize, false)
	var last error
	for _, s := range r.servers {
		in, err := r.exchangeOne(ctx, q, s)
		if err == nil {
			return in, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

func (r *Resolver) exchangeOne(ctx context.Context, q *dns.Msg, server string) (*dns.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	c := &dns.Client{Net: "udp", UDPSize: ednsSize, Timeout: r.timeout}
	in, _, err := c.ExchangeContext(ctx, q, server)
	if err == nil && in.Truncated {
		c.Net = "tcp"
		in, _, err = c.ExchangeContext(ctx, q, server)
	}
	if err != nil {
		return nil, err
	}
	return in, nil
}

// Error texts of lookups that found nothing, as net.DNSError.Err. Both set
// IsNotFound, as net.Resolver does, so that libraries written against it
// (blitiri.com.ar/go/spf, go-msgauth) read them as "no record".
const (
	errNXDomain = "no such host"
	errNoData   = "no records of the type"
)

// isNXDomain reports whether err says the name does not exist at all.
func isNXDomain(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound && de.Err == errNXDomain
}

// isNotFound reports whether err says there is no record (NXDOMAIN or NODATA).
func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

// query asks for the records of qtype at name. Not finding any is an error
// with IsNotFound; a server failure, a refusal, a timeout or no server to ask
// is one with IsTemporary (and IsTimeout for a timeout). The error is always
// a *net.DNSError, unwrapped, as net.Resolver returns it.
func (r *Resolver) query(ctx context.Context, name string, qtype uint16) ([]dns.RR, error) {
	in, err := r.exchange(ctx, name, qtype)
	if err != nil {
		var ne net.Error
		timeout := errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)
		return nil, &net.DNSError{Err: err.Error(), Name: name, IsTimeout: timeout, IsTemporary: true}
	}
	switch in.Rcode {
	case dns.RcodeSuccess:
	case dns.RcodeNameError:
		return nil, &net.DNSError{Err: errNXDomain, Name: name, IsNotFound: true}
	default:
		return nil, &net.DNSError{Err: "server answered " + dns.RcodeToString[in.Rcode], Name: name, IsTemporary: true}
	}
	var out []dns.RR
	for _, rr := range in.Answer {
		// A recursive server follows CNAMEs and returns the chain and its
		// end; the records of the type asked for are the end.
		if rr.Header().Rrtype == qtype {
			out = append(out, rr)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: errNoData, Name: name, IsNotFound: true}
	}
	return out, nil
}

// Lookups is the resolver as one report run uses it: each distinct question
// is asked once and its answer shared, because the checks ask many of the
// same ones (the SPF record is read by the spf, dmarc and dns checks, and an
// unreachable server then costs one timeout, not three). It has the method
// set of net.Resolver that blitiri.com.ar/go/spf needs.
type Lookups struct {
	r       *Resolver
	mu      sync.Mutex
	calls   map[question]*call
	queries atomic.Int64
}

type question struct {
	name  string
	qtype uint16
}

type call struct {
	done chan struct{}
	rrs  []dns.RR
	err  error
}

// Session returns a fresh cache of answers over the resolver, for one run.
func (r *Resolver) Session() *Lookups {
	return &Lookups{r: r, calls: map[question]*call{}}
}

// Queries is how many questions were sent to the server (not counting answers
// from the cache).
func (l *Lookups) Queries() int { return int(l.queries.Load()) }

// query is Resolver.query, asked once per run for each question.
func (l *Lookups) query(ctx context.Context, name string, qtype uint16) ([]dns.RR, error) {
	k := question{strings.ToLower(dns.Fqdn(name)), qtype}
	l.mu.Lock()
	c, ok := l.calls[k]
	if !ok {
		c = &call{done: make(chan struct{})}
		l.calls[k] = c
	}
	l.mu.Unlock()
	if ok {
		select {
		case <-c.done:
			return c.rrs, c.err
		case <-ctx.Done():
			return nil, &net.DNSError{Err: ctx.Err().Error(), Name: name, IsTimeout: true, IsTemporary: true}
		}
	}
	l.queries.Add(1)
	c.rrs, c.err = l.r.query(ctx, name, qtype)
	close(c.done)
	return c.rrs, c.err
}

// LookupTXT returns the TXT records at name, each record's strings joined
// (RFC 7208 section 3.3, RFC 6376 section 3.6.2.2).
func (l *Lookups) LookupTXT(ctx context.Context, name string) ([]string, error) {
	rrs, err := l.query(ctx, name, dns.TypeTXT)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		out = append(out, strings.Join(rr.(*dns.TXT).Txt, ""))
	}
	return out, nil
}

// LookupMX returns the MX records at name, hosts with their trailing dot.
func (l *Lookups) LookupMX(ctx context.Context, name string) ([]*net.MX, error) {
	rrs, err := l.query(ctx, name, dns.TypeMX)
	if err != nil {
		return nil, err
	}
	out := make([]*net.MX, 0, len(rrs))
	for _, rr := range rrs {
		mx := rr.(*dns.MX)
		out = append(out, &net.MX{Host: mx.Mx, Pref: mx.Preference})
	}
	return out, nil
}

// LookupIPAddr returns the A and AAAA addresses of host, asked at once. It
// fails only when neither family has an address: with IsNotFound when neither
// has one, else with the temporary error of the one that failed.
func (l *Lookups) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	var wg sync.WaitGroup
	var v4, v6 []net.IPAddr
	var err4, err6 error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer recoverPart("AAAA lookup", func() { err6 = errLookupPanicked })
		v6, err6 = l.lookupIP(ctx, host, dns.TypeAAAA)
	}()
	v4, err4 = l.lookupIP(ctx, host, dns.TypeA)
	wg.Wait()
	out := append(v4, v6...)
	if len(out) > 0 {
		return out, nil
	}
	switch {
	case err4 != nil && !isNotFound(err4):
		return nil, err4
	case err6 != nil && !isNotFound(err6):
		return nil, err6
	case isNXDomain(err4):
		return nil, err4
	}
	return nil, err6
}

// LookupA returns the IPv4 addresses of host (a blocklist's answer).
func (l *Lookups) LookupA(ctx context.Context, host string) ([]net.IP, error) {
	addrs, err := l.lookupIP(ctx, host, dns.TypeA)
	out := make([]net.IP, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.IP)
	}
	return out, err
}

func (l *Lookups) lookupIP(ctx context.Context, host string, qtype uint16) ([]net.IPAddr, error) {
	rrs, err := l.query(ctx, host, qtype)
	if err != nil {
		return nil, err
	}
	out := make([]net.IPAddr, 0, len(rrs))
	for _, rr := range rrs {
		switch a := rr.(type) {
		case *dns.A:
			out = append(out, net.IPAddr{IP: a.A})
		case *dns.AAAA:
			out = append(out, net.IPAddr{IP: a.AAAA})
		}
	}
	return out, nil
}

// LookupAddr returns the PTR names of addr, with their trailing dot.
func (l *Lookups) LookupAddr(ctx context.Context, addr string) ([]string, error) {
	rev, err := dns.ReverseAddr(addr)
	if err != nil {
		return nil, &net.DNSError{Err: "not an IP address", Name: addr}
	}
	rrs, err := l.query(ctx, rev, dns.TypePTR)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		out = append(out, rr.(*dns.PTR).Ptr)
	}
	return out, nil
}

// lookupFailure is the evidence of a failed lookup for an issue's details.
func lookupFailure(err error) string {
	var de *net.DNSError
	if errors.As(err, &de) {
		if de.IsTimeout {
			return "timeout: no answer from the DNS server"
		}
		return de.Err
	}
	return err.Error()
}

// hostname strips the trailing dot and lowers a DNS name for display and
// comparison.
func hostname(s string) string { return strings.ToLower(strings.TrimSuffix(s, ".")) }
