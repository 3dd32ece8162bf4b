package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/outbound/destinations"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/totp"
)

// apiEnv is the whole HTTP API over a fresh store, built as catchbox serve
// builds it (servertest, server.New), with two organisations, SMS numbers and a
// few received emails. The route check below walks that same router, so every
// endpoint the binary serves must be in the OpenAPI document.
type apiEnv struct {
	t        *testing.T
	db       *store.DB
	tenants  *tenant.Service
	ingester *inbox.Ingester
	totp     *totp.Service
	sms      *sms.Service
	handler  http.Handler
	srv      *httptest.Server
	key      string // organisation "default"
	otherKey string // organisation "other"
	ns       tenant.Namespace
	// verifier makes the verification links of destinations.
	verifier *destinations.Verifier
	// skew is added to the real time of the TOTP service's clock, so a device can
	// be made to expire without waiting.
	skew atomic.Int64
}

// twilioToken is the provider auth token the webhook verifies signatures with.
const twilioToken = "openapi-test-twilio-token"

// The SMS numbers of the test: default owns an active and a disabled one (and a
// requested one, without a phone number); other owns otherPhone.
const (
	activePhone   = "+15550001111"
	disabledPhone = "+15550002222"
	otherPhone    = "+447700900123"
)

func newAPIEnv(t *testing.T, db *store.DB) *apiEnv {
	t.Helper()
	return newAPIEnvWith(t, db, servertest.Config(t))
}

// newAPIEnvWith is newAPIEnv on a configuration of the test's own.
func newAPIEnvWith(t *testing.T, db *store.DB, cfg config.Serve) *apiEnv {
	t.Helper()
	ctx := context.Background()
	cfg.WaitHold = 200 * time.Millisecond
	cfg.TwilioAuthToken = twilioToken
	svc := servertest.New(t, db, cfg)
	e := &apiEnv{t: t, db: db, tenants: svc.Tenants, ingester: svc.Ingester, totp: svc.TOTP, sms: svc.SMS.Service,
		handler: svc.Handler, key: svc.NewKey, verifier: svc.Outbound.Verifier}
	other, otherKey := servertest.Org(t, svc, "other")
	e.otherKey = otherKey
	var err error
	if e.ns, err = e.tenants.NamespaceByName(ctx, tenant.DefaultName); err != nil {
		t.Fatal(err)
	}
	e.totp.Now = func() time.Time { return time.Now().Add(time.Duration(e.skew.Load())) }
	for _, n := range []struct {
		org  string
		spec sms.NumberSpec
	}{
		{e.ns.OrgID, sms.NumberSpec{Phone: activePhone}},
		{e.ns.OrgID, sms.NumberSpec{Country: "GB", IsTest: true}},
		{e.ns.OrgID, sms.NumberSpec{Phone: disabledPhone, Status: sms.StatusDisabled}},
		{other.ID, sms.NumberSpec{Phone: otherPhone}},
	} {
		if _, err := e.sms.AddNumber(ctx, n.org, n.spec); err != nil {
			t.Fatal(err)
		}
	}
	e.srv = servertest.Serve(t, svc)
	return e
}

// deliver stores raw in the default namespace as the SMTP listener would.
func (e *apiEnv) deliver(raw string, rcpts ...string) string {
	e.t.Helper()
	return e.deliverTo(tenant.DefaultName, raw, rcpts...)
}

// deliverTo stores raw in the named namespace as the SMTP listener would.
func (e *apiEnv) deliverTo(namespace, raw string, rcpts ...string) string {
	e.t.Helper()
	ns, err := e.tenants.NamespaceByName(context.Background(), namespace)
	if err != nil {
		e.t.Fatal(err)
	}
	ids, err := e.ingester.Deliver(context.Background(), []byte(strings.ReplaceAll(raw, "\n", "\r\n")),
		inbox.Envelope{ClientIP: "127.0.0.1", Helo: "client.test", MailFrom: "sender@example.com"},
		[]inbox.Target{{Namespace: ns, Recipients: rcpts}})
	if err != nil {
		e.t.Fatal(err)
	}
	return ids[0]
}

const plainMessage = `From: Alice Example <alice@example.com>
To: john@default.localhost
Subject: Welcome to Example
Content-Type: text/plain; charset=utf-8

Hello John,
welcome aboard.
`

const invoiceMessage = `From: Shop <orders@shop.example>
To: Mary <mary@default.localhost>
Cc: audit@default.localhost
Subject: Your invoice 1042
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b1"

--b1
Content-Type: multipart/alternative; boundary="b2"

--b2
Content-Type: text/plain; charset=utf-8

Your invoice is attached.
--b2
Content-Type: text/html; charset=utf-8

<p>Your invoice is <b>attached</b>.</p>
--b2--
--b1
Content-Type: application/pdf
Content-Disposition: attachment; filename="invoice-1042.pdf"
Content-Transfer-Encoding: base64

JVBERi0xLjQgZmFrZSBpbnZvaWNlCg==
--b1--
`

const htmlMessage = `From: news@example.org
To: john@default.localhost
Subject: HTML only
Content-Type: text/html; charset=utf-8

<h1>Newsletter</h1>
`

// call is one request and what the server must answer.
type call struct {
	method, path string // path includes the query
	route        string // the documented path template the request must match
	key          string
	body         string
	contentType  string            // of the body; application/json when empty
	header       map[string]string // further request headers
	status       int
	code         string // error code expected in the body
	// contentLength, when set, sends only headers claiming this body length, to
	// reach the body-size limit without uploading megabytes.
	contentLength int64
}

// The webhook answers TwiML as text/xml; kin-openapi has no decoder of its own
// for that media type, and the document's schema for it is a plain string.
func init() {
	openapi3filter.RegisterBodyDecoder("text/xml", openapi3filter.PlainBodyDecoder)
}

// conformance checks real responses against the OpenAPI document.
type conformance struct {
	t      *testing.T
	e      *apiEnv
	doc    *openapi3.T
	router routers.Router
	header http.Header // of the last response checked
	apiMD  string      // docs/api.md, whose error table must name every code
}

func (c *conformance) newRequest(k call) *http.Request {
	var body io.Reader
	if k.body != "" {
		body = strings.NewReader(k.body)
	}
	req, err := http.NewRequest(k.method, c.e.srv.URL+k.path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if k.key != "" {
		req.Header.Set("X-Api-Key", k.key)
	}
	if k.body != "" {
		ct := k.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	for h, v := range k.header {
		req.Header.Set(h, v)
	}
	return req
}

func (c *conformance) send(k call) (*http.Response, []byte) {
	c.t.Helper()
	var resp *http.Response
	if k.contentLength > 0 {
		resp = c.sendHeadersOnly(k)
	} else {
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		var err error
		if resp, err = client.Do(c.newRequest(k)); err != nil {
			c.t.Fatalf("%s %s: %v", k.method, k.path, err)
		}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", k.method, k.path, err)
	}
	return resp, body
}

// sendHeadersOnly writes a request whose Content-Length announces a body that
// is never sent: the server must answer from the headers alone.
func (c *conformance) sendHeadersOnly(k call) *http.Response {
	c.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(c.e.srv.URL, "http://"))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: test\r\nX-Api-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		k.method, k.path, k.key, k.contentLength)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		c.t.Fatalf("%s %s: %v", k.method, k.path, err)
	}
	return resp
}

