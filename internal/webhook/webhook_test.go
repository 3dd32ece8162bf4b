package webhook_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/egress/egresstest"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testkit"
	"github.com/catchbox/catchbox/internal/totp"
	"github.com/catchbox/catchbox/internal/webhook"
)

// TestDeliveredSignedInOrderAfterFailures: email.received events for stored
// mail reach the endpoint signed with its secret; while the endpoint answers
// 500 they are retried, and they then arrive in the order the mail was
// stored, each accepted once.
func TestDeliveredSignedInOrderAfterFailures(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, testConfig(t))
		id, secret := e.createEndpoint(map[string]any{"event_types": []string{"email.received"}})
		if !strings.HasPrefix(secret, "whsec_") {
			t.Fatalf("secret %q", secret)
		}
		e.recv.failNext(4)
		var emails []string
		for i := range 5 {
			emails = append(emails, e.deliver(fmt.Sprintf("message %d", i)))
		}
		e.start()
		e.recv.await(t, "five accepted deliveries", 5)
		got := e.recv.accepted()
		if len(got) != 5 {
			t.Fatalf("accepted %d deliveries, want 5", len(got))
		}
		seen := map[string]bool{}
		for i, h := range got {
			if seen[h.ID] {
				t.Errorf("webhook-id %s accepted twice", h.ID)
			}
			seen[h.ID] = true
			if len(h.Verified) != 1 || h.Verified[0] != secret {
				t.Errorf("delivery %d: signature verified with %v", i, h.Verified)
			}
			data := h.Body["data"].(map[string]any)
			if h.Type != "email.received" || data["id"] != emails[i] || data["namespace"] != "default" ||
				data["subject"] != fmt.Sprintf("message %d", i) {
				t.Errorf("delivery %d: %v, want email %s", i, h.Body, emails[i])
			}
		}
		reqs := e.recv.requests()
		if len(reqs) != 9 {
			t.Errorf("receiver saw %d requests, want 9 (4 answered 500)", len(reqs))
		}
		for _, h := range reqs[:4] {
			if h.ID != got[0].ID {
				t.Errorf("a later event was sent while the first was failing: %s", h.ID)
			}
		}

		// The receiver answers before the attempts are recorded.
		var st int
		var out map[string]any
		testkit.Await(t, "the deliveries recorded", func() (map[string]any, bool) {
			st, out = e.call("GET", "/api/webhooks/"+id+"/deliveries?limit=100&state=delivered", nil)
			return out, st != http.StatusOK || len(out["data"].([]any)) == 5
		})
		if st != http.StatusOK {
			t.Fatalf("deliveries: %d %v", st, out)
		}
		ds := out["data"].([]any)
		if len(ds) != 5 {
			t.Fatalf("%d deliveries in the log", len(ds))
		}
		first := ds[4].(map[string]any) // newest first
		atts := first["attempts"].([]any)
		if first["state"] != "delivered" || len(atts) != 5 || first["attempt_count"] != float64(5) {
			t.Errorf("first delivery: %v", first)
		}
		a0 := atts[0].(map[string]any)
		if a0["status_code"] != float64(500) || a0["response"] != "receiver failing on purpose" || a0["latency_ms"] == nil {
			t.Errorf("first attempt: %v", a0)
		}
		if a4 := atts[4].(map[string]any); a4["status_code"] != float64(204) {
			t.Errorf("last attempt: %v", a4)
		}
		// Paging: two by two, newest first.
		var paged []string
		before := ""
		for range 3 {
			_, out := e.call("GET", "/api/webhooks/"+id+"/deliveries?limit=2&before="+before, nil)
			for _, d := range out["data"].([]any) {
				paged = append(paged, d.(map[string]any)["id"].(string))
			}
			before = paged[len(paged)-1]
		}
		if len(paged) != 5 || paged[0] != got[4].ID || paged[4] != got[0].ID {
			t.Errorf("paged %v, want the five newest first", paged)
		}
	})
}

