package tenant_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/problem/problemtest"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// opsEnv is the service as catchbox serve builds it, with the principals of
// two organisations: owner (the default one) and other.
type opsEnv struct {
	svc          *tenant.Service
	owner, other tenant.Principal
}

func newOpsEnv(t *testing.T, db *store.DB) opsEnv {
	t.Helper()
	built := servertest.New(t, db, servertest.Config(t))
	org, err := built.Tenants.OrgByName(context.Background(), tenant.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := servertest.Org(t, built, "other")
	return opsEnv{svc: built.Tenants,
		owner: tenant.Principal{Org: org, KeyID: "k1", Orgs: []tenant.Org{org}},
		other: tenant.Principal{Org: other, KeyID: "k2", Orgs: []tenant.Org{other}}}
}

// wantProblem is problemtest.WantFirst, with what the test asked in the
// failure.
func wantProblem(t *testing.T, what string, err error, kind problem.Kind, code, field string) {
	t.Helper()
	problemtest.WantFirst(t, fmt.Errorf("%s: %w", what, err), kind, code, field)
}

// Creating a key returns it once, working; revoking it is for its own
// organisation only, and a second revoke is a conflict.
func TestKeyOperations(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newOpsEnv(t, db)
		ctx := context.Background()
		k, err := e.svc.CreateKeyFor(ctx, e.owner, tenant.CreateKeyRequest{Label: "  ci runner "})
		if err != nil || !strings.HasPrefix(k.Key, tenant.KeyPrefix) || k.ID == "" || k.Label != "ci runner" || k.Org.ID != e.owner.Org.ID {
			t.Fatalf("CreateKeyFor = %+v, %v", k, err)
		}
		if o, err := e.svc.Authenticate(ctx, k.Key); err != nil || o.ID != e.owner.Org.ID {
			t.Fatalf("the new key authenticates as %+v, %v", o, err)
		}
		if o, err := e.svc.KeyOrg(ctx, k.ID); err != nil || o.ID != e.owner.Org.ID {
			t.Fatalf("KeyOrg = %+v, %v", o, err)
		}
		_, err = e.svc.CreateKeyFor(ctx, e.owner, tenant.CreateKeyRequest{Label: strings.Repeat("x", tenant.MaxKeyLabel+1)})
		wantProblem(t, "a label too long", err, problem.Invalid, "invalid_parameter", "label")
		_, err = e.svc.CreateKeyFor(ctx, tenant.Principal{}, tenant.CreateKeyRequest{})
		wantProblem(t, "no principal", err, problem.Unauthenticated, "unauthenticated", "")

		_, err = e.svc.RevokeKeyFor(ctx, e.other, tenant.RevokeKeyRequest{ID: k.ID})
		wantProblem(t, "another organisation's key", err, problem.NotFound, "not_found", "")
		if _, err := e.svc.Authenticate(ctx, k.Key); err != nil {
			t.Fatalf("the key stopped working after another organisation's revoke: %v", err)
		}
		revoked, err := e.svc.RevokeKeyFor(ctx, e.owner, tenant.RevokeKeyRequest{ID: k.ID})
		if err != nil || revoked.ID != k.ID || revoked.RevokedAt == nil || revoked.Label != "ci runner" {
			t.Fatalf("RevokeKeyFor = %+v, %v", revoked, err)
		}
		if _, err := e.svc.Authenticate(ctx, k.Key); !errors.Is(err, tenant.ErrNotFound) {
			t.Fatalf("a revoked key authenticates: %v", err)
		}
		_, err = e.svc.RevokeKeyFor(ctx, e.owner, tenant.RevokeKeyRequest{ID: k.ID})
		wantProblem(t, "a second revoke", err, problem.Conflict, "already_revoked", "")
		_, err = e.svc.RevokeKeyFor(ctx, e.owner, tenant.RevokeKeyRequest{ID: tenant.NewID()})
		wantProblem(t, "an unknown key", err, problem.NotFound, "not_found", "")
		if _, err := e.svc.KeyOrg(ctx, tenant.NewID()); !errors.Is(err, tenant.ErrNotFound) {
			t.Fatalf("KeyOrg of an unknown key: %v", err)
		}
	})
}

