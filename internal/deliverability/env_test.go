package deliverability

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/catchbox/catchbox/internal/deliverability/dnstest"
)

// The sending server of the tests: 192.0.2.10 (TEST-NET-1), greeting as
// mail.shop.test, whose reverse DNS is confirmed forward.
const (
	clientIP   = "192.0.2.10"
	clientHelo = "mail.shop.test"
)

// testKeys are the DKIM keys of the test zones, made once per test binary.
type testKeys struct {
	rsa1024, rsa2048 *rsa.PrivateKey
	ed               ed25519.PrivateKey
}

var keys = sync.OnceValue(func() testKeys {
	k1, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		panic(err)
	}
	k2, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return testKeys{k1, k2, ed}
})

// txt writes a TXT record line, its value split into strings of at most 255
// bytes (RFC 1035 section 3.3.14).
func txt(name, value string) string {
	var parts []string
	for len(value) > 255 {
		parts = append(parts, value[:255])
		value = value[255:]
	}
	parts = append(parts, value)
	return fmt.Sprintf("%s 300 IN TXT \"%s\"", name, strings.Join(parts, `" "`))
}

func dkimRecord(pub crypto.PublicKey) string {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(k)
	default:
		der, err := x509.MarshalPKIXPublicKey(k)
		if err != nil {
			panic(err)
		}
		return "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(der)
	}
}

// testZones are the zones every check's test asks. Domains:
//   - shop.test: the sender of the fixtures: SPF for 192.0.2.0/24, MX, DKIM
//     keys (RSA 1024 and 2048, Ed25519, one revoked), DMARC p=reject;
//   - pass, fail, softfail, neutral, none, two, loop, tcp .test: one SPF
//     result each (none.test has no TXT; temperror.test fails);
//   - esp.test: a sending provider whose SPF and DKIM pass but are not
//     aligned with shop.test;
//   - strict.test: DMARC with strict alignment; org.test: DMARC p=none,
//     sp=reject for subdomains; bad.test, multi.test: broken DMARC;
//   - zen.test (IP list) and dbl.test (domain list), refuse.test (a list
//     that refuses the query);
//   - reverse DNS: 192.0.2.10 confirmed as mail.shop.test, 192.0.2.11 not
//     confirmed, 192.0.2.12 without PTR.
func testZones() []string {
	k := keys()
	z := []string{
		txt("shop.test.", "v=spf1 ip4:192.0.2.0/24 -all"),
		"shop.test. 300 IN MX 10 mx.shop.test.",
		"mx.shop.test. 300 IN A 192.0.2.25",
		"mail.shop.test. 300 IN A 192.0.2.10",
		"www.shop.test. 300 IN A 192.0.2.80",
		txt("r1024._domainkey.shop.test.", dkimRecord(k.rsa1024.Public())),
		txt("r2048._domainkey.shop.test.", dkimRecord(k.rsa2048.Public())),
		txt("ed._domainkey.shop.test.", dkimRecord(k.ed.Public())),
		txt("revoked._domainkey.shop.test.", "v=DKIM1; k=rsa; p="),
		txt("_dmarc.shop.test.", "v=DMARC1; p=reject; rua=mailto:dmarc@shop.test"),
		txt("bounces.shop.test.", "v=spf1 ip4:192.0.2.0/24 -all"),

		txt("pass.test.", "v=spf1 ip4:192.0.2.0/24 -all"),
		txt("fail.test.", "v=spf1 ip4:198.51.100.0/24 -all"),
		txt("softfail.test.", "v=spf1 ip4:198.51.100.0/24 ~all"),
		txt("neutral.test.", "v=spf1 ?all"),
		"none.test. 300 IN A 192.0.2.80",
		txt("two.test.", "v=spf1 ip4:192.0.2.0/24 -all"),
		txt("two.test.", "v=spf1 include:pass.test -all"),
		txt("mail.helo.test.", "v=spf1 ip4:192.0.2.10 -all"),

		txt("esp.test.", "v=spf1 ip4:192.0.2.0/24 -all"),
		txt("k1._domainkey.esp.test.", dkimRecord(k.rsa2048.Public())),

		txt("_dmarc.strict.test.", "v=DMARC1; p=quarantine; adkim=s; aspf=s"),
		txt("strict.test.", "v=spf1 ip4:192.0.2.0/24 -all"),
		txt("bounces.strict.test.", "v=spf1 ip4:192.0.2.0/24 -all"),
		txt("k1._domainkey.strict.test.", dkimRecord(k.rsa2048.Public())),
		txt("_dmarc.org.test.", "v=DMARC1; p=none; sp=reject; pct=50"),
		txt("news.org.test.", "v=spf1 ip4:198.51.100.0/24 -all"),
		txt("_dmarc.bad.test.", "v=DMARC1; p=maybe"),
		txt("bad.test.", "v=spf1 ip4:192.0.2.0/24 -all"),
		txt("_dmarc.multi.test.", "v=DMARC1; p=none"),
		txt("_dmarc.multi.test.", "v=DMARC1; p=reject"),

		"10.2.0.192.zen.test. 300 IN A 127.0.0.2",
		txt("10.2.0.192.zen.test.", "Listed for testing: see https://zen.test/lookup?ip=192.0.2.10"),
		"2.0.0.127.zen.test. 300 IN A 127.0.0.2",
		"evil.test.dbl.test. 300 IN A 127.0.1.2",
		"10.2.0.192.refuse.test. 300 IN A 127.255.255.254",

		"10.2.0.192.in-addr.arpa. 300 IN PTR mail.shop.test.",
		"11.2.0.192.in-addr.arpa. 300 IN PTR host.other.test.",
	}
	// loop.test needs eleven includes: one more than RFC 7208 allows.
	var inc []string
	for i := 1; i <= 11; i++ {
		inc = append(inc, fmt.Sprintf("include:l%d.loop.test", i))
		z = append(z, txt(fmt.Sprintf("l%d.loop.test.", i), "v=spf1 -all"))
	}
	z = append(z, txt("loop.test.", "v=spf1 "+strings.Join(inc, " ")+" -all"))
	// tcp.test's TXT answer is longer than a UDP answer may be: asking for
	// it needs TCP.
	z = append(z, txt("tcp.test.", "v=spf1 ip4:192.0.2.0/24 -all"))
	for i := 0; i < 6; i++ {
		z = append(z, txt("tcp.test.", fmt.Sprintf("verification-%d=%s", i, strings.Repeat("x", 240))))
	}
	return z
}

