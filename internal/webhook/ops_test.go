package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/problem/problemtest"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/webhook"
)

// publicHook is a URL on a public address: checked without a DNS lookup,
// and never fetched (the job queue does not run in these tests).
const publicHook = "http://93.184.216.34/hook"

// newOpsService is the service as catchbox serve builds it in server mode
// (private targets refused), at most two endpoints an organisation, without
// HTTP; and the principals of organisation default (owner) and other.
func newOpsService(t *testing.T, db *store.DB) (svc *server.Service, owner, other tenant.Principal) {
	t.Helper()
	cfg := testConfig(t)
	cfg.PublicURL = "https://catchbox.example"
	cfg.WebhookMaxEndpoints = 2
	svc = servertest.New(t, db, cfg)
	org, err := svc.Tenants.OrgByName(context.Background(), tenant.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := servertest.Org(t, svc, "other")
	return svc, tenant.Principal{Org: org, KeyID: "k1", Orgs: []tenant.Org{org}},
		tenant.Principal{Org: o, KeyID: "k2", Orgs: []tenant.Org{o}}
}

// wantProblem is problemtest.Want, or WantFields when fields are given, with
// what the test asked in the failure.
func wantProblem(t *testing.T, what string, err error, kind problem.Kind, code string, fields ...string) {
	t.Helper()
	err = fmt.Errorf("%s: %w", what, err)
	if len(fields) == 0 {
		problemtest.Want(t, err, kind, code)
		return
	}
	if kind != problem.Invalid {
		t.Fatalf("%s: fields are named by Invalid problems only", what)
	}
	problemtest.WantFields(t, err, code, fields...)
}

func ptr[T any](v T) *T { return &v }

// Creating an endpoint checks every field at once and returns its secret;
// an organisation has at most its limit of endpoints.
func TestCreateEndpointOperation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc, owner, other := newOpsService(t, db)
		ctx := context.Background()
		w := svc.Webhooks
		e, err := w.CreateEndpoint(ctx, owner, webhook.Input{URL: ptr(" " + publicHook + " "),
			EventTypes: &[]string{"email.received", "email.received"}, Namespace: ptr("DEFAULT"), Description: ptr("ci")})
		if err != nil || e.ID == "" || e.OrgID != owner.Org.ID || e.URL != publicHook || !strings.HasPrefix(e.Secret, webhook.SecretPrefix) ||
			len(e.EventTypes) != 1 || e.EventTypes[0] != "email.received" || e.Namespace != "default" || e.Description != "ci" || !e.Enabled {
			t.Fatalf("CreateEndpoint = %+v, %v", e, err)
		}
		if got, err := w.Get(ctx, owner.Org.ID, e.ID); err != nil || got.URL != publicHook {
			t.Fatalf("the created endpoint reads back as %+v, %v", got, err)
		}

		for _, c := range []struct {
			what   string
			p      tenant.Principal
			in     webhook.Input
			code   string
			fields []string
		}{
			{"no url", owner, webhook.Input{}, "invalid_parameter", []string{"url"}},
			{"every field wrong", owner, webhook.Input{URL: ptr("ftp://x/"), EventTypes: &[]string{"email.sent"},
				Namespace: ptr("nosuch"), Description: ptr(strings.Repeat("d", webhook.MaxDescriptionBytes+1))},
				"invalid_parameter", []string{"url", "event_types", "namespace", "description"}},
			{"no event type", owner, webhook.Input{URL: ptr(publicHook), EventTypes: &[]string{}}, "invalid_parameter", []string{"event_types"}},
			{"a private address", owner, webhook.Input{URL: ptr("http://127.0.0.1:9/hook")}, "webhook_url_private", []string{"url"}},
			{"another organisation's namespace", other, webhook.Input{URL: ptr(publicHook), Namespace: ptr("default")},
				"invalid_parameter", []string{"namespace"}},
		} {
			_, err := w.CreateEndpoint(ctx, c.p, c.in)
			wantProblem(t, c.what, err, problem.Invalid, c.code, c.fields...)
		}
		_, err = w.CreateEndpoint(ctx, tenant.Principal{}, webhook.Input{URL: ptr(publicHook)})
		wantProblem(t, "no principal", err, problem.Unauthenticated, "unauthenticated")

		if _, err := w.CreateEndpoint(ctx, owner, webhook.Input{URL: ptr(publicHook)}); err != nil {
			t.Fatalf("the second endpoint: %v", err)
		}
		_, err = w.CreateEndpoint(ctx, owner, webhook.Input{URL: ptr(publicHook)})
		wantProblem(t, "a third endpoint", err, problem.Forbidden, "webhook_limit_reached")
		if eps, err := w.List(ctx, owner.Org.ID); err != nil || len(eps) != 2 {
			t.Fatalf("endpoints after the refusals: %d, %v; want 2", len(eps), err)
		}
		if _, err := w.CreateEndpoint(ctx, other, webhook.Input{URL: ptr(publicHook)}); err != nil {
			t.Fatalf("the limit is the organisation's, not the service's: %v", err)
		}
	})
}

