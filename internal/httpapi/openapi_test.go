package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
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
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/httpapi"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// apiEnv is the whole HTTP API over a fresh store, as catchbox serve wires it,
// with two organisations and a few received emails.
//
// When a feature is wired into the server through httpapi.Deps.Extra, wire it
// here too: the route check below only sees what this router registers.
type apiEnv struct {
	t        *testing.T
	db       *store.DB
	tenants  *tenant.Service
	ingester *inbox.Ingester
	handler  http.Handler
	srv      *httptest.Server
	key      string // organisation "default"
	otherKey string // organisation "other"
	ns       tenant.Namespace
}

func newAPIEnv(t *testing.T, db *store.DB) *apiEnv {
	t.Helper()
	ctx := context.Background()
	e := &apiEnv{t: t, db: db}
	k := secret.New([]byte("openapi-test-secret-key-0123456789"))
	e.tenants = tenant.NewService(db, k, 30*24*time.Hour)
	key, err := e.tenants.Bootstrap(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	e.key = key
	other, err := e.tenants.CreateOrg(ctx, "other", 100, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, e.otherKey, err = e.tenants.CreateKey(ctx, other.ID, "", ""); err != nil {
		t.Fatal(err)
	}
	if e.ns, err = e.tenants.NamespaceByName(ctx, tenant.DefaultName); err != nil {
		t.Fatal(err)
	}
	hub := notify.NewHub()
	e.ingester = inbox.NewIngester(db, hub)
	t.Cleanup(e.ingester.Close)
	var base string
	api := &inbox.API{Tenants: e.tenants, Searcher: inbox.NewSearcher(db), Notifier: hub, Key: k,
		PublicURL: func() string { return base }, WaitHold: 200 * time.Millisecond}
	e.handler = httpapi.NewRouter(httpapi.Deps{Tenants: e.tenants, Inbox: api,
		SMTPEndpoint: func() (string, int) { return "127.0.0.1", 2525 }})
	e.srv = httptest.NewServer(e.handler)
	base = e.srv.URL
	t.Cleanup(e.srv.Close)
	return e
}

// deliver stores raw in the default namespace as the SMTP listener would.
func (e *apiEnv) deliver(raw string, rcpts ...string) string {
	e.t.Helper()
	ids, err := e.ingester.Deliver(context.Background(), []byte(strings.ReplaceAll(raw, "\n", "\r\n")),
		inbox.Envelope{ClientIP: "127.0.0.1", Helo: "client.test", MailFrom: "sender@example.com"},
		[]inbox.Target{{Namespace: e.ns, Recipients: rcpts}})
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
	status       int
	code         string // error code expected in the body
	// contentLength, when set, sends only headers claiming this body length, to
	// reach the body-size limit without uploading megabytes.
	contentLength int64
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
		req.Header.Set("Content-Type", "application/json")
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
		registered[method+" "+route] = true
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
