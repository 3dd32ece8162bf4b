package htmlcheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// rawData is the embedded data file read without the package's parser, so
// that the tests compare the check with the data as the file states it.
type rawData struct {
	Commit   string   `json:"commit"`
	Clients  []string `json:"clients"`
	Features []struct {
		Slug    string   `json:"slug"`
		Title   string   `json:"title"`
		Support []string `json:"support"`
	} `json:"features"`
}

func readRaw(t *testing.T) rawData {
	t.Helper()
	b, err := os.ReadFile("caniemail/data.json")
	if err != nil {
		t.Fatal(err)
	}
	var d rawData
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// expected is the clients the data file lists for slug with the given level.
func (d rawData) expected(t *testing.T, slug string, level byte) []string {
	t.Helper()
	for _, f := range d.Features {
		if f.Slug != slug {
			continue
		}
		var out []string
		for i, s := range f.Support {
			if s != "" && s[0] == level {
				out = append(out, d.Clients[i])
			}
		}
		return out
	}
	t.Fatalf("no feature %s in the data", slug)
	return nil
}

func fixture(t *testing.T, name string) *Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func featureOf(r *Report, slug string) *Feature {
	for i := range r.Features {
		if r.Features[i].Slug == slug {
			return &r.Features[i]
		}
	}
	return nil
}

func TestFixturesAgainstTheData(t *testing.T) {
	d := readRaw(t)
	for _, tc := range []struct {
		file, slug, name string
		line             int
		// known are facts of the data set at the pinned commit, stated here
		// so that a mistake in reading the file cannot pass unseen.
		knownUnsupported, knownPartial []string
	}{
		{"flex.html", "css-display-flex", "display:flex", 6, []string{"outlook.windows"}, []string{"gmail.android"}},
		{"grid.html", "css-display-grid", "display:grid", 2, []string{"outlook.windows"}, []string{"gmail.ios"}},
		{"grid.html", "css-grid-template", "", 2, nil, nil},
		{"position.html", "css-position", "position", 2, []string{"gmail.desktop-webmail", "outlook.windows"}, []string{"apple-mail.ios"}},
		{"media.html", "css-at-media", "@media", 3, []string{"outlook.windows"}, []string{"gmail.desktop-webmail"}},
		{"video.html", "html-video", "<video> element", 2, []string{"gmail.desktop-webmail", "outlook.windows", "yahoo.desktop-webmail"}, nil},
		{"background-image.html", "css-background-image", "background-image", 2, []string{"outlook.windows"}, []string{"yahoo.desktop-webmail"}},
	} {
		t.Run(tc.file+"/"+tc.slug, func(t *testing.T) {
			r := fixture(t, tc.file)
			f := featureOf(r, tc.slug)
			if f == nil {
				t.Fatalf("%s not reported; features: %v", tc.slug, names(r))
			}
			if tc.name != "" && f.Name != tc.name {
				t.Errorf("name %q, want %q", f.Name, tc.name)
			}
			if f.Kind != KindCSS && strings.HasPrefix(tc.slug, "css-") || f.Kind != KindHTML && strings.HasPrefix(tc.slug, "html-") {
				t.Errorf("kind %q for %s", f.Kind, tc.slug)
			}
			if want := d.expected(t, tc.slug, 'n'); !slices.Equal(f.Unsupported, want) {
				t.Errorf("unsupported %v, the data says %v", f.Unsupported, want)
			}
			if want := d.expected(t, tc.slug, 'a'); !slices.Equal(f.Partial, orEmpty(want)) {
				t.Errorf("partial %v, the data says %v", f.Partial, want)
			}
			for _, c := range tc.knownUnsupported {
				if !slices.Contains(f.Unsupported, c) {
					t.Errorf("%s not among the unsupported %v", c, f.Unsupported)
				}
			}
			for _, c := range tc.knownPartial {
				if !slices.Contains(f.Partial, c) {
					t.Errorf("%s not among the partial %v", c, f.Partial)
				}
			}
			if len(f.Places) == 0 || f.Places[0].Line != tc.line || f.Places[0].Column < 1 || f.Places[0].Text == "" {
				t.Errorf("places %+v, want the first on line %d", f.Places, tc.line)
			}
			if f.URL != "https://www.caniemail.com/features/"+tc.slug+"/" || f.Count < 1 {
				t.Errorf("url %q, count %d", f.URL, f.Count)
			}
			if r.Score <= 0 || r.Score >= 100 {
				t.Errorf("score %v for an email with unsupported features", r.Score)
			}
			if r.Data.Commit != d.Commit || r.Data.Licence != "MIT" {
				t.Errorf("data %+v", r.Data)
			}
		})
	}
}

func names(r *Report) []string {
	var out []string
	for _, f := range r.Features {
		out = append(out, f.Slug)
	}
	return out
}

func TestNotesNameTheirClients(t *testing.T) {
	r := fixture(t, "flex.html")
	f := featureOf(r, "css-display-flex")
	var found bool
	for _, n := range f.Notes {
		if strings.Contains(n.Text, "non Google accounts") {
			found = slices.Contains(n.Clients, "gmail.android") && slices.Contains(n.Clients, "gmail.ios")
		}
	}
	if !found {
		t.Errorf("the Gmail note is missing or names the wrong clients: %+v", f.Notes)
	}
}

func TestClientSummary(t *testing.T) {
	r := fixture(t, "video.html")
	var outlook *Family
	for i := range r.Clients {
		if r.Clients[i].Family == "outlook" {
			outlook = &r.Clients[i]
		}
		if i > 0 && r.Clients[i-1].Score > r.Clients[i].Score {
			t.Errorf("families not ordered by score: %v before %v", r.Clients[i-1].Score, r.Clients[i].Score)
		}
	}
	if outlook == nil || outlook.Name != "Outlook" || !slices.Contains(outlook.Unsupported, "<video> element") {
		t.Fatalf("outlook summary %+v", outlook)
	}
	var windows *Client
	for i := range outlook.Platforms {
		if outlook.Platforms[i].Client == "outlook.windows" {
			windows = &outlook.Platforms[i]
		}
	}
	if windows == nil || windows.Name != "Outlook Windows" || windows.Score >= 100 || !slices.Contains(windows.Unsupported, "<video> element") {
		t.Errorf("outlook.windows summary %+v", windows)
	}
	for _, f := range r.Clients {
		if f.Family == "rainloop" || f.Family == "wp-pl" {
			t.Errorf("%s is tested with too few features to be scored", f.Family)
		}
	}
}

func TestCleanEmailReportsNoIssue(t *testing.T) {
	r := fixture(t, "clean.html")
	if len(r.Features) != 0 {
		t.Errorf("features %v, want none", names(r))
	}
	if r.Score != 100 || r.Checked < 8 || r.Truncated {
		t.Errorf("score %v, checked %d, truncated %v; want 100, at least 8 (table, p, img ...), false", r.Score, r.Checked, r.Truncated)
	}
	b, _ := json.Marshal(r)
	if !strings.Contains(string(b), `"features":[]`) {
		t.Errorf("features is not an empty array: %s", b[:min(len(b), 200)])
	}
}

func TestNoHTML(t *testing.T) {
	for _, h := range []string{"", "  \r\n"} {
		r, err := Check(h)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Features) != 0 || r.Checked != 0 || r.Score != 100 || r.Features == nil {
			t.Errorf("%q: %+v", h, r)
		}
	}
}

