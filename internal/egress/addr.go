package egress

import (
	"net/netip"
	"strconv"
	"strings"
)

// ParseHost reads a URL's host as an IP address in any of the spellings a
// resolver or a browser accepts, and returns it normalised (an IPv6 zone
// dropped): "[::1]", "127.0.0.1", and the older IPv4 forms of inet_aton(3)
// and the WHATWG URL standard, "127.1", "2130706433", "0x7f.1",
// "0177.0.0.1". ok is false for a name. A host that looks like such a
// number but is out of range ("256.1.1.1", "1.2.3.4.5") is not an address,
// and no resolver finds it as a name either.
func ParseHost(host string) (a netip.Addr, ok bool) {
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if strings.Contains(host, ":") {
		a, err := netip.ParseAddr(host)
		if err != nil {
			return netip.Addr{}, false
		}
		return a.WithZone(""), true
	}
	return parseIPv4(host)
}

// parseIPv4 reads the forms of inet_aton(3): one to four parts separated by
// dots, each decimal, octal (a leading 0) or hexadecimal (0x), the last part
// filling the bytes the others left. A trailing dot is allowed, as the WHATWG
// URL standard's IPv4 parser allows it.
func parseIPv4(s string) (netip.Addr, bool) {
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return netip.Addr{}, false
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseIPv4Part(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	last := len(nums) - 1
	var v uint64
	for i, n := range nums[:last] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	if nums[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	v |= nums[last]
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func parseIPv4Part(p string) (uint64, bool) {
	base := 10
	switch {
	case p == "":
		return 0, false
	case len(p) > 1 && (p[:2] == "0x" || p[:2] == "0X"):
		p, base = p[2:], 16
		if p == "" {
			return 0, true // "0x" is zero, as inet_aton reads it
		}
	case len(p) > 1 && p[0] == '0':
		p, base = p[1:], 8
	}
	for _, c := range p {
		if !(c >= '0' && c <= '9' || base == 16 && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')) {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(p, base, 64)
	if err != nil || n > 1<<32-1 {
		return 0, false
	}
	return n, true
}

// range4 and range6 are the special-purpose ranges of the IANA registries
// (RFC 6890 and its updates) that are not globally reachable, each with what a
// refusal calls it.
type special struct {
	prefix netip.Prefix
	what   string
}

var range4 = []special{
	{netip.MustParsePrefix("0.0.0.0/8"), "a \"this network\" address"},     // RFC 791, 1122
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},             // RFC 1918
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (CGNAT) address"},   // RFC 6598
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},           // RFC 1122
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},      // RFC 3927 (cloud metadata)
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},          // RFC 1918
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol assignment"}, // RFC 6890
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},     // RFC 5737
	{netip.MustParsePrefix("192.88.99.0/24"), "a 6to4 relay address"},      // RFC 7526, deprecated
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},         // RFC 1918
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},     // RFC 2544
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},  // RFC 5737
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},   // RFC 5737
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},          // RFC 5771
	{netip.MustParsePrefix("255.255.255.255/32"), "a broadcast address"},   // RFC 919
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved (class E) address"}, // RFC 1112
}

var range6 = []special{
	{netip.MustParsePrefix("::/128"), "an unspecified address"},             // RFC 4291
	{netip.MustParsePrefix("::1/128"), "a loopback address"},                // RFC 4291
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible address"},          // RFC 4291 2.5.5.1, deprecated
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address"},  // RFC 8215
	{netip.MustParsePrefix("100::/64"), "a discard-only address"},           // RFC 6666
	{netip.MustParsePrefix("100:0:0:1::/64"), "a dummy prefix address"},     // RFC 9780
	{netip.MustParsePrefix("2001:2::/48"), "a benchmarking address"},        // RFC 5180
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},     // RFC 3849
	{netip.MustParsePrefix("2001::/23"), "an IETF protocol assignment"},     // RFC 2928 (Teredo is read first)
	{netip.MustParsePrefix("3fff::/20"), "a documentation address"},         // RFC 9637
	{netip.MustParsePrefix("5f00::/16"), "an SRv6 SID address"},             // RFC 9602
	{netip.MustParsePrefix("fc00::/7"), "a unique local (private) address"}, // RFC 4193
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},            // RFC 4291
	{netip.MustParsePrefix("fec0::/10"), "a site-local address"},            // RFC 3879, deprecated
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},              // RFC 4291
}

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052: the IPv4 address in the last 32 bits
	sixTo4  = netip.MustParsePrefix("2002::/16")    // RFC 3056: the IPv4 address in bits 16 to 47
	teredo  = netip.MustParsePrefix("2001::/32")    // RFC 4380: server in bits 32 to 63, client inverted in the last 32
	global6 = netip.MustParsePrefix("2000::/3")     // RFC 4291: global unicast
)

// Why says what a is when it is not a public unicast address ("a loopback
// address"), and returns "" when it is one. Every
// form that carries an IPv4 address is read through to it first: IPv4-mapped
// (::ffff:a.b.c.d), NAT64 (64:ff9b::/96), 6to4 (2002::/16) and Teredo
// (2001::/32, both its server and its client address), so that
// [64:ff9b::a9fe:a9fe] is refused as 169.254.169.254 is. IPv6 outside
// 2000::/3 (global unicast) is refused, as is every special-purpose range of
// the IANA registries that is not globally reachable.
func Why(a netip.Addr) string {
	a = a.WithZone("")
	if a.Is4In6() {
		return via("an IPv4-mapped", a.Unmap())
	}
	if a.Is4() {
		for _, s := range range4 {
			if s.prefix.Contains(a) {
				return s.what
			}
		}
		return ""
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return via("a NAT64", netip.AddrFrom4([4]byte(b[12:16])))
	case sixTo4.Contains(a):
		return via("a 6to4", netip.AddrFrom4([4]byte(b[2:6])))
	case teredo.Contains(a):
		if why := via("a Teredo (server)", netip.AddrFrom4([4]byte(b[4:8]))); why != "" {
			return why
		}
		return via("a Teredo (client)", netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}))
	}
	for _, s := range range6 {
		if s.prefix.Contains(a) {
			return s.what
		}
	}
	if !global6.Contains(a) {
		return "not a global unicast address"
	}
	return ""
}

// via names the IPv4 address an IPv6 form carries when that address is not
// public: "a NAT64 form of 169.254.169.254, a link-local address".
func via(form string, v4 netip.Addr) string {
	if why := Why(v4); why != "" {
		return form + " form of " + v4.String() + ", " + why
	}
	return ""
}

// localhostNames are the names that mean this machine whatever DNS says
// (RFC 6761 section 6.3 for localhost and its sub-domains; the others are in
// the hosts files of common systems).
var localhostNames = map[string]bool{
	"localhost": true, "localhost.localdomain": true, "localhost4": true, "localhost6": true,
	"localhost4.localdomain4": true, "localhost6.localdomain6": true, "ip6-localhost": true, "ip6-loopback": true,
}

// IsLocalhost reports whether a host name means this machine: localhost in
// any letter case, with or without the root's trailing dot, its
// sub-domains, and the aliases of common hosts files.
func IsLocalhost(name string) bool {
	n := strings.ToLower(strings.TrimSuffix(name, "."))
	return localhostNames[n] || strings.HasSuffix(n, ".localhost")
}
