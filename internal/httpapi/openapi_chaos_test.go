package httpapi_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// TestOpenAPIChaos checks the fault-rule endpoints' real responses against
// the document, and that a refused PUT leaves the rules as they were.
func TestOpenAPIChaos(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		doc := loadDocument(t, e.srv.URL)
		router, err := legacy.NewRouter(doc)
		if err != nil {
			t.Fatal(err)
		}
		apiMD, _ := os.ReadFile("../../docs/api.md")
		c := &conformance{t: t, e: e, doc: doc, router: router, apiMD: string(apiMD)}
		const route = "/api/namespace/{namespace}/chaos"
		const path = "/api/namespace/default/chaos"
		key := e.key
		good := `{"rules": [{"stage": "rcpt", "match": "Retry-*@*", "probability": 0.5, "reply": "451  4.3.0  Try again later"},
			{"stage": "after_data", "every": 3, "reply": "554 5.6.0 Refused", "unknown": 1}, {"stage": "data", "delay_ms": 2000.0, "disconnect": true}]}`
		body := c.check(call{method: "PUT", path: path, route: route, key: key, status: 200, body: good})
		want := `{"data":{"rules":[{"stage":"rcpt","match":"retry-*@*","probability":0.5,"reply":"451 4.3.0 Try again later"},` +
			`{"stage":"after_data","every":3,"reply":"554 5.6.0 Refused"},{"stage":"data","delay_ms":2000,"disconnect":true}]}}`
		if got := strings.TrimSpace(string(body)); got != want {
			t.Fatalf("PUT answered\n%s\nwant\n%s", got, want)
		}
		for _, k := range []call{
			{method: "GET", path: path, route: route, key: key, status: 200},
			{method: "PUT", path: path, route: route, key: key, status: 400, code: "stage_not_per_namespace", body: `{"rules": [{"stage": "connect", "reply": "421"}]}`},
			{method: "PUT", path: path, route: route, key: key, status: 400, code: "invalid_parameter", body: `{"rules": [{"stage": "rcpt", "reply": "250 ok"}]}`},
			{method: "PUT", path: path, route: route, key: key, status: 400, code: "invalid_parameter", body: `{"rules": [{"stage": "rcpt", "delay_ms": "soon"}]}`},
			{method: "PUT", path: path, route: route, key: key, status: 400, code: "invalid_parameter", body: `{}`},
			{method: "PUT", path: path, route: route, key: key, status: 400, code: "too_many_rules", body: `{"rules": [` + strings.Repeat(`{"stage": "rcpt", "reply": "451"},`, 20) + `{"stage": "rcpt", "reply": "451"}]}`},
			{method: "PUT", path: path, route: route, key: key, status: 400, code: "invalid_json", body: `{"rules": [`},
			{method: "PUT", path: path, route: route, key: key, status: 413, code: "body_too_large", contentLength: 9 << 20},
			{method: "PUT", path: "/api/namespace/nope/chaos", route: route, key: key, status: 404, code: "not_found", body: `{"rules": []}`},
			{method: "PUT", path: path, route: route, key: e.otherKey, status: 404, code: "not_found", body: `{"rules": []}`},
			{method: "GET", path: path, route: route, key: e.otherKey, status: 404, code: "not_found"},
			{method: "PUT", path: path, route: route, status: 401, code: "missing_api_key", body: `{"rules": []}`},
		} {
			c.check(k)
		}
		// Each field error names its rule; the refused PUTs changed nothing.
		body = c.check(call{method: "PUT", path: path, route: route, key: key, status: 400, code: "invalid_parameter",
			body: `{"rules": [{"stage": "rcpt", "reply": "451"}, {"stage": "mail", "reply": "550 4.1.1 x", "delay_ms": 60001}, {"stage": "data", "every": "2"}]}`})
		var fail struct {
			Errors []struct{ Field string } `json:"errors"`
		}
		json.Unmarshal(body, &fail)
		var fields []string
		for _, f := range fail.Errors {
			fields = append(fields, f.Field)
		}
		if strings.Join(fields, " ") != "rules[2].every" {
			t.Fatalf("type errors named %v, want rules[2].every", fields)
		}
		body = c.check(call{method: "PUT", path: path, route: route, key: key, status: 400, code: "invalid_parameter",
			body: `{"rules": [{"stage": "rcpt", "reply": "451"}, {"stage": "mail", "reply": "550 4.1.1 x", "delay_ms": 60001}]}`})
		fail.Errors = nil
		json.Unmarshal(body, &fail)
		fields = nil
		for _, f := range fail.Errors {
			fields = append(fields, f.Field)
		}
		if strings.Join(fields, " ") != "rules[1].reply rules[1].delay_ms" {
			t.Fatalf("field errors named %v", fields)
		}
		body = c.check(call{method: "GET", path: path, route: route, key: key, status: 200})
		if got := strings.TrimSpace(string(body)); got != want {
			t.Fatalf("after refused PUTs GET answered\n%s\nwant\n%s", got, want)
		}
		c.check(call{method: "DELETE", path: path, route: route, key: e.otherKey, status: 404, code: "not_found"})
		c.check(call{method: "DELETE", path: path, route: route, key: key, status: 204})
		body = c.check(call{method: "GET", path: path, route: route, key: key, status: 200})
		if got := strings.TrimSpace(string(body)); got != `{"data":{"rules":[]}}` {
			t.Fatalf("after DELETE GET answered %s", got)
		}
		c.check(call{method: "DELETE", path: "/api/namespace/nope/chaos", route: route, key: key, status: 404, code: "not_found"})
	})
}