// TestOtherEvents: sms.received and the test event reach an endpoint
// subscribed to them; an endpoint filtered to another namespace gets no
// email.received; a manual redelivery sends the same webhook-id again.
func TestOtherEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, testConfig(t))
		ctx := context.Background()
		if st, out := e.call("POST", "/api/namespace/elsewhere/settings", map[string]any{}); st != http.StatusCreated {
			t.Fatalf("namespace: %d %v", st, out)
		}
		id, _ := e.createEndpoint(nil)
		e.createEndpoint(map[string]any{"namespace": "elsewhere", "event_types": []string{"email.received"}})
		e.start()
		org, _ := e.svc.Tenants.OrgByName(ctx, "default")
		num, err := e.svc.SMS.Service.AddNumber(ctx, org.ID, sms.NumberSpec{Phone: "+15550001111"})
		if err != nil {
			t.Fatal(err)
		}
		m, _, err := e.svc.SMS.Service.Receive(ctx, num, sms.Inbound{From: "+15550009999", Body: "Your code is 123456"})
		if err != nil {
			t.Fatal(err)
		}
		e.deliver("only for the first endpoint")
		st, out := e.call("POST", "/api/webhooks/"+id+"/test", nil)
		if st != http.StatusAccepted {
			t.Fatalf("test event: %d %v", st, out)
		}
		testID := out["data"].(map[string]any)["id"].(string)
		e.recv.await(t, "three deliveries", 3)
		got := e.recv.accepted()
		if len(got) != 3 {
			t.Fatalf("%d deliveries: %v", len(got), got)
		}
		if got[0].Type != "sms.received" || got[0].Body["data"].(map[string]any)["id"] != m.ID {
			t.Errorf("first: %v", got[0].Body)
		}
		if got[1].Type != "email.received" || got[2].Type != "webhook.test" || got[2].ID != testID {
			t.Errorf("then %s, %s", got[1].Type, got[2].Type)
		}
		st, out = e.call("POST", "/api/webhooks/"+id+"/deliveries/"+testID+"/redeliver", nil)
		if st != http.StatusAccepted {
			t.Fatalf("redeliver: %d %v", st, out)
		}
		e.recv.await(t, "the redelivery", 4)
		if again := e.recv.accepted()[3]; again.ID != testID {
			t.Errorf("redelivered %s, want %s", again.ID, testID)
		}
	})
}

// TestEndpointAPI: validation, limits, isolation between organisations and
// the secret shown only on creation and rotation.
func TestEndpointAPI(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	cfg := testConfig(t)
	cfg.WebhookMaxEndpoints = 2
	e := newEnv(t, db, cfg)
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{}, "url"},
		{map[string]any{"url": "ftp://example.com/"}, "url"},
		{map[string]any{"url": "https://user:pw@example.com/"}, "url"},
		{map[string]any{"url": "https://example.com/" + strings.Repeat("a", 2048)}, "url"},
		{map[string]any{"url": "https://example.com/", "event_types": []string{"email.sent"}}, "event_types"},
		{map[string]any{"url": "https://example.com/", "event_types": []string{}}, "event_types"},
		{map[string]any{"url": "https://example.com/", "namespace": "nope"}, "namespace"},
		{map[string]any{"url": "https://example.com/", "description": strings.Repeat("d", 501)}, "description"},
		{map[string]any{"url": 3}, "url"},
	} {
		st, out := e.call("POST", "/api/webhooks", c.body)
		errs, _ := out["errors"].([]any)
		if st != http.StatusBadRequest || len(errs) == 0 || errs[0].(map[string]any)["field"] != c.field {
			t.Errorf("%v: %d %v, want 400 naming %s", c.body, st, out, c.field)
		}
	}
	id, _ := e.createEndpoint(nil)
	e.createEndpoint(nil)
	if st, out := e.call("POST", "/api/webhooks", map[string]any{"url": "https://example.com/"}); st != http.StatusForbidden || out["code"] != "webhook_limit_reached" {
		t.Errorf("third endpoint: %d %v", st, out)
	}
	st, out := e.call("GET", "/api/webhooks/"+id, nil)
	d := out["data"].(map[string]any)
	if st != http.StatusOK || d["secret"] != nil || d["enabled"] != true || len(d["event_types"].([]any)) != 6 {
		t.Errorf("get: %d %v", st, out)
	}
	st, out = e.call("PATCH", "/api/webhooks/"+id, map[string]any{"enabled": false, "event_types": []string{"sms.received"}})
	d = out["data"].(map[string]any)
	if st != http.StatusOK || d["enabled"] != false || len(d["event_types"].([]any)) != 1 || d["url"] == nil {
		t.Errorf("patch: %d %v", st, out)
	}
	if st, out := e.call("POST", "/api/webhooks/"+id+"/test", nil); st != http.StatusConflict {
		t.Errorf("test of a disabled endpoint: %d %v", st, out)
	}

	org, err := e.svc.Tenants.CreateOrg(context.Background(), "other", 100, true)
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, err := e.svc.Tenants.CreateKey(context.Background(), org.ID, "", "")
	if err != nil {
		t.Fatal(err)
	}
	mine := e.key
	e.key = otherKey
	for _, p := range []string{"GET /api/webhooks/" + id, "PATCH /api/webhooks/" + id, "DELETE /api/webhooks/" + id,
		"POST /api/webhooks/" + id + "/rotate-secret", "GET /api/webhooks/" + id + "/deliveries", "POST /api/webhooks/" + id + "/test"} {
		m, path, _ := strings.Cut(p, " ")
		if st, _ := e.call(m, path, map[string]any{}); st != http.StatusNotFound {
			t.Errorf("another organisation's %s: %d", p, st)
		}
	}
	if _, out := e.call("GET", "/api/webhooks", nil); len(out["data"].([]any)) != 0 {
		t.Errorf("another organisation lists %v", out)
	}
	e.key = mine
	if st, _ := e.call("DELETE", "/api/webhooks/"+id, nil); st != http.StatusNoContent {
		t.Errorf("delete: %d", st)
	}
	if st, _ := e.call("GET", "/api/webhooks/"+id, nil); st != http.StatusNotFound {
		t.Errorf("get after delete: %d", st)
	}
}

