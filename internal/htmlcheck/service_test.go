package htmlcheck_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

const newsletter = "From: news@example.org\r\nTo: john@default.localhost\r\nSubject: News\r\n" +
	"Content-Type: text/html; charset=utf-8\r\n\r\n<div style=\"display:flex\">Hello</div>\r\n"

const plain = "From: news@example.org\r\nTo: john@default.localhost\r\nSubject: Plain\r\n\r\nHello\r\n"

// TestCheckOperation runs the operation as a principal: its own
// organisation's email is checked once and then served from memory, another
// organisation's is not found, and a deleted email is not found though its
// report is still cached.
func TestCheckOperation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc := servertest.New(t, db, servertest.Config(t))
		ns, err := svc.Tenants.NamespaceByName(ctx, tenant.DefaultName)
		if err != nil {
			t.Fatal(err)
		}
		deliver := func(raw string) string {
			ids, err := svc.Ingester.Deliver(ctx, []byte(raw), inbox.Envelope{ClientIP: "127.0.0.1", MailFrom: "news@example.org"},
				[]inbox.Target{{Namespace: ns, Recipients: []string{"john@default.localhost"}}})
			if err != nil {
				t.Fatal(err)
			}
			return ids[0]
		}
		owner := tenant.Principal{Org: tenant.Org{ID: ns.OrgID}}
		other, err := svc.Tenants.CreateOrg(ctx, "other", 100, true)
		if err != nil {
			t.Fatal(err)
		}
		stranger := tenant.Principal{Org: other}

		id := deliver(newsletter)
		first, err := svc.HTMLCheck.Check(ctx, owner, strings.ToUpper(id))
		if err != nil {
			t.Fatal(err)
		}
		if len(first.Features) == 0 || first.Features[0].Name == "" {
			t.Fatalf("no feature found in %q", newsletter)
		}
		again, err := svc.HTMLCheck.Check(ctx, owner, id)
		if err != nil || again != first {
			t.Errorf("second check: %p, %v; want the cached report %p", again, err, first)
		}

		var pe *problem.Error
		if _, err := svc.HTMLCheck.Check(ctx, stranger, id); !errors.As(err, &pe) || pe.Kind != problem.NotFound {
			t.Errorf("another organisation's email: %v", err)
		}
		for _, bad := range []string{"", "nope", tenant.NewID()} {
			if _, err := svc.HTMLCheck.Check(ctx, owner, bad); !errors.As(err, &pe) || pe.Kind != problem.NotFound {
				t.Errorf("email %q: %v", bad, err)
			}
		}
		if err := svc.Searcher.DeleteEmail(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.HTMLCheck.Check(ctx, owner, id); !errors.As(err, &pe) || pe.Kind != problem.NotFound {
			t.Errorf("a deleted email: %v", err)
		}

		r, err := svc.HTMLCheck.Check(ctx, owner, deliver(plain))
		if err != nil || r.Features == nil || len(r.Features) != 0 || r.Checked != 0 {
			t.Errorf("an email without HTML: %+v, %v", r, err)
		}
	})
}