// startDNS serves the test zones, with temperror.test failing.
func startDNS(t *testing.T) *dnstest.Server {
	t.Helper()
	s := dnstest.Start(t, testZones()...)
	s.ServFail("temperror.test")
	s.ServFail("_dmarc.temperror.test")
	s.ServFail("down._domainkey.shop.test")
	return s
}

// testResolver asks srv with a short time limit, so that the tests of
// unanswered questions do not wait the production 2 s.
func testResolver(srv *dnstest.Server) *Resolver { return NewResolver(srv.Addr, 500*time.Millisecond) }

// fixture reads testdata/name with CRLF line endings, as mail travels.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return crlf(string(b))
}

func crlf(s string) []byte {
	return []byte(strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n"))
}

// sign adds a DKIM signature to raw with go-msgauth's signer.
func sign(t *testing.T, raw []byte, domain, selector string, key crypto.Signer) []byte {
	t.Helper()
	var b bytes.Buffer
	err := dkim.Sign(&b, bytes.NewReader(raw), &dkim.SignOptions{Domain: domain, Selector: selector, Signer: key,
		HeaderKeys: []string{"From", "To", "Subject", "Date", "Message-ID"}})
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// input is a message from the test client with the envelope sender.
func input(raw []byte, mailFrom string) Input {
	return Input{Raw: raw, ClientIP: clientIP, Helo: clientHelo, MailFrom: mailFrom}
}

func testEnv(srv *dnstest.Server, in Input) *env { return newEnv(in, testResolver(srv).Session()) }

// details returns an issue's details re-read from JSON, as a client sees them.
func details(t *testing.T, i *Issue) map[string]any {
	t.Helper()
	if i == nil {
		t.Fatal("no such issue")
	}
	b, err := json.Marshal(i.Details)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

var ctx = context.Background()

func parseIP(s string) net.IP { return net.ParseIP(s) }
