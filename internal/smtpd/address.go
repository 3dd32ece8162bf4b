package smtpd

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/catchbox/catchbox/internal/tenant"
)

// maxAddressLength is the longest mailbox accepted: RFC 5321 section 4.5.3.1.3
// limits a path to 256 octets including the angle brackets.
const maxAddressLength = 254

var (
	// errAddrSyntax: the address is not a mailbox (550 5.1.3).
	errAddrSyntax = errors.New("bad address syntax")
	// errAddrElsewhere: a well-formed address that no namespace can own
	// (550 5.1.1).
	errAddrElsewhere = errors.New("address not under the mail domain")
)

// recipient is a forward-path mailbox addressed to a namespace.
type recipient struct {
	// Address is the mailbox as given, the domain's trailing root dot removed.
	Address string
	// Namespace is the namespace name, lower case and valid.
	Namespace string
}

// parseRecipient checks a RCPT TO mailbox and finds the namespace it is
// addressed to: <local>@<namespace>.<mailDomain>, the domain compared without
// regard to case and an optional trailing dot allowed (mailDomain is lower case,
// without the dot).
//
// go-smtp has already parsed the path (RFC 5321 section 4.1.2): it removed a
// source route, which section 4.1.1.3 says to ignore, it unquoted a quoted local
// part, and it refused a path with no domain. What is left is checked here:
// the local part carries no control characters, the domain is a syntactically
// valid host name (RFC 5321 section 4.1.2 Domain) or address literal, and the
// whole is at most 254 octets.
func parseRecipient(addr, mailDomain string) (recipient, error) {
	if addr == "" || len(addr) > maxAddressLength || !utf8.ValidString(addr) {
		return recipient{}, errAddrSyntax
	}
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 {
		return recipient{}, errAddrSyntax
	}
	local, domain := addr[:at], addr[at+1:]
	for _, r := range local {
		if r < 0x20 || r == 0x7f {
			return recipient{}, errAddrSyntax
		}
	}
	domain = strings.TrimSuffix(domain, ".")
	if domain == "" {
		return recipient{}, errAddrSyntax
	}
	rcpt := recipient{Address: local + "@" + domain}
	if strings.HasPrefix(domain, "[") {
		if !strings.HasSuffix(domain, "]") || len(domain) < 3 || strings.ContainsAny(domain[1:len(domain)-1], "[]\\ ") {
			return recipient{}, errAddrSyntax
		}
		return rcpt, errAddrElsewhere // an address literal names a host, never a namespace
	}
	if !validDomain(domain) {
		return recipient{}, errAddrSyntax
	}
	lower := strings.ToLower(domain)
	label, ok := strings.CutSuffix(lower, "."+mailDomain)
	if !ok || label == "" {
		return rcpt, errAddrElsewhere
	}
	ns, err := tenant.NormalizeNamespaceName(label)
	if err != nil {
		// A sub-domain deeper than one label, or a name no namespace may take.
		return rcpt, errAddrElsewhere
	}
	rcpt.Namespace = ns
	return rcpt, nil
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
		for _, r := range label {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			case r >= 0x80 && r != utf8.RuneError:
			default:
				return false
			}
		}
	}
	return true
}

// isASCII reports whether s is plain ASCII; other addresses need SMTPUTF8.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