// TestSecretRotation: after a rotation each message carries two signatures,
// one per secret, until the old secret's 24 hours are over.
func TestSecretRotation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, testConfig(t))
		var offset atomic.Int64
		e.svc.Webhooks.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		id, old := e.createEndpoint(nil)
		e.start()
		st, out := e.call("POST", "/api/webhooks/"+id+"/rotate-secret", nil)
		d := out["data"].(map[string]any)
		if st != http.StatusOK || d["secret"] == old || d["previous_secret_expires_at"] == nil {
			t.Fatalf("rotate: %d %v", st, out)
		}
		fresh := d["secret"].(string)
		e.recv.addSecret(fresh)
		e.deliver("during the overlap")
		e.recv.await(t, "a delivery", 1)
		if v := e.recv.accepted()[0].Verified; len(v) != 2 || v[0] != old || v[1] != fresh {
			t.Errorf("during the overlap verified with %v, want both secrets", v)
		}
		offset.Store(int64(24*time.Hour + time.Minute))
		e.deliver("after the overlap")
		e.recv.await(t, "a second delivery", 2)
		if v := e.recv.accepted()[1].Verified; len(v) != 1 || v[0] != fresh {
			t.Errorf("after the overlap verified with %v, want the new secret only", v)
		}
	})
}

