package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/linkcheck"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// TestOpenAPILinkCheck checks the link check's real responses against the
// document: none yet, started, pending, completed with a working, a moved
// and a dead link and an image, refused.
func TestOpenAPILinkCheck(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/moved":
				http.Redirect(w, r, "/", http.StatusMovedPermanently)
			case "/dead":
				http.NotFound(w, r)
			}
		}))
		t.Cleanup(site.Close)
		cfg := servertest.Config(t)
		cfg.Mode.Mode = config.Local
		svc := servertest.New(t, db, cfg)
		e := &apiEnv{t: t, db: db, tenants: svc.Tenants, ingester: svc.Ingester, totp: svc.TOTP, sms: svc.SMS.Service, handler: svc.Handler, key: svc.NewKey}
		_, e.otherKey = servertest.Org(t, svc, "other")
		e.srv = servertest.Serve(t, svc)
		doc := loadDocument(t, e.srv.URL)
		router, err := legacy.NewRouter(doc)
		if err != nil {
			t.Fatal(err)
		}
		apiMD, _ := os.ReadFile("../../docs/api.md")
		c := &conformance{t: t, e: e, doc: doc, router: router, apiMD: string(apiMD)}

		id := e.deliver(fmt.Sprintf(`From: news@example.com
To: john@default.localhost
Subject: Links
Content-Type: text/html; charset=utf-8

<a href="%[1]s/">Home</a> <a href="%[1]s/moved">Moved</a> <a href="%[1]s/dead">Dead</a> <img src="%[1]s/logo.png">
`, site.URL), "john@default.localhost")
		const route = "/api/emails/{emailId}/link-check"
		path := "/api/emails/" + id + "/link-check"
		key := e.key
		for _, k := range []call{
			{method: "GET", path: path, route: route, key: key, status: 404, code: "link_check_not_found"},
			{method: "POST", path: path, route: route, key: key, status: 202},
			{method: "POST", path: path, route: route, key: key, status: 200},
			{method: "GET", path: path, route: route, key: key, status: 200},
			{method: "GET", path: path, route: route, key: e.otherKey, status: 404, code: "not_found"},
			{method: "POST", path: path, route: route, key: e.otherKey, status: 404, code: "not_found"},
			{method: "POST", path: "/api/emails/" + tenant.NewID() + "/link-check", route: route, key: key, status: 404, code: "not_found"},
			{method: "GET", path: "/api/emails/" + tenant.NewID() + "/link-check", route: route, key: key, status: 404, code: "not_found"},
			{method: "POST", path: path, route: route, status: 401, code: "missing_api_key"},
			{method: "GET", path: path, route: route, status: 401, code: "missing_api_key"},
		} {
			c.check(k)
		}
		servertest.StartJobs(t, svc)
		got := testkit.Await(t, "the link check completed", func() (linkcheck.Response, bool) {
			var got linkcheck.Response
			_, body := c.send(call{method: "GET", path: path, key: key})
			json.Unmarshal(body, &got)
			return got, got.Status == "completed"
		})
		json.Unmarshal(c.check(call{method: "GET", path: path, route: route, key: key, status: 200}), &got)
		if len(got.Links) != 4 || got.FinishedAt == nil || got.Links[2].Error == "" || got.Links[1].Redirects != 1 {
			t.Errorf("completed check %+v", got)
		}
		// A completed check is made again by a new request.
		c.check(call{method: "POST", path: path, route: route, key: key, status: 202})
	})
}