// Creating a namespace takes a free, valid name with settings in bounds;
// saving creates or updates the organisation's own; updating changes only
// an existing own one.
func TestNamespaceOperations(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newOpsEnv(t, db)
		ctx := context.Background()
		hour, ten, zero := 3600, 10, 0
		n, err := e.svc.CreateNamespaceFor(ctx, e.owner, tenant.NamespaceRequest{Name: "Signup", Settings: tenant.Settings{RetentionTime: &hour}})
		if err != nil || n.Name != "signup" || n.RetentionTime != hour || n.OrgID != e.owner.Org.ID || !n.CaptureRawEmail {
			t.Fatalf("CreateNamespaceFor = %+v, %v", n, err)
		}
		for _, c := range []struct {
			what string
			p    tenant.Principal
			req  tenant.NamespaceRequest
			kind problem.Kind
			code string
			fld  string
		}{
			{"its own name again", e.owner, tenant.NamespaceRequest{Name: "signup"}, problem.Conflict, "namespace_taken", ""},
			{"another's name", e.other, tenant.NamespaceRequest{Name: "SIGNUP"}, problem.Conflict, "namespace_taken", ""},
			{"a name that is no DNS label", e.owner, tenant.NamespaceRequest{Name: "-bad-"}, problem.Invalid, "invalid_namespace", "namespace"},
			{"a path word", e.owner, tenant.NamespaceRequest{Name: "outbound"}, problem.Invalid, "namespace_reserved", "namespace"},
			{"a retention too short", e.owner, tenant.NamespaceRequest{Name: "fine", Settings: tenant.Settings{RetentionTime: &ten}},
				problem.Invalid, "invalid_parameter", "retention_time"},
			{"a quota of zero", e.owner, tenant.NamespaceRequest{Name: "fine", Settings: tenant.Settings{QuotaLimit: &zero}},
				problem.Invalid, "invalid_parameter", "quota_limit"},
			{"both bad: the retention is named", e.owner, tenant.NamespaceRequest{Name: "-bad-", Settings: tenant.Settings{RetentionTime: &ten, QuotaLimit: &zero}},
				problem.Invalid, "invalid_parameter", "retention_time"},
			{"no principal", tenant.Principal{}, tenant.NamespaceRequest{Name: "fine"}, problem.Unauthenticated, "unauthenticated", ""},
		} {
			_, err := e.svc.CreateNamespaceFor(ctx, c.p, c.req)
			wantProblem(t, "create "+c.what, err, c.kind, c.code, c.fld)
		}
		if _, err := e.svc.NamespaceByName(ctx, "fine"); !errors.Is(err, tenant.ErrNotFound) {
			t.Fatalf("a refused create made the namespace: %v", err)
		}

		// Save: an update of the owner's namespace, a creation of a free name,
		// a conflict on another's.
		five := 5
		saved, err := e.svc.SaveNamespaceFor(ctx, e.owner, tenant.NamespaceRequest{Name: "signup", Settings: tenant.Settings{QuotaLimit: &five}})
		if err != nil || saved.ID != n.ID || saved.QuotaLimit == nil || *saved.QuotaLimit != 5 || saved.RetentionTime != hour {
			t.Fatalf("SaveNamespaceFor on its own = %+v, %v", saved, err)
		}
		fresh, err := e.svc.SaveNamespaceFor(ctx, e.other, tenant.NamespaceRequest{Name: "fresh"})
		if err != nil || fresh.OrgID != e.other.Org.ID || fresh.RetentionTime != tenant.DefaultRetention {
			t.Fatalf("SaveNamespaceFor of a free name = %+v, %v", fresh, err)
		}
		_, err = e.svc.SaveNamespaceFor(ctx, e.other, tenant.NamespaceRequest{Name: "signup", Settings: tenant.Settings{RetentionTime: &hour}})
		wantProblem(t, "save another's", err, problem.Conflict, "namespace_taken", "")
		_, err = e.svc.SaveNamespaceFor(ctx, e.owner, tenant.NamespaceRequest{Name: "share"})
		wantProblem(t, "save a path word", err, problem.Invalid, "namespace_reserved", "namespace")
		_, err = e.svc.SaveNamespaceFor(ctx, e.owner, tenant.NamespaceRequest{Name: "signup", Settings: tenant.Settings{RetentionTime: &ten}})
		wantProblem(t, "save a retention too short", err, problem.Invalid, "invalid_parameter", "retention_time")

		// Update: the owner's existing namespace only.
		off := false
		updated, err := e.svc.UpdateNamespaceFor(ctx, e.owner, tenant.NamespaceRequest{Name: "SIGNUP", Settings: tenant.Settings{ClearQuota: true, CaptureRawEmail: &off}})
		if err != nil || updated.ID != n.ID || updated.QuotaLimit != nil || updated.CaptureRawEmail {
			t.Fatalf("UpdateNamespaceFor = %+v, %v", updated, err)
		}
		_, err = e.svc.UpdateNamespaceFor(ctx, e.owner, tenant.NamespaceRequest{Name: "nosuch"})
		wantProblem(t, "update a namespace that does not exist", err, problem.NotFound, "not_found", "")
		if _, err := e.svc.NamespaceByName(ctx, "nosuch"); !errors.Is(err, tenant.ErrNotFound) {
			t.Fatalf("an update made the namespace: %v", err)
		}
		_, err = e.svc.UpdateNamespaceFor(ctx, e.other, tenant.NamespaceRequest{Name: "signup", Settings: tenant.Settings{RetentionTime: &hour}})
		wantProblem(t, "update another's", err, problem.NotFound, "not_found", "")
		_, err = e.svc.UpdateNamespaceFor(ctx, e.owner, tenant.NamespaceRequest{Name: "signup", Settings: tenant.Settings{QuotaLimit: &zero}})
		wantProblem(t, "update with a quota of zero", err, problem.Invalid, "invalid_parameter", "quota_limit")
		if got, _ := e.svc.NamespaceByName(ctx, "signup"); got.RetentionTime != hour || got.QuotaLimit != nil || got.CaptureRawEmail {
			t.Fatalf("refused changes changed the namespace: %+v", got)
		}
	})
}

