// Package egress is the one rule for the connections Catchbox opens to
// addresses its users name: webhook endpoints, and the links of an email's
// link check (internal/linkcheck). Such a fetch runs inside the operator's network, so a user
// who may name its target could otherwise reach the loopback interface, the
// private network or a cloud's metadata service (server-side request forgery).
//
// Unless private targets are allowed (CATCHBOX_ALLOW_PRIVATE_TARGETS, true by
// default in local mode only), a target must be a public unicast address, read
// through every spelling and IPv6 form that carries an IPv4 address (Why,
// ParseHost). The rule is applied twice: when the target is given (CheckURL,
// which also resolves a name, and refuses one that does not resolve), and at
// every connection, on the address actually dialled after name resolution
// (Guard.Control), so that a name that resolves elsewhere later (DNS
// rebinding) is refused all the same.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// Setting is the configuration that allows private targets, named in refusals.
const Setting = "CATCHBOX_ALLOW_PRIVATE_TARGETS"

// ResolveTimeout bounds the name resolution of CheckURL.
const ResolveTimeout = 2 * time.Second

// RefusedError is a target refused because it is not public.
type RefusedError struct {
	Host string     // the host as given
	Addr netip.Addr // the address refused; invalid for a name without one
	What string     // what the address is (Why), or why the name was refused
	Dial bool       // refused at a connection rather than when the target was given
}

func (e *RefusedError) Error() string {
	var s string
	switch {
	case e.Dial:
		s = "refused to connect to " + e.Addr.String() + ": " + e.What
	case !e.Addr.IsValid():
		s = e.Host + " " + e.What
	case e.Host == e.Addr.String():
		s = e.Host + " is " + e.What
	case mustParse(e.Host):
		s = e.Host + " is " + e.Addr.String() + ", " + e.What
	default:
		s = e.Host + " resolves to " + e.Addr.String() + ", " + e.What
	}
	return s + "; outgoing requests may reach public addresses only on this server (" + Setting + ")"
}

// mustParse reports whether host is an address in one of ParseHost's spellings.
func mustParse(host string) bool {
	_, ok := ParseHost(host)
	return ok
}

// Guard applies the rule. Its zero value allows public targets only and
// resolves names with the system's resolver.
type Guard struct {
	// AllowPrivate turns the rule off: every target is allowed (local mode).
	AllowPrivate bool
	// Resolver resolves names, for CheckURL and for connections; nil is
	// net.DefaultResolver.
	Resolver *net.Resolver
}

func (g *Guard) resolver() *net.Resolver {
	if g.Resolver != nil {
		return g.Resolver
	}
	return net.DefaultResolver
}

// CheckURL checks the host of a target URL and normalises it in place: an
// IPv4 address in one of its older spellings ("127.1", "0x7f.1") is written
// as four decimal numbers, which is how a browser reads it and how it will be
// dialled. Unless private targets are allowed, an address must be public, a
// name must not be one of localhost's, and it must resolve, to public
// addresses only. The error is a *RefusedError for a refused target.
func (g *Guard) CheckURL(ctx context.Context, u *url.URL) error {
	host := u.Hostname()
	if a, ok := ParseHost(host); ok {
		u.Host = joinHost(a, u.Port())
		if g.AllowPrivate {
			return nil
		}
		if what := Why(a); what != "" {
			return &RefusedError{Host: host, Addr: a, What: what}
		}
		return nil
	}
	if g.AllowPrivate {
		return nil
	}
	return g.checkName(ctx, host)
}

// checkName resolves a name and checks every address it has.
func (g *Guard) checkName(ctx context.Context, name string) error {
	if IsLocalhost(name) {
		return &RefusedError{Host: name, What: "names this machine (loopback)"}
	}
	ctx, cancel := context.WithTimeout(ctx, ResolveTimeout)
	defer cancel()
	addrs, err := g.resolver().LookupNetIP(ctx, "ip", name)
	if err != nil || len(addrs) == 0 {
		// A name that resolves nowhere cannot be checked; it might resolve
		// anywhere tomorrow.
		return &RefusedError{Host: name, What: "does not resolve, so its addresses cannot be checked"}
	}
	for _, a := range addrs {
		if what := Why(a); what != "" {
			return &RefusedError{Host: name, Addr: a.WithZone(""), What: what}
		}
	}
	return nil
}

func joinHost(a netip.Addr, port string) string {
	h := a.String()
	if a.Is6() {
		h = "[" + h + "]"
	}
	if port != "" {
		h += ":" + port
	}
	return h
}

// Control is the dial-time check, for net.Dialer.Control: it runs after name
// resolution, on the address a connection is about to be made to.
func (g *Guard) Control(_, address string, _ syscall.RawConn) error {
	if g.AllowPrivate {
		return nil
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("egress: dialling %q, which is not an address", address)
	}
	if what := Why(a); what != "" {
		return &RefusedError{Host: host, Addr: a.WithZone(""), What: what, Dial: true}
	}
	return nil
}

// Dialer returns a dialer whose every connection is checked (Control) and
// whose names are resolved by the guard's resolver.
func (g *Guard) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, Control: g.Control, Resolver: g.Resolver}
}

// DialContext dials through Dialer, reading the host of address as ParseHost
// does, so that "127.1:80" is the address 127.0.0.1 (refused unless private
// targets are allowed) rather than a name to resolve, and a name of
// localhost's ("LOCALHOST.", "app.localhost") as localhost, which a resolver
// might not know (RFC 6761 section 6.3 says it must).
func (g *Guard) DialContext(timeout time.Duration) func(ctx context.Context, network, address string) (net.Conn, error) {
	d := g.Dialer(timeout)
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(address); err == nil {
			if a, ok := ParseHost(host); ok {
				address = net.JoinHostPort(a.String(), port)
			} else if IsLocalhost(host) {
				if !g.AllowPrivate {
					return nil, &RefusedError{Host: host, Addr: netip.IPv6Loopback(), What: "a loopback address", Dial: true}
				}
				address = net.JoinHostPort("localhost", port)
			}
		}
		return d.DialContext(ctx, network, address)
	}
}

// Transport returns an HTTP transport for outgoing fetches: every connection
// goes through DialContext, and no proxy is used, since a proxy would make the
// connection's check moot.
func (g *Guard) Transport(timeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           g.DialContext(timeout),
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
}

// Refused returns the *RefusedError in err's chain, or nil.
func Refused(err error) *RefusedError {
	var re *RefusedError
	if errors.As(err, &re) {
		return re
	}
	return nil
}
