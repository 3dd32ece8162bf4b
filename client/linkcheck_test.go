package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/client"
	"github.com/catchbox/catchbox/client/internal/testserver"
)

// TestLinkCheck checks the links of a received email against a site on
// loopback (the test servers run in local mode, which allows it): a page, a
// moved page and a dead link.
func TestLinkCheck(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/", http.StatusFound)
		case "/dead":
			http.NotFound(w, r)
		}
	}))
	defer site.Close()
	eachServer(t, func(t *testing.T, s *testserver.Server, c *client.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		name := uniqueNamespace(t)
		if _, err := c.SaveNamespace(ctx, name, client.SettingsRequest{}); err != nil {
			t.Fatal(err)
		}
		body := "Content-Type: text/html; charset=utf-8\n\n" + strings.ReplaceAll(
			`<a href="SITE/">Home</a> <a href="SITE/moved">Moved</a> <a href="SITE/dead">Dead</a>`, "SITE", site.URL)
		sendMail(t, s.SMTP, "news@shop.example", "me@"+name+".localhost", "Links", body)
		e, err := c.WaitForEmail(ctx, name, client.Filter{Subject: "Links"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.LinkCheck(ctx, e.ID); client.ErrorCode(err) != "link_check_not_found" {
			t.Errorf("LinkCheck before any = %v; want link_check_not_found", err)
		}
		lc, err := c.WaitForLinkCheck(ctx, e.ID, 50*time.Millisecond)
		if err != nil || lc.Status != "completed" || lc.FinishedAt == nil || len(lc.Links) != 3 {
			t.Fatalf("WaitForLinkCheck = %+v, %v", lc, err)
		}
		moved := lc.Links[1]
		if moved.URL != site.URL+"/moved" || moved.StatusCode != 200 || moved.Redirects != 1 || moved.FinalURL != site.URL+"/" || moved.Kind != "link" {
			t.Errorf("moved link %+v", moved)
		}
		if b := lc.Broken(); len(b) != 1 || b[0].URL != site.URL+"/dead" || b[0].StatusCode != 404 || b[0].Error == "" {
			t.Errorf("Broken() = %+v", b)
		}
	})
}