// check sends k and validates the real response against the document: the
// request matches the expected documented operation, the status is documented
// for it, every required header is present, the body matches the schema, an error
// code is the expected one and is named in the response's description. It returns
// the body for further checks.
func (c *conformance) check(k call) []byte {
	c.t.Helper()
	name := k.method + " " + k.path
	resp, body := c.send(k)
	c.header = resp.Header
	if resp.StatusCode != k.status {
		c.t.Fatalf("%s: status %d, want %d: %s", name, resp.StatusCode, k.status, body)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		c.t.Errorf("%s: no X-Request-Id header", name)
	}

	req := c.newRequest(k)
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		c.t.Fatalf("%s: not a documented operation: %v", name, err)
	}
	if route.Path != k.route {
		c.t.Fatalf("%s: matched documented path %s, want %s", name, route.Path, k.route)
	}
	docResp := route.Operation.Responses.Status(resp.StatusCode)
	if docResp == nil || docResp.Value == nil {
		c.t.Fatalf("%s: status %d is not documented for %s %s", name, resp.StatusCode, route.Method, route.Path)
	}
	// ValidateResponse skips redirects, so required headers are checked here for
	// every status.
	for h, ref := range docResp.Value.Headers {
		if ref.Value.Required && resp.Header.Get(h) == "" {
			c.t.Errorf("%s: documented header %s missing", name, h)
		}
	}
	if k.code != "" {
		var eb struct {
			StatusCode int    `json:"statusCode"`
			Code       string `json:"code"`
		}
		if err := json.Unmarshal(body, &eb); err != nil {
			c.t.Fatalf("%s: error body is not JSON: %v: %s", name, err, body)
		}
		if eb.Code != k.code || eb.StatusCode != resp.StatusCode {
			c.t.Errorf("%s: code %q statusCode %d, want %q %d", name, eb.Code, eb.StatusCode, k.code, resp.StatusCode)
		}
		if d := docResp.Value.Description; d == nil || !strings.Contains(*d, "`"+k.code+"`") {
			c.t.Errorf("%s: code %q is not named in the documented %d response", name, k.code, resp.StatusCode)
		}
		if !strings.Contains(c.apiMD, fmt.Sprintf("| %d | `%s` |", resp.StatusCode, k.code)) {
			c.t.Errorf("%s: code %q (%d) is not in the error table of docs/api.md", name, k.code, resp.StatusCode)
		}
	}

	input := &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: params,
		Route:      route,
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
			AuthenticationFunc: func(_ context.Context, in *openapi3filter.AuthenticationInput) error {
				if in.RequestValidationInput.Request.Header.Get("X-Api-Key") == "" {
					return fmt.Errorf("no API key")
				}
				return nil
			},
		},
	}
	// A request the server accepted must be one the document allows.
	if resp.StatusCode < 400 {
		if err := openapi3filter.ValidateRequest(context.Background(), input); err != nil {
			c.t.Errorf("%s: accepted by the server but not by the document: %v", name, err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: input,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                input.Options,
	}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		c.t.Errorf("%s: response does not match the document: %v\n%s", name, err, truncate(body))
	}
	return body
}

func truncate(b []byte) []byte {
	if len(b) > 2000 {
		return append(b[:2000:2000], "..."...)
	}
	return b
}

