package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// TestPreviewsAndClientSupport: the HTML view's preview bar keeps width,
// scheme and images in its links, the frame's document is given the scheme,
// the Client support tab lists the HTML check's findings, and another
// organisation's user reaches none of it. Without Chromium the bar offers no
// screenshot.
func TestPreviewsAndClientSupport(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		id := e.deliver("default", "From: news@shop.example\nTo: a@default.localhost\nSubject: Grid\nContent-Type: text/html; charset=utf-8\n\n"+
			"<style>@media (prefers-color-scheme: dark) { p { color: red } }</style><div style=\"display:grid\"><p>Hi</p></div>\n")
		b := e.browser()
		b.signIn("alice@example.com")

		p := b.get("/emails/" + id + "?tab=html&width=375&scheme=dark&images=1")
		mustContain(t, p, `class="body w-375 scheme-dark"`, `src="/emails/`+id+`/body?images=1&amp;scheme=dark"`,
			`href="?images=1&amp;scheme=dark&amp;tab=html&amp;width=768"`, // tablet keeps the scheme and images
			`href="?images=1&amp;tab=html&amp;width=375"`,                 // light keeps the width
			`href="?scheme=dark&amp;tab=html&amp;width=375"`)              // blocking images keeps both
		mustLack(t, p, "Screenshot")
		// Anything else is the desktop width in the light scheme.
		mustContain(t, b.get("/emails/"+id+"?tab=html&width=1000&scheme=purple"), `class="body"`, `src="/emails/`+id+`/body"`)

		dark := b.get("/emails/" + id + "/body?scheme=dark")
		mustContain(t, dark, "@media (min-width: 0px) { p { color: red } }")
		mustContain(t, b.get("/emails/"+id+"/body"), "@media (max-width: -1px) { p { color: red } }")
		if csp := dark.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "allow-scripts") {
			t.Errorf("the dark body's policy: %q", csp)
		}

		p = b.get("/emails/" + id + "?tab=clients")
		mustContain(t, p, `aria-current="page">Client support`, "display:grid", "Outlook Windows", "https://www.caniemail.com/features/css-display-grid/")

		bob := e.browser()
		bob.signIn("bob@example.com")
		for _, path := range []string{"/emails/" + id + "?tab=clients", "/emails/" + id + "/body?scheme=dark"} {
			if p := bob.get(path); p.status != http.StatusNotFound {
				t.Errorf("bob reads %s: %d", path, p.status)
			}
		}
	})
}
