package pop3d

import (
	"bufio"
	"crypto/tls"
	"net"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testcert"
)

// With a certificate and TLS required (SMTP AUTH's rule): CAPA offers STLS and
// no USER before it, USER is refused in plain text, and a login works after
// STLS and on the implicit TLS listener.
func TestTLS(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		cert, pool := testcert.New(t)
		h := newHarness(t, db, Config{})
		plainAddr, implicitAddr := h.serveTLS(Config{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, RequireTLS: true})
		clientTLS := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
		password := h.tenants.SMTPPassword(h.ns["alpha"])

		nc, err := net.Dial("tcp", plainAddr)
		if err != nil {
			t.Fatal(err)
		}
		c := h.client(nc)
		c.cmd("CAPA", "+OK")
		if capa := c.multi(); !strings.Contains(capa, "STLS\r\n") || strings.Contains(capa, "USER\r\n") {
			t.Fatalf("plain-text CAPA %q", capa)
		}
		c.cmd("USER alpha", "-ERR [AUTH]")
		c.cmd("STLS", "+OK")
		tc := tls.Client(nc, clientTLS)
		if err := tc.Handshake(); err != nil {
			t.Fatalf("STLS handshake: %v", err)
		}
		c.nc, c.r = tc, bufio.NewReader(tc)
		c.cmd("USER alpha", "+OK")
		c.cmd("PASS "+password, "+OK")
		c.cmd("QUIT", "+OK")

		tc, err = tls.Dial("tcp", implicitAddr, clientTLS)
		if err != nil {
			t.Fatalf("implicit TLS: %v", err)
		}
		ic := h.client(tc)
		ic.cmd("USER alpha", "+OK")
		ic.cmd("PASS "+password, "+OK")
		ic.cmd("QUIT", "+OK")
	})
}