// TestPrivateTargets: in server mode, every spelling of a non-public target
// (egresstest.Forms) is refused when an endpoint is created or changed
// (400 webhook_url_private), and an endpoint that got past that check (the
// admin command adds any URL; a name may resolve elsewhere later) is refused
// at every connection: its attempt records the refusal and nothing is reached.
// Server mode here is the mode rule's default for a service with a public URL;
// it runs on both stores, where endpoints and their attempts are kept.
// In local mode the same URLs are accepted and those leading to loopback are
// delivered to.
func TestPrivateTargets(t *testing.T) {
	url := func(e *env, host string) string {
		_, port, _ := net.SplitHostPort(e.recv.srv.Listener.Addr().String())
		return "http://" + host + ":" + port + "/hook"
	}
	t.Run("server mode", func(t *testing.T) {
		storetest.Each(t, func(t *testing.T, db *store.DB) {
			cfg := testConfig(t)
			cfg.PublicURL = "https://catchbox.example"
			cfg.WebhookMaxEndpoints = 200
			if cfg.AllowPrivate() {
				t.Fatal("a service with a public URL allows private targets")
			}
			e := newEnv(t, db, cfg)
			e.svc.Webhooks.SetResolver(egresstest.Resolver(t))
			ctx := context.Background()
			org, _ := e.svc.Tenants.OrgByName(ctx, "default")
			endpoints := map[string]string{} // id → host
			for _, f := range egresstest.Forms {
				st, out := e.call("POST", "/api/webhooks", map[string]any{"url": url(e, f.Host)})
				errs, _ := out["errors"].([]any)
				if st != http.StatusBadRequest || out["code"] != "webhook_url_private" || len(errs) != 1 ||
					errs[0].(map[string]any)["field"] != "url" || !strings.Contains(fmt.Sprint(out["message"]), "CATCHBOX_ALLOW_PRIVATE_TARGETS") {
					t.Errorf("create %s: %d %v, want 400 webhook_url_private on url", f.Host, st, out)
				}
				ep, err := e.svc.Webhooks.Create(ctx, org.ID, webhookSpec(url(e, f.Host)))
				if err != nil {
					t.Fatal(err)
				}
				endpoints[ep.ID] = f.Host
			}
			// A change of URL is checked as a creation is.
			id, _ := e.createEndpoint(map[string]any{"url": "https://public.test/hook"})
			st, out := e.call("PATCH", "/api/webhooks/"+id, map[string]any{"url": url(e, "0x7f.1")})
			if st != http.StatusBadRequest || out["code"] != "webhook_url_private" {
				t.Errorf("change to 0x7f.1: %d %v", st, out)
			}
			e.call("DELETE", "/api/webhooks/"+id, nil)

			e.start()
			e.deliver("to private targets")
			for id, host := range endpoints {
				var msg string
				testkit.Await(t, "the attempt to "+host, func() (map[string]any, bool) {
					_, out := e.call("GET", "/api/webhooks/"+id+"/deliveries", nil)
					ds, _ := out["data"].([]any)
					if len(ds) == 0 {
						return out, false
					}
					atts, _ := ds[0].(map[string]any)["attempts"].([]any)
					if len(atts) == 0 {
						return out, false
					}
					msg, _ = atts[0].(map[string]any)["error"].(string)
					return out, true
				})
				refused := strings.HasPrefix(msg, "refused to connect to ") && strings.Contains(msg, "CATCHBOX_ALLOW_PRIVATE_TARGETS")
				unresolved := strings.Contains(msg, "no such host") && (strings.HasPrefix(host, "missing.") || strings.HasSuffix(host, ".invalid"))
				// mixed.test has a public address too, which may be dialled.
				if !refused && !unresolved && host != "mixed.test" {
					t.Errorf("attempt to %s: %q, want a refusal", host, msg)
				}
			}
			if n := len(e.recv.requests()); n != 0 {
				t.Errorf("the receiver got %d requests", n)
			}
		})
	})
	t.Run("local mode", func(t *testing.T) {
		db := storetest.Open(t, store.SQLite)
		cfg := testConfig(t)
		cfg.Mode.Mode = "local"
		cfg.WebhookMaxEndpoints = 200
		e := newEnv(t, db, cfg)
		e.svc.Webhooks.SetResolver(egresstest.Resolver(t))
		reach := 0
		for _, f := range egresstest.Forms {
			st, out := e.call("POST", "/api/webhooks", map[string]any{"url": url(e, f.Host)})
			if st != http.StatusCreated {
				t.Errorf("create %s: %d %v, want 201", f.Host, st, out)
				continue
			}
			d := out["data"].(map[string]any)
			e.recv.addSecret(d["secret"].(string))
			if !f.Reach || strings.HasPrefix(f.Host, "[") {
				// The receiver listens on 127.0.0.1 only; the others have
				// no route here. Their deliveries fail, which is not this
				// test's concern.
				e.call("DELETE", "/api/webhooks/"+d["id"].(string), nil)
				continue
			}
			reach++
		}
		e.start()
		e.deliver("to loopback")
		e.recv.await(t, "a delivery to each loopback form", reach)
	})
}

