package sms_test

import (
	"context"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/problem/problemtest"
	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// principal is an API key's principal of the organisation.
func principal(org tenant.Org) tenant.Principal {
	return tenant.Principal{Org: org, KeyID: "key-of-" + org.Name, Orgs: []tenant.Org{org}}
}

// TestSendVirtual calls the operation as the API and the dashboard do,
// without HTTP: a message is stored on the organisation's active number once
// it returns, its numbers read as people write them; every invalid field is
// named at once; another organisation's number, an unknown one and a
// request with no principal are not found, a disabled number is refused,
// and nothing is stored by a refused request.
func TestSendVirtual(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		owner := principal(e.org)
		otherOrg, err := e.tenants.OrgByName(ctx, "other")
		if err != nil {
			t.Fatal(err)
		}
		other := principal(otherOrg)

		m, err := e.svc.SendVirtual(ctx, owner, sms.VirtualRequest{FromNumber: "+44 7700 900 999", ToNumber: "1 555 000 1111", Body: "Your code is 123456"})
		if err != nil {
			t.Fatal(err)
		}
		if m.NumberID != e.active.ID || m.From != "+447700900999" || m.To != activePhone || m.Body != "Your code is 123456" ||
			m.Direction != sms.DirectionInbound || m.ProviderMessageID != "" || len(m.Codes) != 1 || m.Codes[0] != "123456" {
			t.Fatalf("message %+v", m)
		}
		latest, err := e.svc.Latest(ctx, e.active.ID)
		if err != nil || latest.ID != m.ID {
			t.Fatalf("latest after SendVirtual: %+v, %v", latest, err)
		}
		long := strings.Repeat("é", sms.MaxBodyRunes)
		if m, err := e.svc.SendVirtual(ctx, owner, sms.VirtualRequest{FromNumber: "+15559990000", ToNumber: activePhone, Body: long}); err != nil || m.Body != long {
			t.Fatalf("a body of %d characters: %v", sms.MaxBodyRunes, err)
		}

		for _, c := range []struct {
			name   string
			req    sms.VirtualRequest
			fields []string
		}{
			{"nothing", sms.VirtualRequest{}, []string{"from_number", "to_number", "body"}},
			{"bad from", sms.VirtualRequest{FromNumber: "hello", ToNumber: activePhone, Body: "x"}, []string{"from_number"}},
			{"short from", sms.VirtualRequest{FromNumber: "12345", ToNumber: activePhone, Body: "x"}, []string{"from_number"}},
			{"bad to", sms.VirtualRequest{FromNumber: "+15559990000", ToNumber: "+0123456789", Body: "x"}, []string{"to_number"}},
			{"bad both, long body", sms.VirtualRequest{FromNumber: "x", ToNumber: "y", Body: long + "x"}, []string{"from_number", "to_number", "body"}},
		} {
			_, err := e.svc.SendVirtual(ctx, owner, c.req)
			pe := problemtest.WantFields(t, err, "invalid_parameter", c.fields...)
			if c.name == "nothing" && pe.Message != "from_number is required; to_number is required; body is required" {
				t.Errorf("%s: %q", c.name, pe.Message)
			}
		}

		for _, c := range []struct {
			name string
			p    tenant.Principal
			to   string
		}{
			{"another organisation's number", owner, otherPhone},
			{"a number of the organisation, sent by another", other, activePhone},
			{"no principal", tenant.Principal{}, activePhone},
			{"an unknown number", owner, "+15557770000"},
		} {
			_, err := e.svc.SendVirtual(ctx, c.p, sms.VirtualRequest{FromNumber: "+15559990000", ToNumber: c.to, Body: "x"})
			pe := problemtest.Want(t, err, problem.NotFound, "sms_number_not_found")
			if !strings.Contains(pe.Message, c.to) {
				t.Errorf("%s: %q does not name the number", c.name, pe.Message)
			}
		}
		_, err = e.svc.SendVirtual(ctx, owner, sms.VirtualRequest{FromNumber: "+15559990000", ToNumber: disabledPhone, Body: "x"})
		if pe := problemtest.Want(t, err, problem.Conflict, "sms_number_inactive"); pe.Message != "sms number "+disabledPhone+" is disabled, not active" {
			t.Errorf("disabled: %q", pe.Message)
		}
		if n := e.count(); n != 2 {
			t.Errorf("%d messages stored, want 2 (refused requests store nothing)", n)
		}

		// The other organisation sends to its own number.
		if m, err := e.svc.SendVirtual(ctx, other, sms.VirtualRequest{FromNumber: "+15559990000", ToNumber: otherPhone, Body: "hi"}); err != nil || m.NumberID != e.otherNum.ID {
			t.Fatalf("other organisation: %+v, %v", m, err)
		}
	})
}
