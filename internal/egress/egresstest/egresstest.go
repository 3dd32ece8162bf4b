// Package egresstest holds what tests of outgoing fetches share: every
// spelling of a non-public target the rule of package egress must see
// through, and a DNS server whose names resolve to such targets.
package egresstest

import (
	"context"
	"net"
	"testing"

	"github.com/catchbox/catchbox/internal/deliverability/dnstest"
)

// Form is a URL host and whether it leads to this machine's loopback, where a
// test can listen.
type Form struct {
	Host  string
	Reach bool
}

// Forms are every spelling of a non-public target the rule must see through,
// as a URL's host, with the test zone's names: each is refused at creation
// and at connection in server mode, and allowed in local mode. Reach marks
// those that lead to this machine's loopback, where a test server listens.
var Forms = []Form{
	{"127.0.0.1", true}, {"127.1", true}, {"127.0.1", true}, {"2130706433", true}, {"0x7f000001", true},
	{"0x7f.1", true}, {"0177.0.0.1", true}, {"017700000001", true}, {"127.0.0.1.", true},
	{"[::1]", true}, {"[::ffff:127.0.0.1]", true}, {"[::ffff:7f00:1]", true},
	{"localhost", true}, {"LOCALHOST", true}, {"LOCALHOST.", true}, {"localhost.", true}, {"app.localhost", true},
	{"loopback.test", true}, {"LOOPBACK.TEST.", true},
	{"0.0.0.0", false}, {"0.0.0.1", false}, {"0", false}, {"10.0.0.1", false}, {"012.0.0.1", false},
	{"172.16.0.1", false}, {"192.168.0.1", false}, {"3232235521", false}, {"100.64.0.1", false},
	{"169.254.169.254", false}, {"169.254.43518", false}, {"0xa9.0xfe.0xa9.0xfe", false}, {"0251.0376.0251.0376", false},
	{"198.18.0.1", false}, {"198.19.1.1", false}, {"192.0.2.1", false}, {"198.51.100.1", false}, {"203.0.113.1", false},
	{"224.0.0.1", false}, {"239.1.2.3", false}, {"240.0.0.1", false}, {"255.255.255.255", false}, {"4294967295", false},
	{"[::]", false}, {"[::ffff:169.254.169.254]", false}, {"[::ffff:a9fe:a9fe]", false}, {"[::a9fe:a9fe]", false},
	{"[::127.0.0.1]", false}, {"[64:ff9b::a9fe:a9fe]", false}, {"[64:ff9b::7f00:1]", false}, {"[64:ff9b::a00:1]", false},
	{"[64:ff9b:1::a9fe:a9fe]", false}, {"[2002:a9fe:a9fe::1]", false}, {"[2002:7f00:1::1]", false},
	{"[2001:0:7f00:1::1]", false}, {"[2001:0:808:808::5601:5601]", false}, {"[2001:db8::1]", false},
	{"[fc00::1]", false}, {"[fd00:ec2::254]", false}, {"[fe80::1]", false}, {"[fe80::1%25eth0]", false},
	{"[fec0::1]", false}, {"[ff02::1]", false}, {"[100::1]", false},
	{"metadata.test", false}, {"private.test", false}, {"ula.test", false}, {"mixed.test", false},
	{"nat64.test", false}, {"cgnat.test", false},
	{"missing.test", false}, {"nothing.invalid", false},
}

// Zone is what the test's DNS server answers; missing.test is not in it.
var Zone = []string{
	"loopback.test. 60 IN A 127.0.0.1",
	"metadata.test. 60 IN A 169.254.169.254",
	"private.test. 60 IN A 10.0.0.5",
	"ula.test. 60 IN AAAA fd00::5",
	"mixed.test. 60 IN A 93.184.216.34", // one public address does not make up for a private one
	"mixed.test. 60 IN A 192.168.1.1",
	"nat64.test. 60 IN AAAA 64:ff9b::a9fe:a9fe",
	"cgnat.test. 60 IN A 100.100.100.100",
	"public.test. 60 IN A 93.184.216.34",
	"public.test. 60 IN AAAA 2606:2800:220:1::1",
}

// Resolver asks a DNS server serving Zone on loopback, started for t (and
// the hosts file, as Go's resolver always does first).
func Resolver(t testing.TB) *net.Resolver {
	dns := dnstest.Start(t, Zone...)
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, dns.Addr)
	}}
}