// TestDisabledAfterFailureWindow: an endpoint whose every attempt fails is
// disabled once the failures have lasted the window, and says why; enabling
// it again resumes deliveries.
func TestDisabledAfterFailureWindow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		cfg := testConfig(t)
		cfg.WebhookMaxAge = 30 * 24 * time.Hour
		e := newEnv(t, db, cfg)
		// The clock starts six days back, so every retry is due for the
		// queue's real clock, and jumps forward past the window.
		var offset atomic.Int64
		offset.Store(int64(-6 * 24 * time.Hour))
		e.svc.Webhooks.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		id, _ := e.createEndpoint(nil)
		e.recv.failNext(1 << 30)
		e.deliver("never accepted")
		e.start()
		e.recv.awaitRequests(t, "three failed attempts", 3)
		_, out := e.call("GET", "/api/webhooks/"+id, nil)
		if d := out["data"].(map[string]any); d["enabled"] != true || d["failing_since"] == nil {
			t.Fatalf("failing for a moment: %v", d)
		}
		offset.Add(int64(5*24*time.Hour + time.Hour))
		testkit.Await(t, "the endpoint disabled", func() (map[string]any, bool) {
			_, out := e.call("GET", "/api/webhooks/"+id, nil)
			return out, out["data"].(map[string]any)["enabled"] == false
		})
		_, out = e.call("GET", "/api/webhooks/"+id, nil)
		d := out["data"].(map[string]any)
		if r, _ := d["disabled_reason"].(string); !strings.Contains(r, "every delivery attempt failed") {
			t.Errorf("disabled_reason %q", r)
		}
		n := len(e.recv.requests())
		e.deliver("while disabled") // not written: the endpoint is disabled
		e.recv.failNext(0)
		st, out := e.call("PATCH", "/api/webhooks/"+id, map[string]any{"enabled": true})
		if d := out["data"].(map[string]any); st != http.StatusOK || d["disabled_reason"] != nil || d["failing_since"] != nil {
			t.Errorf("enabled again: %d %v", st, out)
		}
		e.recv.await(t, "the pending message delivered", 1)
		got := e.recv.accepted()
		if len(got) != 1 || got[0].Body["data"].(map[string]any)["subject"] != "never accepted" {
			t.Errorf("after enabling: %v (had %d requests)", got, n)
		}
	})
}

// TestNothingLostAcrossAKill: events committed by a service that stops
// before delivering them (its jobs never ran) are delivered by the next one
// on the same store.
func TestNothingLostAcrossAKill(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		cfg := testConfig(t)
		first := newEnv(t, db, cfg)
		first.createEndpoint(nil)
		var ids []string
		for i := range 3 {
			ids = append(ids, first.deliver(fmt.Sprintf("before the kill %d", i)))
		}
		// The first service never runs its workers: what it committed is
		// all the next one has.
		second := servertest.New(t, db, cfg)
		servertest.StartJobs(t, second)
		first.recv.await(t, "three deliveries", 3)
		for i, h := range first.recv.accepted() {
			if h.Body["data"].(map[string]any)["id"] != ids[i] {
				t.Errorf("delivery %d: %v", i, h.Body)
			}
		}
	})
}

// TestTwoReplicas: two services on one PostgreSQL database, both receiving
// mail and both running deliveries, deliver each event once, in order.
func TestTwoReplicas(t *testing.T) {
	url := storetest.URL(t, store.Postgres)
	open := func() *store.DB {
		db, err := store.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := db.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return db
	}
	cfg := testConfig(t)
	a := newEnv(t, open(), cfg)
	b := newEnv(t, open(), cfg)
	b.recv = a.recv
	a.createEndpoint(map[string]any{"event_types": []string{"email.received"}})
	a.recv.failNext(3)
	a.start()
	b.start()
	const each = 40
	var wg sync.WaitGroup
	for _, e := range []*env{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				e.deliver(fmt.Sprintf("%d", i))
			}
		}()
	}
	wg.Wait()
	a.recv.await(t, "every delivery", 2*each)
	got := a.recv.accepted()
	if len(got) != 2*each {
		t.Fatalf("%d deliveries, want %d", len(got), 2*each)
	}
	// The order of the outbox (seq) is the order of delivery.
	rows, err := a.db.Query(context.Background(), "SELECT id FROM webhook_messages ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var order []string
	for rows.Next() {
		var id string
		rows.Scan(&id)
		order = append(order, id)
	}
	seen := map[string]bool{}
	for i, h := range got {
		if seen[h.ID] {
			t.Errorf("%s delivered twice", h.ID)
		}
		seen[h.ID] = true
		if i < len(order) && order[i] != h.ID {
			t.Errorf("delivery %d is %s, the outbox's is %s", i, h.ID, order[i])
		}
	}
}