func TestMalformedHTMLIsRead(t *testing.T) {
	r := fixture(t, "malformed.html")
	for _, slug := range []string{"css-display-grid", "css-display-flex", "html-video", "css-unit-calc"} {
		if featureOf(r, slug) == nil {
			t.Errorf("%s not found in malformed HTML; found %v", slug, names(r))
		}
	}
	if f := featureOf(r, "html-video"); f != nil && f.Count != 2 {
		t.Errorf("<video> counted %d times, want 2", f.Count)
	}
}

func TestHugeHTMLIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<div style="display:grid">`)
	for b.Len() <= MaxHTMLBytes {
		b.WriteString(`<p style="color:red">lorem ipsum dolor sit amet</p>`)
	}
	b.WriteString(`<video></video>`) // past the limit: not read
	start := time.Now()
	r, err := Check(b.String())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Truncated || r.HTMLBytes != b.Len() {
		t.Errorf("truncated %v, html_bytes %d; want true, %d", r.Truncated, r.HTMLBytes, b.Len())
	}
	if featureOf(r, "css-display-grid") == nil || featureOf(r, "html-video") != nil {
		t.Errorf("features %v: want the grid at the start and not the video past the limit", names(r))
	}
	if d := time.Since(start); d > MaxDuration+5*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestTimeLimit(t *testing.T) {
	// A deadline already past: the check stops at its first clock reading.
	r, err := check(strings.Repeat(`<div style="display:flex">x</div>`, 10000), time.Now().Add(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Truncated {
		t.Error("a check past its deadline is not marked truncated")
	}
	if f := featureOf(r, "css-display-flex"); f != nil && f.Count >= 10000 {
		t.Errorf("read all %d divs past the deadline", f.Count)
	}
}

func TestPathologicalCSSIsBounded(t *testing.T) {
	for name, css := range map[string]string{
		"braces": strings.Repeat("{", 1<<20),
		"parens": "a{b:" + strings.Repeat("(", 1<<20),
		"nested": strings.Repeat("a{", 1<<18) + strings.Repeat("}", 1<<18),
		"quotes": strings.Repeat(`"`, 1<<20),
		"colons": "a{" + strings.Repeat(":", 1<<20),
	} {
		start := time.Now()
		if _, err := Check("<style>" + css + "</style>"); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > MaxDuration+5*time.Second {
			t.Errorf("%s: took %v", name, d)
		}
	}
}