// Changing, rotating and deleting an endpoint are its organisation's alone;
// a refused change leaves it as it was.
func TestChangeEndpointOperations(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc, owner, other := newOpsService(t, db)
		ctx := context.Background()
		w := svc.Webhooks
		e, err := w.CreateEndpoint(ctx, owner, webhook.Input{URL: ptr(publicHook)})
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range map[string]tenant.Principal{"another organisation": other, "no principal": {}} {
			_, err := w.UpdateEndpoint(ctx, p, webhook.UpdateRequest{ID: e.ID, Input: webhook.Input{Enabled: ptr(false)}})
			wantProblem(t, name+" updates", err, problem.NotFound, "not_found")
			_, err = w.RotateEndpointSecret(ctx, p, webhook.EndpointRequest{ID: e.ID})
			wantProblem(t, name+" rotates", err, problem.NotFound, "not_found")
			err = w.DeleteEndpoint(ctx, p, webhook.EndpointRequest{ID: e.ID})
			wantProblem(t, name+" deletes", err, problem.NotFound, "not_found")
		}
		_, err = w.UpdateEndpoint(ctx, owner, webhook.UpdateRequest{ID: e.ID, Input: webhook.Input{URL: ptr("http://10.0.0.1/"), Enabled: ptr(false)}})
		wantProblem(t, "a private address", err, problem.Invalid, "webhook_url_private", "url")
		if got, err := w.Get(ctx, owner.Org.ID, e.ID); err != nil || !got.Enabled || got.URL != publicHook || !got.PreviousSecretUntil.IsZero() {
			t.Fatalf("refused changes changed the endpoint: %+v, %v", got, err)
		}

		u, err := w.UpdateEndpoint(ctx, owner, webhook.UpdateRequest{ID: e.ID,
			Input: webhook.Input{Enabled: ptr(false), Description: ptr("paused"), EventTypes: &[]string{"sms.received"}}})
		if err != nil || u.Enabled || u.Description != "paused" || u.URL != publicHook || len(u.EventTypes) != 1 || u.EventTypes[0] != "sms.received" || u.Secret != "" {
			t.Fatalf("UpdateEndpoint = %+v, %v", u, err)
		}
		r, err := w.RotateEndpointSecret(ctx, owner, webhook.EndpointRequest{ID: e.ID})
		if err != nil || !strings.HasPrefix(r.Secret, webhook.SecretPrefix) || r.Secret == e.Secret || r.PreviousSecretUntil.IsZero() {
			t.Fatalf("RotateEndpointSecret = %+v, %v", r, err)
		}
		if err := w.DeleteEndpoint(ctx, owner, webhook.EndpointRequest{ID: e.ID}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Get(ctx, "", e.ID); !errors.Is(err, webhook.ErrNotFound) {
			t.Fatalf("the deleted endpoint is still there: %v", err)
		}
		err = w.DeleteEndpoint(ctx, owner, webhook.EndpointRequest{ID: e.ID})
		wantProblem(t, "a second delete", err, problem.NotFound, "not_found")
		_, err = w.UpdateEndpoint(ctx, owner, webhook.UpdateRequest{ID: e.ID, Input: webhook.Input{Enabled: ptr(true)}})
		wantProblem(t, "an update of a deleted endpoint", err, problem.NotFound, "not_found")
	})
}