// TestDeviceExpired: a device whose expires_at passes is announced once, as
// device.expired; one that expired long before the first look is not.
func TestDeviceExpired(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, testConfig(t))
		ctx := context.Background()
		org, _ := e.svc.Tenants.OrgByName(ctx, "default")
		e.createEndpoint(map[string]any{"event_types": []string{"device.expired"}})
		e.start()
		var skew atomic.Int64
		e.svc.TOTP.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		newDevice := func(name string, expires time.Time) string {
			d, err := e.svc.TOTP.Create(ctx, org.ID, totp.NewDevice{Secret: []byte("12345678901234567890"), Name: name,
				Params: totp.DefaultParams, Source: "shared_secret", ExpiresAt: expires})
			if err != nil {
				t.Fatal(err)
			}
			return d.ID
		}
		soon := newDevice("soon", time.Now().Add(time.Hour))
		newDevice("later", time.Now().Add(48*time.Hour))
		if err := e.svc.TOTP.AnnounceExpired(ctx); err != nil {
			t.Fatal(err)
		}
		skew.Store(int64(2 * time.Hour))
		for range 2 { // the second run finds nothing new
			if err := e.svc.TOTP.AnnounceExpired(ctx); err != nil {
				t.Fatal(err)
			}
		}
		e.recv.await(t, "the device.expired event", 1)
		skew.Store(int64(80 * time.Hour)) // "later" expired 32 hours before this look
		if err := e.svc.TOTP.AnnounceExpired(ctx); err != nil {
			t.Fatal(err)
		}
		e.call("POST", "/api/webhooks/"+e.endpointID()+"/test", nil) // a marker: everything before it has gone out
		e.recv.await(t, "the test event", 2)
		got := e.recv.accepted()
		if got[0].Type != "device.expired" || got[0].Body["data"].(map[string]any)["id"] != soon ||
			got[0].Body["data"].(map[string]any)["name"] != "soon" || got[1].Type != "webhook.test" {
			t.Errorf("got %v", got)
		}
	})
}

// TestRepairLostJob: an endpoint whose delivery job died (the queue gave up
// on it) gets a new one from the periodic repair, and its messages go out.
func TestRepairLostJob(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, testConfig(t))
		ctx := context.Background()
		e.createEndpoint(nil)
		e.deliver("its job died")
		if _, err := db.Exec(ctx, "UPDATE jobs SET state = 'dead' WHERE kind = 'webhook.deliver'"); err != nil {
			t.Fatal(err)
		}
		e.start()
		if err := e.svc.Webhooks.Prune(ctx); err != nil {
			t.Fatal(err)
		}
		e.recv.await(t, "the delivery", 1)
		if err := e.svc.Webhooks.Prune(ctx); err != nil { // a live or finished job: nothing to repair
			t.Fatal(err)
		}
	})
}

// TestSeveralEventsInOneTransaction: events emitted together (an ingest
// batch) give the endpoint one delivery job and arrive in emit order; a
// transaction that rolls back sends nothing.
func TestSeveralEventsInOneTransaction(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, testConfig(t))
		ctx := context.Background()
		org, _ := e.svc.Tenants.OrgByName(ctx, "default")
		e.createEndpoint(map[string]any{"event_types": []string{"sms.received"}})
		emit := func(tx *store.Tx, n int) error {
			return e.svc.Webhooks.Emit(ctx, tx, org.ID, "", webhook.SMSReceived, map[string]int{"n": n})
		}
		err := db.InTx(ctx, func(tx *store.Tx) error {
			for i := range 3 {
				if err := emit(tx, i); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		rollback := fmt.Errorf("rolled back on purpose")
		if err := db.InTx(ctx, func(tx *store.Tx) error { emit(tx, 99); return rollback }); err != rollback {
			t.Fatal(err)
		}
		var jobs int
		db.QueryRow(ctx, "SELECT COUNT(*) FROM jobs WHERE kind = 'webhook.deliver'").Scan(&jobs)
		if jobs != 1 {
			t.Errorf("%d delivery jobs, want 1", jobs)
		}
		e.start()
		e.call("POST", "/api/webhooks/"+e.endpointID()+"/test", nil)
		e.recv.await(t, "four deliveries", 4)
		for i, h := range e.recv.accepted()[:3] {
			if n := h.Body["data"].(map[string]any)["n"]; n != float64(i) {
				t.Errorf("delivery %d carries n=%v", i, n)
			}
		}
		if got := e.recv.accepted(); len(got) != 4 || got[3].Type != "webhook.test" {
			t.Errorf("after the rolled-back event: %v", got)
		}
	})
}
