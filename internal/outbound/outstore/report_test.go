package outstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/outbound/returns"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// TestRecordReport records reports through the store: a failed block of
// class 4 is a soft bounce that suppresses nothing; delivered, relayed and
// expanded are delivered events; an unknown action and an address of no
// recipient are ignored; the address is matched without regard to case; a
// feedback report naming nobody concerns the only external recipient, and
// with two external recipients it concerns nobody.
func TestRecordReport(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		em := e.create(message(e.org, "s", to("Soft@Example.org", false), to("ok@example.org", false), to("me@team.localhost", true)))
		n, err := e.s.RecordReport(ctx, em.ID, returns.Report{Kind: returns.DSN, ID: "r1", Recipients: []returns.Recipient{
			{Final: "soft@example.org", Action: "failed", Status: "4.4.7", DiagnosticCode: "smtp; 451 4.4.7 queue lifetime exceeded", SMTPCode: "451"},
			{Final: "ok@example.org", Action: "relayed"},
			{Final: "ok@example.org", Action: "transmogrified"},
			{Final: "stranger@example.org", Action: "failed", Status: "5.1.1"},
		}})
		if err != nil || n != 2 {
			t.Fatalf("recorded %d (%v), want 2", n, err)
		}
		d := e.get(em.ID)
		soft := d.Recipients[0]
		if soft.Status != outstore.DeliveryBounced || soft.BounceType != "soft" || soft.LastSMTPCode != "451" {
			t.Errorf("soft %+v", soft)
		}
		if ev := d.Events[len(d.Events)-2]; ev.Type != outstore.EventBounced || ev.Subtype != "transient" {
			t.Errorf("soft bounce event %+v", ev)
		}
		if ok := d.Recipients[1]; ok.Status != outstore.DeliveryDelivered || ok.LastEventType != outstore.EventDelivered {
			t.Errorf("relayed %+v", ok)
		}
		if sup, _, _ := e.s.Suppressions(ctx, e.org, 10, 0); len(sup) != 0 {
			t.Errorf("a soft bounce suppressed %+v", sup)
		}

		// Both external recipients: an anonymous complaint names nobody.
		anon := returns.Report{Kind: returns.Feedback, ID: "arf1", FeedbackType: "abuse"}
		if n, err := e.s.RecordReport(ctx, em.ID, anon); err != nil || n != 0 {
			t.Errorf("anonymous complaint with two external recipients: %d %v", n, err)
		}
		one := e.create(message(e.org, "s", to("only@example.org", false), to("me@team.localhost", true)))
		if n, err := e.s.RecordReport(ctx, one.ID, anon); err != nil || n != 1 {
			t.Fatalf("anonymous complaint with one external recipient: %d %v", n, err)
		}
		if r := e.get(one.ID).Recipients[0]; r.Status != outstore.DeliveryComplained || r.ComplaintFeedbackType != "abuse" {
			t.Errorf("only %+v", r)
		}
		sup, _, _ := e.s.Suppressions(ctx, e.org, 10, 0)
		if len(sup) != 1 || sup[0].Address != "only@example.org" || sup[0].Reason != outstore.SuppressedComplained {
			t.Errorf("suppressions %+v", sup)
		}
		if sup, _, _ := e.s.Suppressions(ctx, e.other, 10, 0); len(sup) != 0 {
			t.Errorf("another organisation's suppressions %+v", sup)
		}
		if _, err := e.s.RecordReport(ctx, outstore.NewID(), anon); !errors.Is(err, outstore.ErrNotFound) {
			t.Errorf("report of no email: %v", err)
		}
		if err := e.s.Unsuppress(ctx, e.org, "ONLY@example.org"); err != nil {
			t.Errorf("unsuppress: %v", err)
		}
		if err := e.s.Unsuppress(ctx, e.org, "only@example.org"); !errors.Is(err, outstore.ErrNotFound) {
			t.Errorf("unsuppress again: %v", err)
		}
	})
}
