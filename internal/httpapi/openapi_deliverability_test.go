package httpapi_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/catchbox/catchbox/internal/deliverability"
	"github.com/catchbox/catchbox/internal/deliverability/dnstest"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// TestOpenAPIDeliverability checks the report endpoints' real responses
// against the document: requested, pending, completed with every section,
// refused. Its service asks a DNS server of test zones, runs its job workers,
// and asks a real spamd when CATCHBOX_TEST_SPAMD_ADDR is set.
func TestOpenAPIDeliverability(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		dns := dnstest.Start(t, `example.com. 300 IN TXT "v=spf1 ip4:127.0.0.1 -all"`, "example.com. 300 IN MX 10 mx.example.com.",
			`_dmarc.example.com. 300 IN TXT "v=DMARC1; p=none"`, "1.0.0.127.in-addr.arpa. 300 IN PTR client.test.")
		cfg := servertest.Config(t)
		cfg.DNSServer, cfg.DNSTimeout = dns.Addr, 500*time.Millisecond
		cfg.DNSBLIPZones, cfg.DNSBLDomainZones = "zen.test", "dbl.test"
		cfg.SpamdAddr = os.Getenv(deliverability.SpamdEnv)
		svc := servertest.New(t, db, cfg)
		e := &apiEnv{t: t, db: db, tenants: svc.Tenants, ingester: svc.Ingester, totp: svc.TOTP, sms: svc.SMS.Service, handler: svc.Handler, key: svc.NewKey}
		_, e.otherKey = servertest.Org(t, svc, "other")
		e.ns, _ = e.tenants.NamespaceByName(ctx, tenant.DefaultName)
		off := false
		if _, err := e.tenants.UpsertNamespace(ctx, e.ns.OrgID, "noraw", tenant.Settings{CaptureRawEmail: &off}); err != nil {
			t.Fatal(err)
		}
		e.srv = servertest.Serve(t, svc)
		doc := loadDocument(t, e.srv.URL)
		router, err := legacy.NewRouter(doc)
		if err != nil {
			t.Fatal(err)
		}
		apiMD, _ := os.ReadFile("../../docs/api.md")
		c := &conformance{t: t, e: e, doc: doc, router: router, apiMD: string(apiMD)}

		plainID := e.deliver(plainMessage, "john@default.localhost")
		norawID := e.deliverTo("noraw", plainMessage, "john@noraw.localhost")
		const route = "/api/emails/{emailId}/deliverability-report"
		path := "/api/emails/" + plainID + "/deliverability-report"
		key := e.key
		for _, k := range []call{
			{method: "GET", path: path, route: route, key: key, status: 404, code: "not_found"},
			{method: "POST", path: path, route: route, key: key, status: 202},
			{method: "POST", path: path, route: route, key: key, status: 200},
			{method: "GET", path: path, route: route, key: key, status: 200},
			{method: "GET", path: path, route: route, key: e.otherKey, status: 404, code: "not_found"},
			{method: "POST", path: path, route: route, key: e.otherKey, status: 404, code: "not_found"},
			{method: "POST", path: "/api/emails/" + tenant.NewID() + "/deliverability-report", route: route, key: key, status: 404, code: "not_found"},
			{method: "POST", path: "/api/emails/" + norawID + "/deliverability-report", route: route, key: key, status: 409, code: "raw_not_captured"},
			{method: "POST", path: path, route: route, status: 401, code: "missing_api_key"},
			{method: "GET", path: path, route: route, status: 401, code: "missing_api_key"},
		} {
			c.check(k)
		}
		servertest.StartJobs(t, svc)
		testkit.AwaitWithin(t, 2*time.Minute, "the report completed", func() (deliverability.Response, bool) { // spamd is slow on a loaded machine
			var got deliverability.Response
			_, body := c.send(call{method: "GET", path: path, key: key})
			json.Unmarshal(body, &got)
			return got, got.Status == "completed"
		})
		body := c.check(call{method: "GET", path: path, route: route, key: key, status: 200})
		var full struct {
			Report map[string]json.RawMessage `json:"report"`
		}
		json.Unmarshal(body, &full)
		for _, s := range []string{"overall_status", "source", "spf", "dkim", "dmarc", "blocklists", "spamassassin", "content", "dns"} {
			if full.Report[s] == nil {
				t.Errorf("report without %s", s)
			}
		}
		// A completed report is refreshed by a new request.
		c.check(call{method: "POST", path: path, route: route, key: key, status: 202})
	})
}
