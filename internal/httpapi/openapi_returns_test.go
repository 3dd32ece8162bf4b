package httpapi_test

import (
	"context"
	"net/url"
	"strings"
)

// checkDestinationsAndSuppressions covers the destinations (create, list,
// the verification link, delete) and the suppressions (list, delete), with
// their documented errors.
func checkDestinationsAndSuppressions(c *conformance) {
	t, e, key, other := c.t, c.e, c.e.key, c.e.otherKey
	const (
		dests  = "/api/destinations"
		dest   = "/api/destinations/{destinationId}"
		verify = "/verify/destinations/{destinationId}"
		sups   = "/api/suppressions"
		sup    = "/api/suppressions/{address}"
	)
	created := decode[struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}](t, c.check(call{method: "POST", path: dests, route: dests, key: key, status: 202, body: `{"email": "Tester@Example.net"}`}))
	id := created.Data.ID
	link, err := url.Parse(e.verifier.Link(id))
	if err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(link.RequestURI(), "signature=", "signature=x", 1)
	for _, k := range []call{
		{method: "POST", path: dests, route: dests, key: key, status: 202, body: `{"email": "tester@example.net"}`},
		{method: "POST", path: dests, route: dests, key: key, status: 400, code: "invalid_parameter", body: `{"email": "Tester <tester@example.net>"}`},
		{method: "POST", path: dests, route: dests, key: key, status: 400, code: "invalid_parameter", body: `{}`},
		{method: "POST", path: dests, route: dests, key: key, status: 400, code: "invalid_json", body: `{"email":`},
		{method: "POST", path: dests, route: dests, status: 401, code: "missing_api_key", body: `{}`},
		{method: "GET", path: dests, route: dests, key: key, status: 200},
		{method: "GET", path: dests, route: dests, status: 401, code: "missing_api_key"},
		{method: "GET", path: tampered, route: verify, status: 404, code: "link_invalid"},
		{method: "GET", path: link.RequestURI(), route: verify, status: 200},
		{method: "GET", path: link.RequestURI(), route: verify, status: 200},
		{method: "POST", path: dests, route: dests, key: key, status: 200, body: `{"email": "tester@example.net"}`},
		{method: "DELETE", path: "/api/destinations/" + id, route: dest, key: other, status: 404, code: "not_found"},
		{method: "DELETE", path: "/api/destinations/" + id, route: dest, key: key, status: 204},
		{method: "DELETE", path: "/api/destinations/" + id, route: dest, key: key, status: 404, code: "not_found"},
		{method: "DELETE", path: "/api/destinations/" + id, route: dest, status: 401, code: "missing_api_key"},
		{method: "GET", path: link.RequestURI(), route: verify, status: 404, code: "link_invalid"},
	} {
		c.check(k)
	}

	if _, err := e.db.Exec(context.Background(), `INSERT INTO suppressions (org_id, address, reason, created_at)
		VALUES (?, ?, ?, ?)`, e.ns.OrgID, "gone@example.net", "bounced", int64(1795579364000)); err != nil {
		t.Fatal(err)
	}
	for _, k := range []call{
		{method: "GET", path: sups, route: sups, key: key, status: 200},
		{method: "GET", path: sups + "?limit=1&offset=0", route: sups, key: key, status: 200},
		{method: "GET", path: sups + "?limit=0", route: sups, key: key, status: 400, code: "invalid_parameter"},
		{method: "GET", path: sups, route: sups, status: 401, code: "missing_api_key"},
		{method: "DELETE", path: "/api/suppressions/Gone%40Example.net", route: sup, key: other, status: 404, code: "not_found"},
		{method: "DELETE", path: "/api/suppressions/Gone%40Example.net", route: sup, key: key, status: 204},
		{method: "DELETE", path: "/api/suppressions/gone@example.net", route: sup, key: key, status: 404, code: "not_found"},
	} {
		c.check(k)
	}
}
