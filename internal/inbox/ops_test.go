package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/problem/problemtest"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// opsEnv is the service as catchbox serve builds it, without HTTP: the
// operations are called directly, as the principals of organisation default
// (owner, which owns namespaces default and team) and of organisation other.
type opsEnv struct {
	t            *testing.T
	svc          *server.Service
	owner, other tenant.Principal
	ns, team     tenant.Namespace
}

func newOpsEnv(t *testing.T, db *store.DB) *opsEnv {
	t.Helper()
	ctx := context.Background()
	svc := servertest.New(t, db, servertest.Config(t))
	org, err := svc.Tenants.OrgByName(ctx, tenant.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := servertest.Org(t, svc, "other")
	e := &opsEnv{t: t, svc: svc,
		owner: tenant.Principal{Org: org, KeyID: "k1", Orgs: []tenant.Org{org}},
		other: tenant.Principal{Org: other, KeyID: "k2", Orgs: []tenant.Org{other}}}
	if e.ns, err = svc.Tenants.NamespaceByName(ctx, tenant.DefaultName); err != nil {
		t.Fatal(err)
	}
	if e.team, err = svc.Tenants.CreateNamespace(ctx, org.ID, "team", tenant.Settings{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// deliver stores an email in the namespace as SMTP would, and returns its id.
func (e *opsEnv) deliver(ns tenant.Namespace, subject string) string {
	e.t.Helper()
	m := msg{from: "x@example.com", to: "a@" + ns.Name + ".localhost", subject: subject, body: "body of " + subject}
	ids, err := e.svc.Ingester.Deliver(context.Background(), m.raw(), inbox.Envelope{ClientIP: "127.0.0.1", Helo: "client.test", MailFrom: "x@example.com"},
		[]inbox.Target{{Namespace: ns, Recipients: []string{m.to}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return ids[0]
}

func (e *opsEnv) count(ns tenant.Namespace) int {
	e.t.Helper()
	n, err := e.svc.Searcher.Count(context.Background(), ns.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// share lets organisation other read namespace default ("" stops it).
func (e *opsEnv) share(with string) {
	e.t.Helper()
	if _, err := e.svc.Tenants.ShareNamespaceFor(context.Background(), e.owner, tenant.ShareNamespaceRequest{Name: e.ns.Name, With: with}); err != nil {
		e.t.Fatal(err)
	}
}

// wantProblem is problemtest.WantFirst, with what the test asked in the
// failure.
func wantProblem(t *testing.T, what string, err error, kind problem.Kind, code, field string) {
	t.Helper()
	problemtest.WantFirst(t, fmt.Errorf("%s: %w", what, err), kind, code, field)
}

// Clearing empties the owner's namespace and no other; another organisation
// cannot see it, and one it is shared with may not clear it.
func TestClearInboxOperation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newOpsEnv(t, db)
		ctx := context.Background()
		for _, s := range []string{"first", "second", "third"} {
			e.deliver(e.ns, s)
		}
		e.deliver(e.team, "kept")
		req := inbox.ClearRequest{Namespace: "default"}

		_, err := e.svc.Inbox.ClearInbox(ctx, e.other, req)
		wantProblem(t, "another organisation clears", err, problem.NotFound, "not_found", "")
		e.share(e.other.Org.ID)
		_, err = e.svc.Inbox.ClearInbox(ctx, e.other, req)
		wantProblem(t, "the shared reader clears", err, problem.Forbidden, "namespace_read_only", "")
		_, err = e.svc.Inbox.ClearInbox(ctx, tenant.Principal{}, req)
		wantProblem(t, "no principal", err, problem.Unauthenticated, "unauthenticated", "")
		_, err = e.svc.Inbox.ClearInbox(ctx, e.owner, inbox.ClearRequest{Namespace: "nosuch"})
		wantProblem(t, "an unknown namespace", err, problem.NotFound, "not_found", "")
		if n := e.count(e.ns); n != 3 {
			t.Fatalf("refused clears left %d emails, want 3", n)
		}

		c, err := e.svc.Inbox.ClearInbox(ctx, e.owner, inbox.ClearRequest{Namespace: "DEFAULT"})
		if err != nil || c.Deleted != 3 || c.Namespace.ID != e.ns.ID {
			t.Fatalf("ClearInbox = %+v, %v; want 3 deleted from default", c, err)
		}
		if n := e.count(e.ns); n != 0 {
			t.Fatalf("%d emails left after the clear", n)
		}
		if n := e.count(e.team); n != 1 {
			t.Fatalf("the clear of default took team's mail: %d left, want 1", n)
		}
		if c, err := e.svc.Inbox.ClearInbox(ctx, e.owner, req); err != nil || c.Deleted != 0 {
			t.Fatalf("clearing an empty inbox = %+v, %v", c, err)
		}
	})
}

// Deleting takes one email of the owner's namespace; another organisation
// cannot see it, one the namespace is shared with may not delete it, and a
// second delete finds nothing.
func TestDeleteEmailOperation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newOpsEnv(t, db)
		ctx := context.Background()
		a, b := e.deliver(e.ns, "first"), e.deliver(e.ns, "second")

		_, err := e.svc.Inbox.DeleteEmail(ctx, e.other, inbox.DeleteRequest{EmailID: a})
		wantProblem(t, "another organisation deletes", err, problem.NotFound, "not_found", "")
		_, err = e.svc.Inbox.DeleteEmail(ctx, e.owner, inbox.DeleteRequest{EmailID: "not-an-id"})
		wantProblem(t, "a malformed id", err, problem.NotFound, "not_found", "")
		e.share(e.other.Org.ID)
		_, err = e.svc.Inbox.DeleteEmail(ctx, e.other, inbox.DeleteRequest{EmailID: a})
		wantProblem(t, "the shared reader deletes", err, problem.Forbidden, "namespace_read_only", "")
		if _, err := e.svc.Searcher.ByID(ctx, a); err != nil {
			t.Fatalf("a refused delete deleted the email: %v", err)
		}

		d, err := e.svc.Inbox.DeleteEmail(ctx, e.owner, inbox.DeleteRequest{EmailID: a})
		if err != nil || d.EmailID != a || d.Namespace.ID != e.ns.ID {
			t.Fatalf("DeleteEmail = %+v, %v", d, err)
		}
		if _, err := e.svc.Searcher.ByID(ctx, a); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the deleted email is still there: %v", err)
		}
		if _, err := e.svc.Searcher.ByID(ctx, b); err != nil {
			t.Fatalf("the other email went too: %v", err)
		}
		_, err = e.svc.Inbox.DeleteEmail(ctx, e.owner, inbox.DeleteRequest{EmailID: a})
		wantProblem(t, "a second delete", err, problem.NotFound, "not_found", "")
		if n := e.count(e.ns); n != 1 {
			t.Fatalf("count after the delete: %d, want 1", n)
		}
	})
}

// A share link lasts what was asked, never past the email; any organisation
// that may read the email may share it, and expires_in out of its range is
// the field at fault.
func TestShareEmailOperation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newOpsEnv(t, db)
		ctx := context.Background()
		id := e.deliver(e.ns, "share me")
		stored, err := e.svc.Searcher.ByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		minute := 60.0
		before := time.Now().Truncate(time.Second)
		sh, err := e.svc.Inbox.ShareEmail(ctx, e.owner, inbox.ShareRequest{EmailID: id, ExpiresIn: &minute})
		if err != nil || sh.EmailID != id || sh.EncodedEmailID == "" ||
			sh.URL != e.svc.Inbox.PublicURL()+"/api/share/email/"+sh.EncodedEmailID ||
			sh.ExpiresAt.Before(before.Add(time.Minute)) || sh.ExpiresAt.After(time.Now().Add(time.Minute)) {
			t.Fatalf("ShareEmail for a minute = %+v, %v", sh, err)
		}
		// The default, seven days, is cut to the email's own expiry (a day).
		sh, err = e.svc.Inbox.ShareEmail(ctx, e.owner, inbox.ShareRequest{EmailID: id})
		if want := time.UnixMilli(stored.ExpiresMs).Truncate(time.Second); err != nil || !sh.ExpiresAt.Equal(want) {
			t.Fatalf("ShareEmail by default = %+v, %v; want it to end with the email, %s", sh, err, want)
		}
		for _, v := range []float64{0, 1.5, -3, inbox.MaxShareTTL.Seconds() + 1} {
			_, err := e.svc.Inbox.ShareEmail(ctx, e.owner, inbox.ShareRequest{EmailID: id, ExpiresIn: &v})
			wantProblem(t, fmt.Sprintf("expires_in %v", v), err, problem.Invalid, "invalid_parameter", "expires_in")
		}
		_, err = e.svc.Inbox.ShareEmail(ctx, e.other, inbox.ShareRequest{EmailID: id})
		wantProblem(t, "another organisation shares", err, problem.NotFound, "not_found", "")
		e.share(e.other.Org.ID)
		if sh, err := e.svc.Inbox.ShareEmail(ctx, e.other, inbox.ShareRequest{EmailID: id}); err != nil || sh.EmailID != id {
			t.Fatalf("the shared reader shares = %+v, %v", sh, err)
		}
	})
}
