package client_test

import (
	"context"
	"errors"
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
