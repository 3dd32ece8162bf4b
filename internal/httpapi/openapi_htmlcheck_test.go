package httpapi_test

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/catchbox/catchbox/internal/htmlcheck"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

const gridMessage = `From: news@example.org
To: john@default.localhost
Subject: Two columns
Content-Type: text/html; charset=utf-8

<div style="display:grid">
<video src="https://media.example/a.mp4"></video>
</div>
`

// TestOpenAPIHTMLCheck checks the HTML check's real responses against the
// document: an email with features some clients lack, one without HTML, and
// the refusals.
func TestOpenAPIHTMLCheck(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		doc := loadDocument(t, e.srv.URL)
		router, err := legacy.NewRouter(doc)
		if err != nil {
			t.Fatal(err)
		}
		apiMD, _ := os.ReadFile("../../docs/api.md")
		c := &conformance{t: t, e: e, doc: doc, router: router, apiMD: string(apiMD)}

		gridID := e.deliver(gridMessage, "john@default.localhost")
		plainID := e.deliver(plainMessage, "john@default.localhost")
		const route = "/api/emails/{emailId}/html-check"
		path := func(id string) string { return "/api/emails/" + id + "/html-check" }

		var got struct {
			Data htmlcheck.Report `json:"data"`
		}
		body := c.check(call{method: "GET", path: path(gridID), route: route, key: e.key, status: 200})
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		var grid *htmlcheck.Feature
		for i, f := range got.Data.Features {
			if f.Name == "display:grid" {
				grid = &got.Data.Features[i]
			}
		}
		if grid == nil || grid.Kind != "css" || !slices.Contains(grid.Unsupported, "outlook.windows") || grid.Places[0].Line != 1 {
			t.Fatalf("display:grid: %+v in %s", grid, body)
		}
		if got.Data.Score >= 100 || len(got.Data.Clients) == 0 {
			t.Errorf("score %v with %d families", got.Data.Score, len(got.Data.Clients))
		}
		// Served again from memory, the same.
		if again := c.check(call{method: "GET", path: path(gridID), route: route, key: e.key, status: 200}); string(again) != string(body) {
			t.Errorf("second answer differs:\n%s\n%s", body, again)
		}

		body = c.check(call{method: "GET", path: path(plainID), route: route, key: e.key, status: 200})
		var plain map[string]map[string]any
		json.Unmarshal(body, &plain)
		if f, ok := plain["data"]["features"].([]any); !ok || len(f) != 0 {
			t.Errorf("an email without HTML: %s", body)
		}

		for _, k := range []call{
			{method: "GET", path: path(gridID), route: route, key: e.otherKey, status: 404, code: "not_found"},
			{method: "GET", path: path(tenant.NewID()), route: route, key: e.key, status: 404, code: "not_found"},
			{method: "GET", path: path("not-an-id"), route: route, key: e.key, status: 404, code: "not_found"},
			{method: "GET", path: path(gridID), route: route, status: 401, code: "missing_api_key"},
		} {
			c.check(k)
		}
	})
}