// loadDocument fetches the served document without a key, checks it is the
// file under docs/, and validates it as OpenAPI 3.
func loadDocument(t *testing.T, base string) *openapi3.T {
	t.Helper()
	resp, err := http.Get(base + "/api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	served, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/yaml") {
		t.Fatalf("GET /api/openapi.yaml: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, f := range []string{"openapi.yaml", "../../docs/openapi.yaml"} {
		onDisk, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(served, onDisk) {
			t.Fatalf("served document differs from %s", f)
		}
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(served)
	if err != nil {
		t.Fatalf("load OpenAPI document: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("invalid OpenAPI document: %v", err)
	}
	return doc
}

// isDashboardPage tells the dashboard's pages (docs/dashboard.md), which are
// for browsers, not API clients, from the API's endpoints.
func isDashboardPage(route string) bool {
	for _, api := range []string{"/api/", "/download/", "/webhooks/", "/verify/"} {
		if strings.HasPrefix(route, api) {
			return false
		}
	}
	switch route {
	case "/healthz", "/readyz", "/metrics":
		return false
	}
	return true
}

// checkRoutesDocumented fails when a route is registered but not documented, or
// documented but not registered.
func checkRoutesDocumented(t *testing.T, h http.Handler, doc *openapi3.T) {
	t.Helper()
	routes, ok := h.(chi.Routes)
	if !ok {
		t.Fatalf("router %T is not a chi router", h)
	}
	registered := map[string]bool{}
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !isDashboardPage(route) {
			registered[method+" "+route] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	var missing, stale []string
	for r := range registered {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for d := range documented {
		if !registered[d] {
			stale = append(stale, d)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	if len(missing) > 0 {
		t.Errorf("routes not in the OpenAPI document: %v", missing)
	}
	if len(stale) > 0 {
		t.Errorf("documented operations with no route: %v", stale)
	}
	if len(registered) < 10 {
		t.Errorf("only %d routes walked; the walk is not seeing the router", len(registered))
	}
}

func TestOpenAPIConformance(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		doc := loadDocument(t, e.srv.URL)
		checkRoutesDocumented(t, e.handler, doc)
		router, err := legacy.NewRouter(doc)
		if err != nil {
			t.Fatal(err)
		}
		apiMD, err := os.ReadFile("../../docs/api.md")
		if err != nil {
			t.Fatal(err)
		}
		c := &conformance{t: t, e: e, doc: doc, router: router, apiMD: string(apiMD)}

		plainID := e.deliver(plainMessage, "john@default.localhost")
		invoiceID := e.deliver(invoiceMessage, "mary@default.localhost", "audit@default.localhost", "archive@default.localhost")
		e.deliver(htmlMessage, "john@default.localhost")
		missingID := tenant.NewID()

		const (
			test      = "/api/test"
			list      = "/api/namespaces"
			settings  = "/api/namespace/{namespace}/settings"
			smtp      = "/api/smtp/{namespace}"
			search    = "/api/emails/{namespace}/inbox"
			latest    = "/api/emails/{namespace}/latest"
			email     = "/api/emails/{emailId}"
			emailAtts = "/api/emails/{emailId}/attachments"
			att       = "/api/attachments/{id}"
			download  = "/download/attachments/{id}"
		)
		key, other := e.key, e.otherKey
		for _, k := range []call{
			{method: "GET", path: "/healthz", route: "/healthz", status: 200},
			{method: "GET", path: "/readyz", route: "/readyz", status: 200},
			{method: "GET", path: "/api/version", route: "/api/version", status: 200},
			{method: "GET", path: "/metrics", route: "/metrics", status: 200},
			{method: "GET", path: "/api/openapi.yaml", route: "/api/openapi.yaml", status: 200},

			{method: "GET", path: test, route: test, key: key, status: 200},
			{method: "GET", path: test, route: test, status: 401, code: "missing_api_key"},
			{method: "GET", path: test, route: test, key: "not-a-key-at-all", status: 401, code: "invalid_api_key"},

			{method: "GET", path: list, route: list, key: key, status: 200},
			{method: "GET", path: list, route: list, status: 401, code: "missing_api_key"},

			{method: "POST", path: "/api/namespace/Staging/settings", route: settings, key: key, status: 201,
				body: `{"retention_time": 3600, "quota_limit": 500, "capture_raw_email": false, "unknown_field": 1}`},
			{method: "POST", path: "/api/namespace/staging/settings", route: settings, key: key, status: 201, body: `{"quota_limit": null}`},
			{method: "POST", path: "/api/namespace/empty/settings", route: settings, key: key, status: 201},
			{method: "POST", path: "/api/namespace/staging/settings", route: settings, key: key, status: 400, code: "invalid_parameter", body: `{"retention_time": 10}`},
			{method: "POST", path: "/api/namespace/staging/settings", route: settings, key: key, status: 400, code: "invalid_parameter", body: `{"quota_limit": 0}`},
			{method: "POST", path: "/api/namespace/staging/settings", route: settings, key: key, status: 400, code: "invalid_parameter", body: `{"retention_time": "an hour"}`},
			{method: "POST", path: "/api/namespace/staging/settings", route: settings, key: key, status: 400, code: "invalid_json", body: `{"retention_time":`},
			{method: "POST", path: "/api/namespace/-bad-/settings", route: settings, key: key, status: 400, code: "invalid_namespace", body: `{}`},
			{method: "POST", path: "/api/namespace/send/settings", route: settings, key: key, status: 400, code: "namespace_reserved", body: `{}`},
			{method: "POST", path: "/api/namespace/default/settings", route: settings, key: other, status: 409, code: "namespace_taken", body: `{}`},
			{method: "POST", path: "/api/namespace/staging/settings", route: settings, key: key, status: 413, code: "body_too_large", contentLength: 9 << 20},
			{method: "POST", path: "/api/namespace/staging/settings", route: settings, status: 401, code: "missing_api_key", body: `{}`},

			{method: "GET", path: "/api/smtp/default", route: smtp, key: key, status: 200},
			{method: "GET", path: "/api/smtp/nope", route: smtp, key: key, status: 404, code: "not_found"},
			{method: "GET", path: "/api/smtp/default", route: smtp, key: other, status: 404, code: "not_found"},
			{method: "GET", path: "/api/smtp/default", route: smtp, status: 401, code: "missing_api_key"},

			{method: "GET", path: "/api/emails/default/inbox", route: search, key: key, status: 200},
			{method: "GET", path: "/api/emails/DEFAULT/inbox?limit=1&offset=1&from_timestamp=0&to_timestamp=1099511627776&to_addr_prefix=ARCHIVE&from_addr_includes=SHOP&subject_includes=voice&wait=1",
				route: search, key: key, status: 200},
			{method: "GET", path: "/api/emails/default/inbox?subject_includes=&to_addr_prefix=&wait=false", route: search, key: key, status: 200},
			{method: "GET", path: "/api/emails/default/inbox?to_addr_prefix=&from_addr_includes=&subject_includes=voice&from_timestamp=&to_timestamp=&limit=&offset=&wait=",
				route: search, key: key, status: 200},
			{method: "GET", path: "/api/emails/default/inbox?limit=5.0&offset=0.00", route: search, key: key, status: 200},
			{method: "GET", path: "/api/emails/default/inbox?limit=5.5", route: search, key: key, status: 400, code: "invalid_parameter"},
			{method: "GET", path: "/api/emails/default/inbox?from_timestamp=1795579364.5&to_timestamp=1099511627775.999", route: search, key: key, status: 200},
			{method: "GET", path: "/api/emails/default/inbox?to_addr_prefix=mary&wait=true", route: search, key: key, status: 200},
			{method: "GET", path: "/api/emails/default/inbox?subject_includes=nothing+matches&wait=true", route: search, key: key, status: 307},
			{method: "GET", path: "/api/emails/default/inbox?limit=21&offset=-1&from_timestamp=x&wait=yes", route: search, key: key, status: 400, code: "invalid_parameter"},
			{method: "GET", path: "/api/emails/default/inbox?subject_includes=" + strings.Repeat("x", 999), route: search, key: key, status: 400, code: "invalid_parameter"},
			{method: "GET", path: "/api/emails/nope/inbox", route: search, key: key, status: 404, code: "not_found"},
			{method: "GET", path: "/api/emails/default/inbox", route: search, key: other, status: 404, code: "not_found"},
			{method: "GET", path: "/api/emails/default/inbox", route: search, status: 401, code: "missing_api_key"},

			{method: "GET", path: "/api/emails/default/latest", route: latest, key: key, status: 200},
			{method: "GET", path: "/api/emails/empty/latest", route: latest, key: key, status: 404, code: "no_emails"},
			{method: "GET", path: "/api/emails/nope/latest", route: latest, key: key, status: 404, code: "not_found"},
			{method: "GET", path: "/api/emails/default/latest", route: latest, status: 401, code: "missing_api_key"},

			{method: "GET", path: "/api/emails/" + invoiceID, route: email, key: key, status: 200},
			{method: "GET", path: "/api/emails/" + plainID, route: email, key: key, status: 200},
			{method: "GET", path: "/api/emails/" + missingID, route: email, key: key, status: 404, code: "not_found"},
			{method: "GET", path: "/api/emails/not-a-uuid", route: email, key: key, status: 404, code: "not_found"},
			{method: "GET", path: "/api/emails/" + invoiceID, route: email, key: other, status: 404, code: "not_found"},
			{method: "GET", path: "/api/emails/" + invoiceID, route: email, status: 401, code: "missing_api_key"},

			{method: "GET", path: "/api/emails/" + invoiceID + "/attachments", route: emailAtts, key: key, status: 200},
			{method: "GET", path: "/api/emails/" + plainID + "/attachments", route: emailAtts, key: key, status: 200},
			{method: "GET", path: "/api/emails/" + missingID + "/attachments", route: emailAtts, key: key, status: 404, code: "not_found"},
			{method: "GET", path: "/api/emails/" + invoiceID + "/attachments", route: emailAtts, key: other, status: 404, code: "not_found"},
			{method: "GET", path: "/api/emails/" + invoiceID + "/attachments", route: emailAtts, status: 401, code: "missing_api_key"},
		} {
			c.check(k)
		}

		// The attachment endpoints need the id and link the server handed out.
		var atts struct {
			Data []inbox.Attachment `json:"data"`
		}
		if err := json.Unmarshal(c.check(call{method: "GET", path: "/api/emails/" + invoiceID + "/attachments", route: emailAtts, key: key, status: 200}), &atts); err != nil {
			t.Fatal(err)
		}
		if len(atts.Data) != 1 {
			t.Fatalf("invoice has %d attachments, want 1", len(atts.Data))
		}
		a := atts.Data[0]
		link, err := url.Parse(a.DownloadURL)
		if err != nil {
			t.Fatal(err)
		}
		tampered := link.Query()
		tampered.Set("signature", "x"+tampered.Get("signature"))
		for _, k := range []call{
			{method: "GET", path: "/api/attachments/" + a.ID, route: att, key: key, status: 200},
			{method: "GET", path: "/api/attachments/" + missingID, route: att, key: key, status: 404, code: "not_found"},
			{method: "GET", path: "/api/attachments/" + a.ID, route: att, key: other, status: 404, code: "not_found"},
			{method: "GET", path: "/api/attachments/" + a.ID, route: att, status: 401, code: "missing_api_key"},
			{method: "GET", path: link.RequestURI(), route: download, status: 200},
			{method: "GET", path: link.Path + "?" + tampered.Encode(), route: download, status: 404, code: "link_invalid"},
		} {
			c.check(k)
		}
		if got := c.check(call{method: "GET", path: link.RequestURI(), route: download, status: 200}); string(got) != "%PDF-1.4 fake invoice\n" {
			t.Errorf("download returned %q", got)
		}

		checkRawSource(c, plainID)
		checkShareLinks(c, invoiceID, plainID, a.ID)
		checkOutbound(c, plainID, invoiceID)
		checkDestinationsAndSuppressions(c)
		checkNamespaceSharing(c)
		checkTOTP(c)
		checkSMS(c)

		// A real 500: the namespaces table is gone. The body carries the request id
		// and nothing of the cause.
		if _, err := db.Exec(context.Background(), "ALTER TABLE namespaces RENAME TO namespaces_gone"); err != nil {
			t.Fatal(err)
		}
		body := c.check(call{method: "GET", path: list, route: list, key: key, status: 500, code: "internal_error"})
		if strings.Contains(strings.ToLower(string(body)), "namespaces") || strings.Contains(string(body), "SQL") {
			t.Errorf("500 body leaks internals: %s", body)
		}
		var ie struct {
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal(body, &ie); err != nil || ie.RequestID != c.header.Get("X-Request-Id") {
			t.Errorf("500 request_id %q, X-Request-Id %q (%v)", ie.RequestID, c.header.Get("X-Request-Id"), err)
		}
	})
}

// decode unmarshals a response body the test needs values from.
func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %s: %v", truncate(body), err)
	}
	return v
}

// tamper returns link with its signature altered.
func tamper(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("signature", "x"+q.Get("signature"))
	return u.Path + "?" + q.Encode()
}

// requestURI is the path and query of an absolute link the server handed out.
func requestURI(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.RequestURI()
}

// checkRawSource covers the raw-source link and its download, the namespace
// settings that decide whether a source is kept, and quota enforcement (a
// valid link to an email the quota deleted is 404 not_found).
func checkRawSource(c *conformance, plainID string) {
	t, e, key, other := c.t, c.e, c.e.key, c.e.otherKey
	const (
		rawSource   = "/api/emails/{namespace}/{emailId}/deliverability-report/raw-source"
		downloadRaw = "/download/raw/{id}"
		settings    = "/api/namespace/{namespace}/settings"
		search      = "/api/emails/{namespace}/inbox"
	)
	email := decode[struct {
		Data inbox.Email `json:"data"`
	}](t, c.check(call{method: "GET", path: "/api/emails/" + plainID, route: "/api/emails/{emailId}", key: key, status: 200}))
	ts := fmt.Sprint(email.Data.ReceivedTimestamp)
	path := "/api/emails/default/" + plainID + "/deliverability-report/raw-source"
	raw := decode[struct {
		Data struct {
			DownloadURL string `json:"download_url"`
			Size        int    `json:"size"`
		} `json:"data"`
	}](t, c.check(call{method: "GET", path: path + "?received_timestamp=" + ts, route: rawSource, key: key, status: 200}))
	got := c.check(call{method: "GET", path: requestURI(t, raw.Data.DownloadURL), route: downloadRaw, status: 200})
	if want := strings.ReplaceAll(plainMessage, "\n", "\r\n"); string(got) != want || raw.Data.Size != len(want) {
		t.Errorf("raw source: size %d, bytes %q; want the %d bytes received", raw.Data.Size, got, len(want))
	}
	if ct := c.header.Get("Content-Type"); ct != "message/rfc822" {
		t.Errorf("raw source download Content-Type %q", ct)
	}

	// A namespace that does not capture raw email.
	c.check(call{method: "POST", path: "/api/namespace/noraw/settings", route: settings, key: key, status: 201, body: `{"capture_raw_email": false}`})
	norawID := e.deliverTo("noraw", plainMessage, "john@noraw.localhost")
	norawTS := fmt.Sprint(decode[struct {
		Data inbox.Email `json:"data"`
	}](t, c.check(call{method: "GET", path: "/api/emails/" + norawID, route: "/api/emails/{emailId}", key: key, status: 200})).Data.ReceivedTimestamp)

	for _, k := range []call{
		{method: "GET", path: path, route: rawSource, key: key, status: 400, code: "invalid_parameter"},
		{method: "GET", path: path + "?received_timestamp=soon", route: rawSource, key: key, status: 400, code: "invalid_parameter"},
		{method: "GET", path: path + "?received_timestamp=" + ts + ".5", route: rawSource, key: key, status: 400, code: "invalid_parameter"},
		{method: "GET", path: path + "?received_timestamp=" + ts + ".0", route: rawSource, key: key, status: 200},
		{method: "GET", path: path + "?received_timestamp=1", route: rawSource, key: key, status: 404, code: "not_found"},
		{method: "GET", path: "/api/emails/noraw/" + plainID + "/deliverability-report/raw-source?received_timestamp=" + ts, route: rawSource, key: key, status: 404, code: "not_found"},
		{method: "GET", path: "/api/emails/nope/" + plainID + "/deliverability-report/raw-source?received_timestamp=" + ts, route: rawSource, key: key, status: 404, code: "not_found"},
		{method: "GET", path: path + "?received_timestamp=" + ts, route: rawSource, key: other, status: 404, code: "not_found"},
		{method: "GET", path: path + "?received_timestamp=" + ts, route: rawSource, status: 401, code: "missing_api_key"},
		{method: "GET", path: "/api/emails/noraw/" + norawID + "/deliverability-report/raw-source?received_timestamp=" + norawTS, route: rawSource, key: key, status: 409, code: "raw_not_captured"},
		{method: "GET", path: tamper(t, raw.Data.DownloadURL), route: downloadRaw, status: 404, code: "link_invalid"},
	} {
		c.check(k)
	}

	// Quota: a namespace keeping 2 emails deletes the oldest when a third arrives,
	// and a still-valid raw link to it then finds nothing.
	c.check(call{method: "POST", path: "/api/namespace/quota/settings", route: settings, key: key, status: 201, body: `{"quota_limit": 2}`})
	oldest := e.deliverTo("quota", plainMessage, "john@quota.localhost")
	oldestTS := fmt.Sprint(decode[struct {
		Data inbox.Email `json:"data"`
	}](t, c.check(call{method: "GET", path: "/api/emails/" + oldest, route: "/api/emails/{emailId}", key: key, status: 200})).Data.ReceivedTimestamp)
	link := decode[struct {
		Data struct {
			DownloadURL string `json:"download_url"`
		} `json:"data"`
	}](t, c.check(call{method: "GET", path: "/api/emails/quota/" + oldest + "/deliverability-report/raw-source?received_timestamp=" + oldestTS,
		route: rawSource, key: key, status: 200})).Data.DownloadURL
	e.deliverTo("quota", htmlMessage, "john@quota.localhost")
	e.deliverTo("quota", invoiceMessage, "mary@quota.localhost")
	res := decode[struct {
		TotalCount int `json:"total_count"`
	}](t, c.check(call{method: "GET", path: "/api/emails/quota/inbox", route: search, key: key, status: 200}))
	if res.TotalCount != 2 {
		t.Errorf("namespace with quota_limit 2 holds %d emails", res.TotalCount)
	}
	c.check(call{method: "GET", path: "/api/emails/" + oldest, route: "/api/emails/{emailId}", key: key, status: 404, code: "not_found"})
	c.check(call{method: "GET", path: requestURI(t, link), route: downloadRaw, status: 404, code: "not_found"})
}

// inlineMessage has an inline image with a Content-ID, so attachments carry
// content_id.
const inlineMessage = `From: Design <design@example.com>
To: john@default.localhost
Subject: Logo inline
MIME-Version: 1.0
Content-Type: multipart/related; boundary="r1"

--r1
Content-Type: text/html; charset=utf-8

<p><img src="cid:logo@example.com"></p>
--r1
Content-Type: image/png
Content-ID: <logo@example.com>
Content-Disposition: inline; filename="logo.png"
Content-Transfer-Encoding: base64

iVBORw0KGgo=
--r1--
`

// checkShareLinks covers creating a share link and reading an email and its
// attachments through it with another organisation's key; and content_id.
func checkShareLinks(c *conformance, invoiceID, plainID, invoiceAttID string) {
	t, e, key, other := c.t, c.e, c.e.key, c.e.otherKey
	const (
		create   = "/api/emails/{emailId}/share"
		shared   = "/api/share/email/{encodedEmailId}"
		sharedAt = "/api/share/email/{encodedEmailId}/attachment/{attachmentId}"
	)
	type link struct {
		Data struct {
			EncodedEmailID string `json:"encoded_email_id"`
			URL            string `json:"url"`
			ExpiresAt      string `json:"expires_at"`
		} `json:"data"`
	}
	l := decode[link](t, c.check(call{method: "POST", path: "/api/emails/" + invoiceID + "/share", route: create, key: key, status: 201, body: `{"expires_in": 3600}`}))
	plain := decode[link](t, c.check(call{method: "POST", path: "/api/emails/" + plainID + "/share", route: create, key: key, status: 201}))
	if want := e.srv.URL + "/api/share/email/" + l.Data.EncodedEmailID; l.Data.URL != want {
		t.Errorf("share url %q, want %q", l.Data.URL, want)
	}
	// The same token with one character of its signature changed.
	tok := l.Data.EncodedEmailID
	i, swap := len(tok)-10, "A"
	if tok[i] == 'A' {
		swap = "B"
	}
	bad := tok[:i] + swap + tok[i+1:]

	inlineID := e.deliver(inlineMessage, "john@default.localhost")
	inline := decode[struct {
		Data inbox.Email `json:"data"`
	}](t, c.check(call{method: "GET", path: "/api/emails/" + inlineID, route: "/api/emails/{emailId}", key: key, status: 200}))
	if len(inline.Data.Attachments) != 1 || inline.Data.Attachments[0].ContentID != "logo@example.com" {
		t.Fatalf("inline image summary %+v, want content_id logo@example.com", inline.Data.Attachments)
	}
	inlineTok := decode[link](t, c.check(call{method: "POST", path: "/api/emails/" + inlineID + "/share", route: create, key: key, status: 201, body: `{}`})).Data.EncodedEmailID
	att := decode[struct {
		Data inbox.Attachment `json:"data"`
	}](t, c.check(call{method: "GET", path: "/api/share/email/" + inlineTok + "/attachment/" + inline.Data.Attachments[0].ID, route: sharedAt, key: other, status: 200}))
	if att.Data.ContentID != "logo@example.com" {
		t.Errorf("shared inline attachment content_id %q", att.Data.ContentID)
	}

	for _, k := range []call{
		{method: "POST", path: "/api/emails/" + invoiceID + "/share", route: create, key: key, status: 400, code: "invalid_parameter", body: `{"expires_in": 0}`},
		{method: "POST", path: "/api/emails/" + invoiceID + "/share", route: create, key: key, status: 400, code: "invalid_parameter", body: `{"expires_in": 31536001}`},
		{method: "POST", path: "/api/emails/" + invoiceID + "/share", route: create, key: key, status: 400, code: "invalid_parameter", body: `{"expires_in": "1h"}`},
		{method: "POST", path: "/api/emails/" + invoiceID + "/share", route: create, key: key, status: 400, code: "invalid_json", body: `{"expires_in":`},
		{method: "POST", path: "/api/emails/" + invoiceID + "/share", route: create, key: other, status: 404, code: "not_found"},
		{method: "POST", path: "/api/emails/" + tenant.NewID() + "/share", route: create, key: key, status: 404, code: "not_found"},
		{method: "POST", path: "/api/emails/" + invoiceID + "/share", route: create, status: 401, code: "missing_api_key"},

		{method: "GET", path: "/api/share/email/" + tok, route: shared, key: key, status: 200},
		{method: "GET", path: "/api/share/email/" + tok, route: shared, key: other, status: 200},
		{method: "GET", path: "/api/share/email/" + plain.Data.EncodedEmailID, route: shared, key: other, status: 200},
		{method: "GET", path: "/api/share/email/" + bad, route: shared, key: other, status: 404, code: "share_not_found"},
		{method: "GET", path: "/api/share/email/not-a-token", route: shared, key: other, status: 404, code: "share_not_found"},
		{method: "GET", path: "/api/share/email/" + tok, route: shared, status: 401, code: "missing_api_key"},

		{method: "GET", path: "/api/share/email/" + tok + "/attachment/" + invoiceAttID, route: sharedAt, key: other, status: 200},
		{method: "GET", path: "/api/share/email/" + inlineTok + "/attachment/" + invoiceAttID, route: sharedAt, key: other, status: 404, code: "not_found"},
		{method: "GET", path: "/api/share/email/" + tok + "/attachment/not-a-uuid", route: sharedAt, key: other, status: 404, code: "not_found"},
		{method: "GET", path: "/api/share/email/" + bad + "/attachment/" + invoiceAttID, route: sharedAt, key: other, status: 404, code: "share_not_found"},
		{method: "GET", path: "/api/share/email/" + tok + "/attachment/" + invoiceAttID, route: sharedAt, status: 401, code: "missing_api_key"},
	} {
		c.check(k)
	}
}

// checkNamespaceSharing covers a namespace shared with a second organisation:
// listed for both with shared_organisation_id naming the other, readable by the
// second, its settings still the owner's alone.
func checkNamespaceSharing(c *conformance) {
	t, e, key, other := c.t, c.e, c.e.key, c.e.otherKey
	ctx := context.Background()
	c.check(call{method: "POST", path: "/api/namespace/team/settings", route: "/api/namespace/{namespace}/settings", key: key, status: 201})
	otherOrg, err := e.tenants.OrgByName(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.tenants.ShareNamespace(ctx, "team", otherOrg.ID); err != nil {
		t.Fatal(err)
	}
	type list struct {
		Data []struct {
			Namespace            string `json:"namespace"`
			Shared               bool   `json:"shared"`
			SharedOrganisationID string `json:"shared_organisation_id"`
		} `json:"data"`
	}
	for _, v := range []struct{ key, wantOther string }{{key, otherOrg.ID}, {other, e.ns.OrgID}} {
		l := decode[list](t, c.check(call{method: "GET", path: "/api/namespaces", route: "/api/namespaces", key: v.key, status: 200}))
		found := false
		for _, n := range l.Data {
			if n.Namespace == "team" {
				found = true
				if !n.Shared || n.SharedOrganisationID != v.wantOther {
					t.Errorf("team as listed: shared %v shared_organisation_id %q, want true %q", n.Shared, n.SharedOrganisationID, v.wantOther)
				}
			}
		}
		if !found {
			t.Errorf("shared namespace team is not listed for the organisation whose peer is %s", v.wantOther)
		}
	}
	for _, k := range []call{
		{method: "GET", path: "/api/emails/team/inbox", route: "/api/emails/{namespace}/inbox", key: other, status: 200},
		{method: "POST", path: "/api/namespace/team/settings", route: "/api/namespace/{namespace}/settings", key: other, status: 409, code: "namespace_taken", body: `{"retention_time": 3600}`},
		{method: "GET", path: "/api/smtp/team", route: "/api/smtp/{namespace}", key: other, status: 404, code: "not_found"},
	} {
		c.check(k)
	}
}

// checkTOTP covers every device endpoint: each way of saving a device, the list,
// codes, the per-organisation switch and limit, expiry (by moving the service's
// clock) and deletion.
func checkTOTP(c *conformance) {
	t, e, key, other := c.t, c.e, c.e.key, c.e.otherKey
	ctx := context.Background()
	const (
		devices   = "/api/devices"
		custom    = "/api/devices/custom"
		base32    = "/api/devices/base32-secret-key"
		otpauth   = "/api/devices/otpauth-url"
		secretOTP = "/api/devices/otp"
		device    = "/api/devices/{deviceId}"
		deviceOTP = "/api/devices/{deviceId}/otp"
		secret    = "JBSWY3DPEHPK3PXP"
	)
	type dev struct {
		ID string `json:"id"`
	}
	expiresAt := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	expiring := decode[dev](t, c.check(call{method: "POST", path: devices, route: devices, key: key, status: 201,
		body: `{"shared_secret": "` + secret + `", "name": "Expiring", "expires_at": "` + expiresAt + `"}`}))
	if loc := c.header.Get("Location"); loc != "/api/devices/"+expiring.ID {
		t.Errorf("Location %q for device %s", loc, expiring.ID)
	}
	saved := decode[dev](t, c.check(call{method: "POST", path: custom, route: custom, key: key, status: 201,
		body: `{"secret": "` + secret + `", "username": "alice@example.com", "issuer": "Acme", "digits": 8, "period": 60, "algorithm": "SHA256"}`}))
	otherDev := decode[dev](t, c.check(call{method: "POST", path: devices, route: devices, key: other, status: 201, body: `{"shared_secret": "` + secret + `"}`}))
	missing := tenant.NewID()

	for _, k := range []call{
		{method: "POST", path: base32, route: base32, key: key, status: 201, body: `{"base32_secret_key": "jbsw y3dp-ehpk 3pxp", "digits": 6, "period": 30, "algorithm": "SHA512"}`},
		{method: "POST", path: otpauth, route: otpauth, key: key, status: 201,
			body: `{"otp_auth_url": "otpauth://totp/Acme:bob@example.com?secret=` + secret + `&issuer=Acme&digits=8", "name": "Bob at Acme"}`},

		{method: "POST", path: devices, route: devices, key: key, status: 400, code: "invalid_secret", body: `{"shared_secret": "not base32!"}`},
		{method: "POST", path: devices, route: devices, key: key, status: 400, code: "invalid_parameter", body: `{}`},
		{method: "POST", path: devices, route: devices, key: key, status: 400, code: "invalid_parameter", body: `{"shared_secret": "` + secret + `", "expires_at": "2000-01-01T00:00:00Z"}`},
		{method: "POST", path: devices, route: devices, key: key, status: 201, body: `{"shared_secret": "` + secret + `", "digits": 8, "period": "x", "algorithm": 1}`},
		{method: "POST", path: devices, route: devices, key: key, status: 400, code: "invalid_json", body: `[1, 2]`},
		{method: "POST", path: devices, route: devices, status: 401, code: "missing_api_key", body: `{}`},
		{method: "POST", path: devices, route: devices, key: key, status: 413, code: "body_too_large", contentLength: 9 << 20},
		{method: "POST", path: custom, route: custom, key: key, status: 400, code: "invalid_parameter", body: `{"secret": "` + secret + `", "digits": 7, "period": 5, "algorithm": "MD5"}`},
		{method: "POST", path: base32, route: base32, key: key, status: 400, code: "invalid_secret", body: `{"base32_secret_key": "1"}`},
		{method: "POST", path: otpauth, route: otpauth, key: key, status: 400, code: "invalid_otpauth_url", body: `{"otp_auth_url": "https://example.com/?secret=` + secret + `"}`},
		{method: "POST", path: otpauth, route: otpauth, key: key, status: 400, code: "hotp_not_supported", body: `{"otp_auth_url": "otpauth://hotp/Acme:bob?secret=` + secret + `&counter=1"}`},

		{method: "GET", path: devices, route: devices, key: key, status: 200},
		{method: "GET", path: devices + "?limit=2&offset=1&username=ALICE&issuer=acm", route: devices, key: key, status: 200},
		{method: "GET", path: devices + "?limit=2.0&offset=&username=&issuer=", route: devices, key: key, status: 200},
		{method: "GET", path: devices + "?limit=2.5", route: devices, key: key, status: 400, code: "invalid_parameter"},
		{method: "GET", path: devices + "?limit=101&offset=-1", route: devices, key: key, status: 400, code: "invalid_parameter"},
		{method: "GET", path: devices + "?issuer=" + strings.Repeat("x", 241), route: devices, key: key, status: 400, code: "invalid_parameter"},
		{method: "GET", path: devices, route: devices, status: 401, code: "missing_api_key"},

		{method: "GET", path: "/api/devices/" + saved.ID, route: device, key: key, status: 200},
		{method: "GET", path: "/api/devices/" + missing, route: device, key: key, status: 404, code: "not_found"},
		{method: "GET", path: "/api/devices/" + otherDev.ID, route: device, key: key, status: 404, code: "not_found"},
		{method: "GET", path: "/api/devices/not-a-uuid", route: device, key: key, status: 404, code: "not_found"},
		{method: "GET", path: "/api/devices/" + saved.ID, route: device, status: 401, code: "missing_api_key"},

		{method: "GET", path: "/api/devices/" + saved.ID + "/otp", route: deviceOTP, key: key, status: 200},
		{method: "GET", path: "/api/devices/" + saved.ID + "/otp?min_seconds_until_expire=0", route: deviceOTP, key: key, status: 200},
		{method: "GET", path: "/api/devices/" + saved.ID + "/otp?min_seconds_until_expire=", route: deviceOTP, key: key, status: 200},
		{method: "GET", path: "/api/devices/" + saved.ID + "/otp?min_seconds_until_expire=60", route: deviceOTP, key: key, status: 400, code: "min_seconds_not_below_period"},
		{method: "GET", path: "/api/devices/" + saved.ID + "/otp?min_seconds_until_expire=-1", route: deviceOTP, key: key, status: 400, code: "invalid_parameter"},
		{method: "GET", path: "/api/devices/" + otherDev.ID + "/otp", route: deviceOTP, key: key, status: 404, code: "not_found"},
		{method: "GET", path: "/api/devices/" + saved.ID + "/otp", route: deviceOTP, status: 401, code: "missing_api_key"},

		{method: "POST", path: secretOTP, route: secretOTP, key: key, status: 200, body: `{"shared_secret": "` + secret + `"}`},
		{method: "POST", path: secretOTP, route: secretOTP, key: key, status: 200, body: `{"shared_secret": "` + secret + `", "min_seconds_until_expire": 0}`},
		{method: "POST", path: secretOTP, route: secretOTP, key: key, status: 400, code: "min_seconds_not_below_period", body: `{"shared_secret": "` + secret + `", "min_seconds_until_expire": 30}`},
		{method: "POST", path: secretOTP, route: secretOTP, key: key, status: 400, code: "field_not_allowed", body: `{"shared_secret": "` + secret + `", "period": 60}`},
		{method: "POST", path: secretOTP, route: secretOTP, key: key, status: 400, code: "invalid_secret", body: `{"shared_secret": "!!"}`},
		{method: "POST", path: secretOTP, route: secretOTP, key: key, status: 400, code: "invalid_parameter", body: `{"shared_secret": "` + secret + `", "min_seconds_until_expire": -1}`},
		{method: "POST", path: secretOTP, route: secretOTP, key: key, status: 400, code: "invalid_json", body: `nope`},
		{method: "POST", path: secretOTP, route: secretOTP, status: 401, code: "missing_api_key", body: `{}`},
	} {
		c.check(k)
	}

	// The list holds active devices in the documented shape, under items.
	list := decode[struct {
		TotalCount int   `json:"total_count"`
		Items      []dev `json:"items"`
	}](t, c.check(call{method: "GET", path: devices + "?username=alice", route: devices, key: key, status: 200}))
	if list.TotalCount != 1 || len(list.Items) != 1 || list.Items[0].ID != saved.ID {
		t.Errorf("devices filtered by username alice: %+v", list)
	}

	// The organisation's switch, then its limit (other has one active device).
	off, on, one := false, true, 1
	if _, err := e.tenants.UpdateOrg(ctx, "other", nil, &off); err != nil {
		t.Fatal(err)
	}
	c.check(call{method: "POST", path: custom, route: custom, key: other, status: 403, code: "totp_disabled", body: `{"secret": "` + secret + `"}`})
	if _, err := e.tenants.UpdateOrg(ctx, "other", &one, &on); err != nil {
		t.Fatal(err)
	}
	c.check(call{method: "POST", path: devices, route: devices, key: other, status: 403, code: "device_limit_reached", body: `{"shared_secret": "` + secret + `"}`})

	// Two hours on, the expiring device is expired: its code is 410, the device
	// itself still readable and deletable.
	e.skew.Store(int64(2 * time.Hour))
	for _, k := range []call{
		{method: "GET", path: "/api/devices/" + expiring.ID + "/otp", route: deviceOTP, key: key, status: 410, code: "device_expired"},
		{method: "GET", path: "/api/devices/" + expiring.ID, route: device, key: key, status: 200},
		{method: "DELETE", path: "/api/devices/" + expiring.ID, route: device, key: key, status: 204},
		{method: "DELETE", path: "/api/devices/" + expiring.ID, route: device, key: key, status: 404, code: "not_found"},
		{method: "DELETE", path: "/api/devices/" + otherDev.ID, route: device, key: key, status: 404, code: "not_found"},
		{method: "DELETE", path: "/api/devices/" + saved.ID, route: device, status: 401, code: "missing_api_key"},
		{method: "GET", path: "/api/devices/" + expiring.ID, route: device, key: key, status: 404, code: "not_found"},
	} {
		c.check(k)
	}
	e.skew.Store(0)
}

// twilioSign computes X-Twilio-Signature as Twilio documents it, independently
// of the server's code: the full URL, then each POST parameter's name and value
// sorted by name, HMAC-SHA1 under the auth token, Base64.
func twilioSign(token, fullURL string, form url.Values) string {
	names := make([]string, 0, len(form))
	for k := range form {
		names = append(names, k)
	}
	sort.Strings(names)
	s := fullURL
	for _, k := range names {
		for _, v := range form[k] {
			s += k + v
		}
	}
	mac := hmac.New(sha1.New, []byte(token))
	mac.Write([]byte(s))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// checkSMS covers the numbers, virtual messages, the search with its wait, the
// latest message and the Twilio webhook.
func checkSMS(c *conformance) {
	t, e, key, other := c.t, c.e, c.e.key, c.e.otherKey
	const (
		numbers  = "/api/sms/numbers"
		virtual  = "/api/sms/virtual"
		messages = "/api/sms/{phone_number}/messages"
		latest   = "/api/sms/{phone_number}/latest"
		webhook  = "/webhooks/twilio/sms"
	)
	nums := decode[struct {
		TotalCount int `json:"total_count"`
		Data       []struct {
			Status      string `json:"status"`
			PhoneNumber string `json:"phone_number"`
		} `json:"data"`
	}](t, c.check(call{method: "GET", path: numbers, route: numbers, key: key, status: 200}))
	if nums.TotalCount != 3 || len(nums.Data) != 3 || nums.Data[1].Status != "requested" || nums.Data[1].PhoneNumber != "" {
		t.Errorf("numbers %+v: want active, requested (no phone_number) and disabled", nums)
	}

	// The webhook signs over the public URL plus the request URI.
	hook := func(form url.Values, signature string) call {
		if signature == "" {
			signature = twilioSign(twilioToken, e.srv.URL+webhook, form)
		}
		return call{method: "POST", path: webhook, route: webhook, body: form.Encode(), contentType: "application/x-www-form-urlencoded",
			header: map[string]string{"X-Twilio-Signature": signature}}
	}
	inbound := url.Values{"MessageSid": {"SM0123456789abcdef0123456789abcdef"}, "AccountSid": {"AC0123"}, "From": {"+447700900999"},
		"To": {activePhone}, "Body": {"Your code is 246810"}, "NumMedia": {"0"}}
	with := func(k call, status int, code string) call { k.status, k.code = status, code; return k }
	form := func(change func(url.Values)) url.Values {
		f := url.Values{}
		for k, v := range inbound {
			f[k] = append([]string(nil), v...)
		}
		change(f)
		return f
	}
	hookOK := with(hook(inbound, ""), 200, "")
	if got := c.check(hookOK); string(got) != `<?xml version="1.0" encoding="UTF-8"?><Response></Response>` {
		t.Errorf("webhook answered %q", got)
	}

	encoded := "/api/sms/%2B15550001111"
	for _, k := range []call{
		hookOK, // a retried delivery is answered the same way
		with(hook(inbound, "bm90IHRoZSBzaWduYXR1cmU="), 403, "invalid_signature"),
		with(hook(inbound, "-"), 403, "invalid_signature"),
		with(hook(form(func(f url.Values) { f.Set("To", "+15559998888") }), ""), 404, "sms_number_not_found"),
		with(hook(form(func(f url.Values) { f.Set("To", disabledPhone) }), ""), 409, "sms_number_inactive"),
		with(hook(form(func(f url.Values) { f.Del("MessageSid") }), ""), 400, "invalid_parameter"),
		{method: "POST", path: webhook, route: webhook, body: `{"To": "` + activePhone + `"}`, status: 415, code: "unsupported_media_type",
			header: map[string]string{"X-Twilio-Signature": "x"}},

		{method: "POST", path: virtual, route: virtual, key: key, status: 201,
			body: `{"from_number": "+44 7700 900123", "to_number": "15550001111", "body": "Your verification code is 482913"}`},
		{method: "POST", path: virtual, route: virtual, key: key, status: 400, code: "invalid_parameter", body: `{"from_number": "12", "to_number": "` + activePhone + `"}`},
		{method: "POST", path: virtual, route: virtual, key: key, status: 400, code: "invalid_parameter", body: `{"from_number": 12}`},
		{method: "POST", path: virtual, route: virtual, key: key, status: 400, code: "invalid_json", body: `{"body":`},
		{method: "POST", path: virtual, route: virtual, key: key, status: 404, code: "sms_number_not_found", body: `{"from_number": "+15551230000", "to_number": "` + otherPhone + `", "body": "hi"}`},
		{method: "POST", path: virtual, route: virtual, key: key, status: 404, code: "sms_number_not_found", body: `{"from_number": "+15551230000", "to_number": "+15559998888", "body": "hi"}`},
		{method: "POST", path: virtual, route: virtual, key: key, status: 409, code: "sms_number_inactive", body: `{"from_number": "+15551230000", "to_number": "` + disabledPhone + `", "body": "hi"}`},
		{method: "POST", path: virtual, route: virtual, status: 401, code: "missing_api_key", body: `{}`},
		{method: "POST", path: virtual, route: virtual, key: key, status: 413, code: "body_too_large", contentLength: 9 << 20},

		{method: "GET", path: "/api/sms/" + activePhone + "/messages", route: messages, key: key, status: 200},
		{method: "GET", path: encoded + "/messages?limit=1&offset=0&body=CODE&from_number=%2B44&direction=inbound&from_date=2026-01-01T00:00:00Z&to_date=2099-01-01T00:00:00.000%2B02:00&wait=true",
			route: messages, key: key, status: 200},
		{method: "GET", path: "/api/sms/15550001111/messages?body=never&wait=1", route: messages, key: key, status: 307},
		{method: "GET", path: encoded + "/messages?limit=101&direction=sideways&from_date=yesterday&wait=maybe", route: messages, key: key, status: 400, code: "invalid_parameter"},
		{method: "GET", path: "/api/sms/12/messages", route: messages, key: key, status: 400, code: "invalid_parameter"},
		{method: "GET", path: "/api/sms/" + otherPhone + "/messages", route: messages, key: key, status: 404, code: "sms_number_not_found"},
		{method: "GET", path: "/api/sms/+15559998888/messages", route: messages, key: key, status: 404, code: "sms_number_not_found"},
		{method: "GET", path: "/api/sms/" + activePhone + "/messages", route: messages, status: 401, code: "missing_api_key"},

		{method: "GET", path: encoded + "/latest", route: latest, key: key, status: 200},
		{method: "GET", path: "/api/sms/" + disabledPhone + "/latest", route: latest, key: key, status: 404, code: "no_messages"},
		{method: "GET", path: "/api/sms/" + activePhone + "/latest", route: latest, key: other, status: 404, code: "sms_number_not_found"},
		{method: "GET", path: "/api/sms/abc/latest", route: latest, key: key, status: 400, code: "invalid_parameter"},
		{method: "GET", path: "/api/sms/" + activePhone + "/latest", route: latest, status: 401, code: "missing_api_key"},
	} {
		c.check(k)
	}

	// The webhook's message is stored once, with the provider's id.
	res := decode[struct {
		TotalCount int `json:"total_count"`
		Data       []struct {
			ProviderMessageID string `json:"provider_message_id"`
		} `json:"data"`
	}](t, c.check(call{method: "GET", path: "/api/sms/" + activePhone + "/messages?from_number=%2B447700900999", route: messages, key: key, status: 200}))
	if res.TotalCount != 1 || len(res.Data) != 1 || res.Data[0].ProviderMessageID != inbound.Get("MessageSid") {
		t.Errorf("webhook message as searched: %+v", res)
	}
}