func TestCSSReading(t *testing.T) {
	for _, tc := range []struct {
		css  string
		want []string
		not  []string
	}{
		{`.a.b{color:red}`, []string{"css-selector-chaining", "css-selector-class"}, []string{"css-selector-descendant"}},
		{`div p{margin:0}`, []string{"css-selector-descendant", "css-selector-type", "css-margin"}, []string{"css-selector-chaining"}},
		{`a>b+c~d{x:y}`, []string{"css-selector-child", "css-selector-adjacent-sibling", "css-selector-general-sibling"}, []string{"css-selector-descendant"}},
		{`[data-x="{;}"] , #id{}`, []string{"css-selector-attribute", "css-selector-id", "css-selector-grouping"}, nil},
		{`a:hover::before, p:first-child, li:nth-child(2n+1), x:not(.y z){}`, []string{"css-pseudo-class-hover", "css-pseudo-element-before", "css-pseudo-class-first-child", "css-pseudo-class-nth-child", "css-pseudo-class-not"}, []string{"css-selector-descendant"}},
		{`a:after{content:"x"}`, []string{"css-pseudo-element-after"}, nil},
		{`@media (prefers-color-scheme: dark) and (-webkit-min-device-pixel-ratio: 2){.a{color:red}}`, []string{"css-at-media", "css-at-media-prefers-color-scheme", "css-at-media-device-pixel-ratio"}, nil},
		{`@media (any-hover: hover) and (orientation: landscape) {}`, []string{"css-at-media-hover", "css-at-media-orientation"}, nil},
		{`@font-face{font-family:X;src:url(x.woff2);font-weight:700} @import url("a.css"); @-webkit-keyframes spin{from{transform:rotate(0)}to{transform:rotate(1turn)}}`, []string{"css-at-font-face", "css-at-import", "css-at-keyframes", "css-transform"}, []string{"css-font-weight"}},
		{`@supports (display:grid){.a{display:none}}`, []string{"css-at-supports", "css-display-none"}, nil},
		{`.a{color:red;&:hover{color:blue}}`, []string{"css-nesting", "css-pseudo-class-hover"}, nil},
		{`.a{--brand:#123;color:var(--brand)}`, []string{"css-variables"}, nil},
		{`.a{width:calc(100% - 2rem)!important;height:clamp(1vh,2vw,3vmin);min-width:min(1ch,2ex)}`, []string{"css-unit-calc", "css-unit-percent", "css-unit-rem", "css-important", "css-function-clamp", "css-unit-vh", "css-unit-vw", "css-unit-vmin", "css-function-min", "css-unit-ch", "css-unit-ex", "css-min-width"}, nil},
		{`.a{color:#1e3e4f;background:rgba(0,0,0,.5) url(data:image/png;base64,AAA=) no-repeat}`, []string{"css-rgba", "css-background"}, []string{"css-unit-em", "css-background-image"}},
		{`.a{background:linear-gradient(red,blue);font-family:system-ui;color:oklch(70% .1 200)}`, []string{"css-linear-gradient", "css-sytem-ui", "css-modern-color"}, nil},
		{`.a{display:-webkit-flex;flex-flow:column wrap;-webkit-box-shadow:0 0 1px red}`, []string{"css-display-flex", "css-flex-direction", "css-flex-wrap", "css-box-shadow"}, []string{"css-display"}},
		{`.a{display:inline-block;flex-direction:row}`, []string{"css-display"}, []string{"css-flex-direction"}},
		{`<!-- .a{border-inline-color:red} --> /* x */`, []string{"css-border-inline-block-individual", "css-comments"}, nil},
		{`.a{margin-inline:0;padding-block-start:1px;inset:0;width:fit-content}`, []string{"css-margin-inline-block", "css-padding-block-start-end", "css-inset", "css-intrinsic-size"}, nil},
	} {
		r, err := Check("<style>" + tc.css + "</style>")
		if err != nil {
			t.Fatal(err)
		}
		got := foundSlugs(t, "<style>"+tc.css+"</style>")
		for _, s := range tc.want {
			if !slices.Contains(got, s) {
				t.Errorf("%s: %s not found; found %v", tc.css, s, got)
			}
		}
		for _, s := range tc.not {
			if slices.Contains(got, s) {
				t.Errorf("%s: %s found", tc.css, s)
			}
		}
		_ = r
	}
}