// Sharing lets the other organisation read the namespace and nothing more:
// only the owner shares, never with itself, and only with an organisation
// that exists.
func TestShareNamespaceOperation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newOpsEnv(t, db)
		ctx := context.Background()
		if _, err := e.svc.CreateNamespaceFor(ctx, e.owner, tenant.NamespaceRequest{Name: "team"}); err != nil {
			t.Fatal(err)
		}
		_, err := e.svc.ShareNamespaceFor(ctx, e.other, tenant.ShareNamespaceRequest{Name: "team", With: e.other.Org.ID})
		wantProblem(t, "share another's namespace", err, problem.NotFound, "not_found", "")
		_, err = e.svc.ShareNamespaceFor(ctx, e.owner, tenant.ShareNamespaceRequest{Name: "team", With: e.owner.Org.ID})
		wantProblem(t, "share with the owner", err, problem.Invalid, "invalid_parameter", "with")
		_, err = e.svc.ShareNamespaceFor(ctx, e.owner, tenant.ShareNamespaceRequest{Name: "team", With: tenant.NewID()})
		wantProblem(t, "share with nobody", err, problem.NotFound, "not_found", "")
		if _, err := e.svc.VisibleNamespace(ctx, e.other.Org.ID, "team"); !errors.Is(err, tenant.ErrNotFound) {
			t.Fatalf("a refused share shared: %v", err)
		}

		n, err := e.svc.ShareNamespaceFor(ctx, e.owner, tenant.ShareNamespaceRequest{Name: "Team", With: e.other.Org.ID})
		if err != nil || n.SharedOrgID != e.other.Org.ID {
			t.Fatalf("ShareNamespaceFor = %+v, %v", n, err)
		}
		if _, err := e.svc.VisibleNamespace(ctx, e.other.Org.ID, "team"); err != nil {
			t.Fatalf("the reader cannot see the shared namespace: %v", err)
		}
		// The reader may read it, not change it nor share it on.
		hour := 3600
		_, err = e.svc.UpdateNamespaceFor(ctx, e.other, tenant.NamespaceRequest{Name: "team", Settings: tenant.Settings{RetentionTime: &hour}})
		wantProblem(t, "the reader updates", err, problem.Forbidden, "namespace_read_only", "")
		_, err = e.svc.ShareNamespaceFor(ctx, e.other, tenant.ShareNamespaceRequest{Name: "team"})
		wantProblem(t, "the reader stops the share", err, problem.Forbidden, "namespace_read_only", "")
		_, err = e.svc.SaveNamespaceFor(ctx, e.other, tenant.NamespaceRequest{Name: "team"})
		wantProblem(t, "the reader saves", err, problem.Conflict, "namespace_taken", "")

		if n, err := e.svc.ShareNamespaceFor(ctx, e.owner, tenant.ShareNamespaceRequest{Name: "team"}); err != nil || n.SharedOrgID != "" {
			t.Fatalf("stop sharing = %+v, %v", n, err)
		}
		if _, err := e.svc.VisibleNamespace(ctx, e.other.Org.ID, "team"); !errors.Is(err, tenant.ErrNotFound) {
			t.Fatalf("the reader still sees the namespace after the share stopped: %v", err)
		}
	})
}
