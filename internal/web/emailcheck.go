package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/catchbox/catchbox/internal/htmlcheck"
	"github.com/catchbox/catchbox/internal/inbox"
)

// The HTML view's previews: the email at a phone's width, a tablet's or the
// panel's whole width, in the light or the dark colour scheme. The frame is
// the same sandboxed one (BodyHandler, same CSP, remote content blocked until
// allowed); only its width and its colour scheme change, and the frame's
// document is given the scheme (forceScheme).
var (
	previewWidths  = []struct{ value, label string }{{"", "Desktop"}, {"768", "Tablet, 768 px"}, {"375", "Phone, 375 px"}}
	previewSchemes = []struct{ value, label string }{{"", "Light"}, {"dark", "Dark"}}
)

// previewOption is one choice of the preview bar: a link to the view with it.
type previewOption struct {
	Label   string
	Href    string
	Current bool
}

// previewView is what the HTML tab shows of its previews.
type previewView struct {
	Width   string // "", "768" or "375"
	Scheme  string // "" (light) or "dark"
	Images  bool
	Widths  []previewOption
	Schemes []previewOption
	// ImagesHref toggles remote images, keeping width and scheme.
	ImagesHref string
	// FrameClass sizes and colours the frame; FrameSrc is its document.
	FrameClass string
	FrameSrc   string
	// PNG is the path of the screenshot of this preview, "" when the server
	// has no Chromium to take it.
	PNG string
}

// previewOf reads the preview asked for in the query: width=375|768 and
// scheme=dark; anything else is the desktop width and the light scheme.
func previewOf(r *http.Request, emailID string, screenshots bool) previewView {
	q := r.URL.Query()
	p := previewView{Images: q.Get("images") == "1"}
	for _, w := range previewWidths {
		if w.value != "" && q.Get("width") == w.value {
			p.Width = w.value
		}
	}
	if q.Get("scheme") == "dark" {
		p.Scheme = "dark"
	}
	href := func(width, scheme string, images bool) string {
		v := url.Values{"tab": {"html"}}
		if width != "" {
			v.Set("width", width)
		}
		if scheme != "" {
			v.Set("scheme", scheme)
		}
		if images {
			v.Set("images", "1")
		}
		return "?" + v.Encode()
	}
	for _, w := range previewWidths {
		p.Widths = append(p.Widths, previewOption{w.label, href(w.value, p.Scheme, p.Images), w.value == p.Width})
	}
	for _, s := range previewSchemes {
		p.Schemes = append(p.Schemes, previewOption{s.label, href(p.Width, s.value, p.Images), s.value == p.Scheme})
	}
	p.ImagesHref = href(p.Width, p.Scheme, !p.Images)
	classes := []string{"body"}
	if p.Width != "" {
		classes = append(classes, "w-"+p.Width)
	}
	if p.Scheme != "" {
		classes = append(classes, "scheme-"+p.Scheme)
	}
	p.FrameClass = strings.Join(classes, " ")
	src := url.Values{}
	if p.Images {
		src.Set("images", "1")
	}
	if p.Scheme != "" {
		src.Set("scheme", p.Scheme)
	}
	p.FrameSrc = "/emails/" + emailID + "/body"
	if len(src) > 0 {
		p.FrameSrc += "?" + src.Encode()
	}
	if screenshots {
		width, scheme := p.Width, p.Scheme
		if width == "" {
			width = "1280"
		}
		if scheme == "" {
			scheme = "light"
		}
		p.PNG = "/api/emails/" + emailID + "/preview.png?" + url.Values{"width": {width}, "scheme": {scheme}}.Encode()
	}
	return p
}

// checkView is the "Client support" tab: the HTML check with the clients
// named for people.
type checkView struct {
	*htmlcheck.Report
	Features []checkFeature
}

type checkFeature struct {
	htmlcheck.Feature
	UnsupportedNames string
	PartialNames     string
	Notes            []checkNote
}

type checkNote struct{ Text, Clients string }

func clientNames(ids []string) string {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = htmlcheck.ClientName(id)
	}
	return strings.Join(names, ", ")
}

// checkOf runs (or reads from the cache) the HTML check of an email the
// user may read.
func (d *Dashboard) checkOf(ctx context.Context, e inbox.StoredEmail) (checkView, error) {
	rep, err := d.HTMLCheck.CheckEmail(ctx, e)
	if err != nil {
		return checkView{}, err
	}
	v := checkView{Report: rep}
	for _, f := range rep.Features {
		cf := checkFeature{Feature: f, UnsupportedNames: clientNames(f.Unsupported), PartialNames: clientNames(f.Partial)}
		for _, n := range f.Notes {
			cf.Notes = append(cf.Notes, checkNote{Text: n.Text, Clients: clientNames(n.Clients)})
		}
		v.Features = append(v.Features, cf)
	}
	return v, nil
}
