package web_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// The virtual SMS form shows sms.SendVirtual's refusals in its own words:
// every invalid field at once, and a number that is not active.
func TestVirtualSMSFormRefusals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		ctx := context.Background()
		for _, spec := range []sms.NumberSpec{{Phone: "+15550001000"}, {Phone: "+15550003000", Status: sms.StatusDisabled}} {
			if _, err := e.svc.SMS.Service.AddNumber(ctx, e.org.ID, spec); err != nil {
				t.Fatal(err)
			}
		}
		b := e.browser()
		b.signIn("alice@example.com")
		p := b.post("/sms/+15550001000/virtual", url.Values{"from_number": {"nope"}})
		if p.status != http.StatusBadRequest {
			t.Fatalf("a bad sender and no body: %d %s", p.status, p.body)
		}
		mustContain(t, p, "from_number must be an E.164 phone number such as &#43;15551234567; body is required")
		p = b.post("/sms/+15550003000/virtual", url.Values{"from_number": {"+15550002222"}, "body": {"x"}})
		if p.status != http.StatusConflict {
			t.Fatalf("a disabled number: %d %s", p.status, p.body)
		}
		mustContain(t, p, "sms number &#43;15550003000 is disabled, not active")
	})
}
