package deliverability

import (
	"net"
	"strings"

	"github.com/miekg/dns"
	"golang.org/x/net/publicsuffix"

	"github.com/catchbox/catchbox/internal/message"
)

// Input is what the checks read: the message exactly as received (DKIM
// signs those bytes), and what the SMTP session recorded beside it.
type Input struct {
	Raw      []byte
	ClientIP string // the connecting client's address
	Helo     string // its HELO/EHLO name
	MailFrom string // the envelope sender (RFC 5321 MAIL FROM), "" for a null sender
}

// env is an Input as the checks share it, read once.
type env struct {
	in         Input
	msg        message.Parsed
	ip         net.IP // nil when the recorded address is not one
	fromDomain string // the From header's domain, lower case; "" when it has none
	dns        *Lookups
}

func newEnv(in Input, l *Lookups) *env {
	e := &env{in: in, msg: message.Parse(in.Raw), dns: l}
	e.ip = net.ParseIP(strings.TrimSpace(in.ClientIP))
	e.fromDomain = domainOf(e.msg.From.Address)
	return e
}

// domainOf returns the domain of an address, lower case, without a trailing
// dot; "" when it has none.
func domainOf(addr string) string {
	i := strings.LastIndexByte(addr, '@')
	if i < 0 {
		return ""
	}
	return hostname(strings.Trim(addr[i+1:], "<> "))
}

// validDomain reports whether d can be asked about in DNS: a name of at least
// two labels (not an address literal such as a HELO of "[192.0.2.1]").
func validDomain(d string) bool {
	if d == "" || !strings.Contains(d, ".") || net.ParseIP(strings.Trim(d, "[]")) != nil {
		return false
	}
	_, ok := dns.IsDomainName(d)
	return ok
}

// orgDomain is the organisational domain of d (RFC 7489 section 3.2): its
// registered domain under the public suffix list, or d itself when d is a
// public suffix or not a name the list knows how to split.
func orgDomain(d string) string {
	od, err := publicsuffix.EffectiveTLDPlusOne(d)
	if err != nil {
		return d
	}
	return od
}
