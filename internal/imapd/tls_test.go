package imapd

import (
	"crypto/tls"
	"errors"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testcert"
)

// With a certificate and TLS required (SMTP AUTH's rule): no login in plain
// text (LOGINDISABLED, NO [PRIVACYREQUIRED]), a login after STARTTLS, and one
// on the implicit TLS listener.
func TestTLS(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		cert, pool := testcert.New(t)
		h := newHarness(t, db, Config{})
		h.serveListeners(Config{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, RequireTLS: true}, true)
		h.send("tls@alpha.localhost", message("tls@alpha.localhost", "over TLS", "x"))
		clientTLS := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}

		plain := h.dial(nil)
		if !plain.Caps().Has(imap.CapLoginDisabled) || !plain.Caps().Has(imap.CapStartTLS) {
			t.Fatalf("plain-text capabilities %v", plain.Caps())
		}
		var imapErr *imap.Error
		if err := plain.Login("alpha", h.password("alpha")).Wait(); !errors.As(err, &imapErr) || imapErr.Code != imap.ResponseCodePrivacyRequired {
			t.Fatalf("plain-text login: %v, want NO [PRIVACYREQUIRED]", err)
		}

		for name, dial := range map[string]func() (*imapclient.Client, error){
			"STARTTLS": func() (*imapclient.Client, error) {
				return imapclient.DialStartTLS(h.imapAddr, &imapclient.Options{TLSConfig: clientTLS})
			},
			"implicit TLS": func() (*imapclient.Client, error) {
				return imapclient.DialTLS(h.imapsAddr, &imapclient.Options{TLSConfig: clientTLS})
			},
		} {
			c, err := dial()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := c.Login("alpha", h.password("alpha")).Wait(); err != nil {
				t.Fatalf("%s login: %v", name, err)
			}
			data, err := c.Select("INBOX", nil).Wait()
			if err != nil || data.NumMessages != 1 {
				t.Fatalf("%s select: %+v %v", name, data, err)
			}
			c.Logout().Wait()
			c.Close()
		}
	})
}
