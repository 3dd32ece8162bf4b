package deliverability_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/deliverability"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/problem/problemtest"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// principal is an API key's principal of the organisation named.
func principal(t *testing.T, tenants *tenant.Service, name string) tenant.Principal {
	t.Helper()
	org, err := tenants.OrgByName(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return tenant.Principal{Org: org, KeyID: "key-of-" + name, Orgs: []tenant.Org{org}}
}

// TestReportOperations calls RequestReport and Report as the API and the
// dashboard do, without HTTP: a report is not found before it is requested,
// started once however often it is requested while it runs, completed by its
// job, and started again when refreshed; another organisation's principal,
// an unknown id, a malformed one and no principal at all are all refused as
// an email not found, until the namespace is shared with that organisation.
func TestReportOperations(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db, false)
		ctx := context.Background()
		d := e.svc.Deliverability
		owner := principal(t, e.svc.Tenants, "default")
		otherOrg, _ := servertest.Org(t, e.svc, "globex")
		other := tenant.Principal{Org: otherOrg, KeyID: "key-of-globex", Orgs: []tenant.Org{otherOrg}}
		id := e.deliver("default", e.signed(orderMail))
		req := deliverability.ReportRequest{EmailID: id}

		_, err := d.Report(ctx, owner, req)
		pe := problemtest.Want(t, err, problem.NotFound, "not_found")
		if pe.Message == "email not found" {
			t.Errorf("a report never requested is reported as an email not found")
		}

		before := time.Now()
		st, err := d.RequestReport(ctx, owner, req)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Started || st.EmailID != id || st.Status != deliverability.StatusPending ||
			st.AnalysisVersion != deliverability.AnalysisVersion || st.Report != nil || st.Errors != nil {
			t.Fatalf("first request: %+v", st)
		}
		// The email expires with its namespace's retention, sooner than
		// ReportTTL: the report expires with it.
		if st.ExpiresAt.Before(before) || st.ExpiresAt.After(before.Add(deliverability.ReportTTL)) {
			t.Errorf("expires at %v", st.ExpiresAt)
		}
		again, err := d.RequestReport(ctx, owner, req)
		if err != nil || again.Started || again.Status != deliverability.StatusPending || again.EmailID != id {
			t.Fatalf("request while pending: %+v, %v", again, err)
		}
		if got, err := d.Report(ctx, owner, req); err != nil || got.Started || got.Status != deliverability.StatusPending {
			t.Fatalf("report while pending: %+v, %v", got, err)
		}

		for name, c := range map[string]struct {
			p  tenant.Principal
			id string
		}{
			"another organisation": {other, id},
			"no principal":         {tenant.Principal{}, id},
			"an unknown email":     {owner, tenant.NewID()},
			"a malformed id":       {owner, "not-an-id"},
		} {
			_, err := d.RequestReport(ctx, c.p, deliverability.ReportRequest{EmailID: c.id})
			if pe := problemtest.Want(t, err, problem.NotFound, "not_found"); pe.Message != "email not found" {
				t.Errorf("%s: request refused with %q", name, pe.Message)
			}
			_, err = d.Report(ctx, c.p, deliverability.ReportRequest{EmailID: c.id})
			if pe := problemtest.Want(t, err, problem.NotFound, "not_found"); pe.Message != "email not found" {
				t.Errorf("%s: report refused with %q", name, pe.Message)
			}
		}

		e.startJobs()
		done := testkit.AwaitWithin(t, 2*time.Minute, "the report of "+id+" to end", func() (deliverability.ReportState, bool) {
			st, err := d.Report(ctx, owner, req)
			if err != nil {
				t.Fatal(err)
			}
			return st, st.Status == deliverability.StatusCompleted || st.Status == deliverability.StatusFailed
		})
		if done.Status != deliverability.StatusCompleted || done.Errors != nil || done.Started {
			t.Fatalf("report %+v", done)
		}
		var rep deliverability.Report
		if err := json.Unmarshal(done.Report, &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Source.EmailID != id || rep.Source.Namespace != "default" || rep.SPF == nil || rep.SPF.Result != "pass" || rep.OverallStatus == "" {
			t.Errorf("report %+v", rep)
		}

		// A namespace shared with the other organisation lets it read and
		// refresh the report.
		if _, err := e.svc.Tenants.ShareNamespace(ctx, "default", otherOrg.ID); err != nil {
			t.Fatal(err)
		}
		if got, err := d.Report(ctx, other, req); err != nil || got.Status != deliverability.StatusCompleted {
			t.Fatalf("report read through the share: %+v, %v", got, err)
		}
		refreshed, err := d.RequestReport(ctx, other, req)
		if err != nil || !refreshed.Started || refreshed.Status != deliverability.StatusPending {
			t.Fatalf("refresh of a completed report: %+v, %v", refreshed, err)
		}
		testkit.AwaitWithin(t, 2*time.Minute, "the refreshed report of "+id+" to end", func() (string, bool) {
			st, err := d.Report(ctx, owner, req)
			if err != nil {
				t.Fatal(err)
			}
			return st.Status, st.Status == deliverability.StatusCompleted
		})
	})
}

// TestRequestReportRawNotCaptured: an email whose raw source was not kept
// has no report, a Conflict, and nothing is recorded.
func TestRequestReportRawNotCaptured(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db, false)
		ctx := context.Background()
		owner := principal(t, e.svc.Tenants, "default")
		off := false
		if _, err := e.svc.Tenants.UpsertNamespace(ctx, owner.Org.ID, "noraw", tenant.Settings{CaptureRawEmail: &off}); err != nil {
			t.Fatal(err)
		}
		req := deliverability.ReportRequest{EmailID: e.deliver("noraw", e.signed(orderMail))}
		_, err := e.svc.Deliverability.RequestReport(ctx, owner, req)
		problemtest.Want(t, err, problem.Conflict, "raw_not_captured")
		_, err = e.svc.Deliverability.Report(ctx, owner, req)
		problemtest.Want(t, err, problem.NotFound, "not_found")
	})
}