func TestHTMLReading(t *testing.T) {
	for _, tc := range []struct {
		html string
		want []string
		not  []string
	}{
		{`<!doctype html><html lang="en" dir="ltr"><body>`, []string{"html-doctype", "html-lang", "html-dir", "html-body"}, nil},
		{`<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "x">`, nil, []string{"html-doctype"}},
		{`<a href="#top">t</a><a href="mailto:a@b.example">m</a><a href="https://x.example/#y">w</a>`, []string{"html-anchor-links", "html-mailto-links"}, nil},
		{`<meta name="color-scheme" content="light dark"><!--[if mso]><![endif]-->`, []string{"html-meta-color-scheme", "html-comments"}, nil},
		{`<img src="a.webp"><img src="b.GIF?x=1"><img src="data:image/png;base64,AAAA"><img srcset="c.avif 1x, d.svg 2x">`, []string{"image-webp", "image-gif", "image-base64", "image-avif", "image-svg", "html-srcset"}, []string{"image-png"}},
		{`<form><input><input type="checkbox"><button>Go</button><button type="reset">R</button><select></select><textarea></textarea></form>`, []string{"html-form", "html-input-text", "html-input-checkbox", "html-button-submit", "html-button-reset", "html-select", "html-textarea"}, nil},
		{`<section><nav><ul><li>x</li></ul></nav></section><svg></svg><picture></picture><audio></audio>`, []string{"html-semantics", "html-lists", "html-svg", "html-picture", "html-audio"}, nil},
		{`<div role="presentation" aria-hidden="true" hidden inert>x</div><img usemap="#m"><map name="m"><area></map>`, []string{"html-role", "html-aria-hidden", "html-hidden", "css-inert-attribute", "html-image-maps"}, nil},
		{`<table width="600" align="center" background="bg.jpg"><td height="10" valign="top">`, []string{"html-width", "html-align", "html-background", "html-height", "html-valign"}, nil},
		{`<script>.a{display:grid}</script><p>.b{display:flex}</p>`, nil, []string{"css-display-grid", "css-display-flex"}},
	} {
		got := foundSlugs(t, tc.html)
		for _, s := range tc.want {
			if !slices.Contains(got, s) {
				t.Errorf("%s: %s not found; found %v", tc.html, s, got)
			}
		}
		for _, s := range tc.not {
			if slices.Contains(got, s) {
				t.Errorf("%s: %s found", tc.html, s)
			}
		}
	}
}

// foundSlugs is every feature the walk found, listed in the report or not.
func foundSlugs(t *testing.T, h string) []string {
	t.Helper()
	d, err := loadData()
	if err != nil {
		t.Fatal(err)
	}
	w := &walk{d: d, html: h, found: map[int]*found{}, deadline: time.Now().Add(time.Minute)}
	w.run()
	var out []string
	for i := range w.found {
		out = append(out, d.Features[i].Slug)
	}
	slices.Sort(out)
	return out
}

func TestPlacesCountCharacters(t *testing.T) {
	r, err := Check("<p>é\n  ü <video></video>")
	if err != nil {
		t.Fatal(err)
	}
	f := featureOf(r, "html-video")
	if f == nil || f.Places[0] != (Place{Line: 2, Column: 5, Text: "<video></video>"}) {
		t.Errorf("place %+v, want line 2 column 5", f)
	}
}

func TestRulesNameFeaturesOfTheData(t *testing.T) {
	d, err := loadData()
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, s := range ruleSlugs() {
		if _, ok := d.bySlug[s]; !ok {
			t.Errorf("rule names %s, which the data set does not have", s)
		}
		named[s] = true
	}
	// The features no rule reads, and why; a refreshed data set with a new
	// feature fails here until the feature is read or listed.
	unread := map[string]string{
		"bimi":      "a DNS record and a certificate, not HTML",
		"image-hdr": "HDR is not told by a file name",
	}
	for _, f := range d.Features {
		if !named[f.Slug] && unread[f.Slug] == "" {
			t.Errorf("no rule reads %s (%s)", f.Slug, f.Title)
		}
	}
}

func TestDataAttribution(t *testing.T) {
	lic, err := os.ReadFile("caniemail/LICENSE")
	if err != nil || !strings.HasPrefix(string(lic), "MIT License") || !strings.Contains(string(lic), "Rémi Parmentier") {
		t.Fatalf("the data set's licence is missing or not MIT: %v", err)
	}
	d := readRaw(t)
	if len(d.Commit) != 40 || len(d.Features) < 300 || len(d.Clients) < 40 {
		t.Errorf("commit %q, %d features, %d clients", d.Commit, len(d.Features), len(d.Clients))
	}
}
