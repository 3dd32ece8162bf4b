package httpapi_test

import (
	"bytes"
	"fmt"
	"image/png"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

func init() {
	openapi3filter.RegisterBodyDecoder("image/png", openapi3filter.FileBodyDecoder)
}

const previewRoute = "/api/emails/{emailId}/preview.png"

func previewPath(id, query string) string { return "/api/emails/" + id + "/preview.png" + query }

// TestOpenAPIPreviewWithoutChromium: a bad width or scheme is 400 first, then
// every preview is 501 previews_unavailable, whatever the email.
func TestOpenAPIPreviewWithoutChromium(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		c := newConformance(t, e)
		id := e.deliver(gridMessage, "john@default.localhost")
		for _, k := range []call{
			{path: previewPath(id, "?width=500"), key: e.key, status: 400, code: "invalid_parameter"},
			{path: previewPath(id, "?scheme=sepia"), key: e.key, status: 400, code: "invalid_parameter"},
			{path: previewPath(tenant.NewID(), "?width=1&scheme=x"), key: e.key, status: 400, code: "invalid_parameter"},
			{path: previewPath(id, ""), key: e.key, status: 501, code: "previews_unavailable"},
			{path: previewPath(id, "?width=375&scheme=dark"), key: e.key, status: 501, code: "previews_unavailable"},
			{path: previewPath(tenant.NewID(), "?width=768"), key: e.key, status: 501, code: "previews_unavailable"},
			{path: previewPath(id, ""), status: 401, code: "missing_api_key"},
		} {
			k.method, k.route = "GET", previewRoute
			c.check(k)
		}
	})
}

// TestOpenAPIPreview renders with Debian's Chromium (skipped, saying so,
// where there is none; CI installs it): PNGs of the asked width, nothing
// fetched from the loopback server the email names, and the refusals.
func TestOpenAPIPreview(t *testing.T) {
	chromium := os.Getenv("CATCHBOX_TEST_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no Chromium at %s (set CATCHBOX_TEST_CHROMIUM, or apt-get install chromium): previews not tested", chromium)
	}
	var mu sync.Mutex
	var hits []string
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	remote := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.URL.Path)
		mu.Unlock()
	})}
	go remote.Serve(ln)
	t.Cleanup(func() { remote.Close() })
	message := fmt.Sprintf("From: news@example.org\nTo: john@default.localhost\nSubject: Spring\nContent-Type: text/html; charset=utf-8\n\n"+
		"<h1>Spring</h1><img src=\"http://%[1]s/hero.png\" alt=\"\"><div style=\"background:url(http://%[1]s/bg.png)\">x</div>\n", ln.Addr())

	storetest.Each(t, func(t *testing.T, db *store.DB) {
		cfg := servertest.Config(t)
		cfg.Chromium = chromium
		e := newAPIEnvWith(t, db, cfg)
		c := newConformance(t, e)
		id := e.deliver(message, "john@default.localhost")
		for _, tc := range []struct {
			query string
			width int
		}{{"", 1280}, {"?width=375&scheme=dark", 375}, {"?width=768", 768}} {
			body := c.check(call{method: "GET", path: previewPath(id, tc.query), route: previewRoute, key: e.key, status: 200})
			if ct := c.header.Get("Content-Type"); ct != "image/png" {
				t.Errorf("%s: Content-Type %q", tc.query, ct)
			}
			img, err := png.Decode(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%s: not a PNG: %v", tc.query, err)
			}
			if b := img.Bounds(); b.Dx() != tc.width || b.Dy() < 1 || b.Dy() > 4000 {
				t.Errorf("%s: image %v, want %d px wide", tc.query, b, tc.width)
			}
		}
		for _, k := range []call{
			{path: previewPath(id, "?width=1024"), key: e.key, status: 400, code: "invalid_parameter"},
			{path: previewPath(id, ""), key: e.otherKey, status: 404, code: "not_found"},
			{path: previewPath(tenant.NewID(), ""), key: e.key, status: 404, code: "not_found"},
		} {
			k.method, k.route = "GET", previewRoute
			c.check(k)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(hits) != 0 {
			t.Errorf("a preview fetched from the email's remote server: %v", hits)
		}
	})
}

// newConformance is the conformance checker of e's server.
func newConformance(t *testing.T, e *apiEnv) *conformance {
	t.Helper()
	doc := loadDocument(t, e.srv.URL)
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	apiMD, _ := os.ReadFile("../../docs/api.md")
	return &conformance{t: t, e: e, doc: doc, router: router, apiMD: string(apiMD)}
}
