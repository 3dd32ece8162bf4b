package httpapi_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// TestOpenAPIWebhooks checks the webhook endpoints' real responses against
// the document: every status and error code they answer with.
func TestOpenAPIWebhooks(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		doc := loadDocument(t, e.srv.URL)
		router, err := legacy.NewRouter(doc)
		if err != nil {
			t.Fatal(err)
		}
		apiMD, _ := os.ReadFile("../../docs/api.md")
		c := &conformance{t: t, e: e, doc: doc, router: router, apiMD: string(apiMD)}
		const (
			list      = "/api/webhooks"
			one       = "/api/webhooks/{webhookId}"
			redeliver = "/api/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver"
		)
		key := e.key
		body := c.check(call{method: "POST", path: list, route: list, key: key, status: 201,
			body: `{"url": "http://127.0.0.1:9/hook", "event_types": ["email.received"], "namespace": "default", "description": "CI"}`})
		var created struct {
			Data struct{ ID string } `json:"data"`
		}
		json.Unmarshal(body, &created)
		id := created.Data.ID
		path := "/api/webhooks/" + id
		for _, k := range []call{
			{method: "POST", path: list, route: list, key: key, status: 400, code: "invalid_parameter", body: `{"url": "mailto:a@b"}`},
			{method: "POST", path: list, route: list, key: key, status: 400, code: "invalid_json", body: `[`},
			{method: "POST", path: list, route: list, status: 401, code: "missing_api_key", body: `{}`},
			{method: "GET", path: list, route: list, key: key, status: 200},
			{method: "GET", path: path, route: one, key: key, status: 200},
			{method: "GET", path: path, route: one, key: e.otherKey, status: 404, code: "not_found"},
			{method: "PATCH", path: path, route: one, key: key, status: 200, body: `{"description": "changed", "namespace": ""}`},
			{method: "PATCH", path: path, route: one, key: key, status: 400, code: "invalid_parameter", body: `{"event_types": []}`},
			{method: "POST", path: path + "/rotate-secret", route: one + "/rotate-secret", key: key, status: 200},
			{method: "GET", path: path + "/deliveries?limit=0", route: one + "/deliveries", key: key, status: 400, code: "invalid_parameter"},
		} {
			c.check(k)
		}
		body = c.check(call{method: "POST", path: path + "/test", route: one + "/test", key: key, status: 202})
		var test struct {
			Data struct{ ID string } `json:"data"`
		}
		json.Unmarshal(body, &test)
		for _, k := range []call{
			{method: "GET", path: path + "/deliveries?state=pending&limit=5", route: one + "/deliveries", key: key, status: 200},
			{method: "POST", path: path + "/deliveries/" + test.Data.ID + "/redeliver", route: redeliver, key: key, status: 202},
			{method: "POST", path: path + "/deliveries/nope/redeliver", route: redeliver, key: key, status: 404, code: "not_found"},
			{method: "PATCH", path: path, route: one, key: key, status: 200, body: `{"enabled": false}`},
			{method: "POST", path: path + "/test", route: one + "/test", key: key, status: 409, code: "webhook_disabled"},
			{method: "DELETE", path: path, route: one, key: key, status: 204},
			{method: "DELETE", path: path, route: one, key: key, status: 404, code: "not_found"},
		} {
			c.check(k)
		}
		for range 20 {
			c.check(call{method: "POST", path: list, route: list, key: key, status: 201, body: `{"url": "https://hooks.example.com/"}`})
		}
		c.check(call{method: "POST", path: list, route: list, key: key, status: 403, code: "webhook_limit_reached",
			body: `{"url": "https://hooks.example.com/"}`})
	})
}
