package client_test

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"os"
	"slices"
	"testing"

	"github.com/catchbox/catchbox/client"
	"github.com/catchbox/catchbox/client/internal/testserver"
)

const gridBody = `Content-Type: text/html; charset=utf-8

<html><head><style>@media (max-width: 600px) { .col { display: block } }</style></head>
<body><div style="display:grid"><video src="https://media.example/a.mp4"></video></div></body></html>
`

func TestHTMLCheck(t *testing.T) {
	eachServer(t, func(t *testing.T, s *testserver.Server, c *client.Client) {
		ctx := context.Background()
		name := uniqueNamespace(t)
		if _, err := c.SaveNamespace(ctx, name, client.SettingsRequest{}); err != nil {
			t.Fatal(err)
		}
		to := "news@" + name + ".localhost"
		sendMail(t, s.SMTP, "news@app.example", to, "Columns", gridBody)
		e, err := c.WaitForEmail(ctx, name, client.Filter{To: to})
		if err != nil {
			t.Fatal(err)
		}
		h, err := c.HTMLCheck(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		grid, ok := h.Feature("display:grid")
		if !ok || grid.Kind != "css" || !slices.Contains(grid.Unsupported, "outlook.windows") || len(grid.Places) == 0 || grid.Places[0].Line != 2 {
			t.Errorf("display:grid = %+v, %v", grid, ok)
		}
		for _, n := range []string{"<video> element", "@media"} {
			if _, ok := h.Feature(n); !ok {
				t.Errorf("%s not reported", n)
			}
		}
		if h.Score <= 0 || h.Score >= 100 || len(h.Clients) == 0 || h.Data.Licence != "MIT" {
			t.Errorf("score %v, %d families, data %+v", h.Score, len(h.Clients), h.Data)
		}

		var apiErr *client.Error
		if _, err := c.HTMLCheck(ctx, "00000000-0000-7000-8000-000000000000"); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
			t.Errorf("unknown email: %v", err)
		}
	})
}

// TestEmailPreview: the shared servers have no Chromium (501 after the query
// is checked); a server of the test's own with Debian's renders PNGs of the
// asked width.
func TestEmailPreview(t *testing.T) {
	ctx := context.Background()
	var apiErr *client.Error
	eachServer(t, func(t *testing.T, s *testserver.Server, c *client.Client) {
		sendMail(t, s.SMTP, "news@app.example", "preview@default.localhost", "Preview", gridBody)
		e, err := c.WaitForEmail(ctx, "default", client.Filter{To: "preview@default.localhost"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.EmailPreview(ctx, e.ID, client.PreviewOptions{Width: 500}); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
			t.Errorf("width 500: %v", err)
		}
		if _, err := c.EmailPreview(ctx, e.ID, client.PreviewOptions{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 501 || apiErr.Code != "previews_unavailable" {
			t.Errorf("without Chromium: %v", err)
		}
	})

	chromium := "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no Chromium at %s: rendering through the client not tested", chromium)
	}
	s, err := testserver.Start(binary, "", hold, "CATCHBOX_CHROMIUM="+chromium)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	c, err := client.New(s.URL, testserver.Key)
	if err != nil {
		t.Fatal(err)
	}
	sendMail(t, s.SMTP, "news@app.example", "preview@default.localhost", "Preview", gridBody)
	e, err := c.WaitForEmail(ctx, "default", client.Filter{To: "preview@default.localhost"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.EmailPreview(ctx, e.ID, client.PreviewOptions{Width: 375, Scheme: "dark"})
	if err != nil {
		t.Fatalf("preview: %v\n%s", err, s.Logs())
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil || img.Bounds().Dx() != 375 {
		t.Errorf("preview: %v, %v", img.Bounds(), err)
	}
}
