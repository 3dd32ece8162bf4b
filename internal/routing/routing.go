// Package routing is the one rule that says which namespace receives mail for an
// address: <local>@<namespace>.<mail domain>, the namespace found by its name, and
// the organisation that owns it. The SMTP listener asks it at RCPT TO; delivery of
// outbound mail to addresses of this server asks it too, so a message reaches the
// same inbox, or none, whichever way it enters.
//
// It stands beside smtpd and inbox rather than inside either: it decides where
// mail goes before anything is stored, and the addresses it will route next (the
// return paths of outbound mail, where bounces arrive) are not inboxes.
package routing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/catchbox/catchbox/internal/tenant"
)

// MaxAddressLength is the longest mailbox accepted: RFC 5321 section 4.5.3.1.3
// limits a path to 256 octets including the angle brackets.
const MaxAddressLength = 254

var (
	// ErrSyntax: the address is not a mailbox.
	ErrSyntax = errors.New("bad address syntax")
	// ErrElsewhere: a well-formed address that no namespace can own (another
	// domain, the bare mail domain, a deeper sub-domain, a reserved or invalid
	// namespace name, an address literal).
	ErrElsewhere = errors.New("address not under the mail domain")
	// ErrNoNamespace: the address names a namespace that does not exist. It
	// wraps tenant.ErrNotFound as well.
	ErrNoNamespace = errors.New("no such namespace")
)

// Address is a mailbox under the mail domain and the namespace it is addressed to.
type Address struct {
	// Mailbox is the address as given, the domain's trailing root dot removed.
	Mailbox string
	// Namespace is the namespace name, lower case and valid.
	Namespace string
}

// In reports whether the address belongs to ns. A client authenticated as a
// namespace may only send to its own addresses, and outbound mail from a
// namespace to its own addresses is delivered without leaving the server.
func (a Address) In(ns tenant.Namespace) bool { return a.Namespace == ns.Name }

// Rule routes addresses of one mail domain to the namespaces of one store.
type Rule struct {
	domain  string
	tenants *tenant.Service
}

// New returns the rule of mailDomain (compared without regard to case, a
// trailing dot ignored), finding namespaces through tenants.
func New(mailDomain string, tenants *tenant.Service) *Rule {
	return &Rule{domain: strings.ToLower(strings.TrimSuffix(strings.TrimSpace(mailDomain), ".")), tenants: tenants}
}

// Domain is the mail domain, lower case, without a trailing dot.
func (r *Rule) Domain() string { return r.domain }

// Route parses addr and finds its namespace: Parse, then Namespace.
func (r *Rule) Route(ctx context.Context, addr string) (Address, tenant.Namespace, error) {
	a, err := r.Parse(addr)
	if err != nil {
		return a, tenant.Namespace{}, err
	}
	ns, err := r.Namespace(ctx, a.Namespace)
	return a, ns, err
}

// Namespace finds a namespace by its (valid, lower-case) name, with the
// organisation that owns it; ErrNoNamespace when there is none.
func (r *Rule) Namespace(ctx context.Context, name string) (tenant.Namespace, error) {
	ns, err := r.tenants.NamespaceByName(ctx, name)
	if errors.Is(err, tenant.ErrNotFound) {
		return tenant.Namespace{}, fmt.Errorf("%w %q: %w", ErrNoNamespace, name, err)
	}
	if err != nil {
		return tenant.Namespace{}, fmt.Errorf("namespace %q: %w", name, err)
	}
	return ns, nil
}

// Parse checks a mailbox and finds the name of the namespace it is addressed to:
// <local>@<namespace>.<mail domain>, the domain compared without regard to case
// and an optional trailing dot allowed. It needs no store.
//
// addr is a bare mailbox. Over SMTP, go-smtp has already parsed the path (RFC
// 5321 section 4.1.2): it removed a source route, which section 4.1.1.3 says to
// ignore, it unquoted a quoted local part, and it refused a path with no domain.
// What is left is checked here: the local part carries no control characters,
// the domain is a syntactically valid host name (RFC 5321 section 4.1.2 Domain)
// or address literal, and the whole is at most 254 octets. On ErrElsewhere the
// returned Mailbox is still set, for checks on the address itself.
func (r *Rule) Parse(addr string) (Address, error) {
	if addr == "" || len(addr) > MaxAddressLength || !utf8.ValidString(addr) {
		return Address{}, ErrSyntax
	}
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 {
		return Address{}, ErrSyntax
	}
	local, domain := addr[:at], addr[at+1:]
	for _, c := range local {
		if c < 0x20 || c == 0x7f {
			return Address{}, ErrSyntax
		}
	}
	domain = strings.TrimSuffix(domain, ".")
	if domain == "" {
		return Address{}, ErrSyntax
	}
	a := Address{Mailbox: local + "@" + domain}
	if strings.HasPrefix(domain, "[") {
		if !strings.HasSuffix(domain, "]") || len(domain) < 3 || strings.ContainsAny(domain[1:len(domain)-1], "[]\\ ") {
			return Address{}, ErrSyntax
		}
		return a, ErrElsewhere // an address literal names a host, never a namespace
	}
	if !validDomain(domain) {
		return Address{}, ErrSyntax
	}
	label, ok := strings.CutSuffix(strings.ToLower(domain), "."+r.domain)
	if !ok || label == "" {
		return a, ErrElsewhere
	}
	ns, err := tenant.NormalizeNamespaceName(label)
	if err != nil {
		// A sub-domain deeper than one label, or a name no namespace may take.
		return a, ErrElsewhere
	}
	a.Namespace = ns
	return a, nil
}

// validDomain reports whether d is a host name: dot-separated labels of 1 to 63
// letters, digits and hyphens, not starting or ending with a hyphen, at most
// 253 octets (RFC 5321 section 4.1.2, RFC 1035 section 2.3.4). A label of
// other UTF-8 letters (an internationalised name, RFC 6531) is accepted as
// well-formed; it can never be a namespace.
func validDomain(d string) bool {
	if len(d) > 253 {
		return false
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-':
			case c >= 0x80 && c != utf8.RuneError:
			default:
				return false
			}
		}
	}
	return true
}
