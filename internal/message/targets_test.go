package message

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func link(u string) Target  { return Target{URL: u} }
func image(u string) Target { return Target{URL: u, Image: true} }

func TestTargets(t *testing.T) {
	for _, tc := range []struct {
		name       string
		html, text string
		want       []Target
	}{
		{name: "empty", want: []Target{}},
		{
			name: "anchors images and text",
			html: `<p><a href="https://shop.example/a?x=1&amp;y=2">A</a> <img src="https://cdn.example/logo.png" alt="Logo">
				<a href='https://shop.example/a?x=1&y=2'>again</a> <a href="mailto:a@b.example">mail</a> <a href="/relative">rel</a></p>`,
			text: "See https://shop.example/plain and https://shop.example/a?x=1&y=2.",
			want: []Target{link("https://shop.example/a?x=1&y=2"), image("https://cdn.example/logo.png"), link("https://shop.example/plain")},
		},
		{
			name: "srcset and picture",
			html: `<picture><source srcset="https://cdn.example/w.webp 1x, https://cdn.example/w2.webp 2x" type="image/webp">
				<img src="https://cdn.example/a.png" srcset="https://cdn.example/a,comma.png 640w,https://cdn.example/b.png,https://cdn.example/b2.png, https://cdn.example/c.png (max-width: 1px, x) 2x"></picture>`,
			want: []Target{image("https://cdn.example/w.webp"), image("https://cdn.example/w2.webp"), image("https://cdn.example/a.png"),
				image("https://cdn.example/a,comma.png"), image("https://cdn.example/b.png,https://cdn.example/b2.png"), image("https://cdn.example/c.png")},
		},
		{
			name: "css",
			html: `<head><style>.hero { background: URL( "https://cdn.example/hero.jpg" ) } .x{background-image:url(https://cdn.example/x.gif)}
				@font-face { src: url('https://fonts.example/f.woff2') }</style></head>
				<body><table background="https://cdn.example/bg.png"><tr><td style="background-image: url(&quot;https://cdn.example/cell.png&quot;)">x</td></tr></table>
				<div style="background:url(data:image/png;base64,AAAA)">data</div></body>`,
			want: []Target{image("https://cdn.example/hero.jpg"), image("https://cdn.example/x.gif"), image("https://fonts.example/f.woff2"),
				image("https://cdn.example/bg.png"), image("https://cdn.example/cell.png")},
		},
		{
			name: "outlook vml video map input",
			html: `<!--[if mso]><v:rect><v:fill type="frame" src="https://cdn.example/vml.png"/></v:rect><![endif]-->
				<v:image src="https://cdn.example/vmlimg.png"/>
				<video poster="https://cdn.example/poster.jpg"><source src="https://cdn.example/v.mp4"></video>
				<map><area href="https://shop.example/area" shape="rect"></map>
				<input type="image" src="https://cdn.example/button.png"><input type="text" src="https://cdn.example/no.png">`,
			want: []Target{image("https://cdn.example/vmlimg.png"), image("https://cdn.example/poster.jpg"),
				image("https://cdn.example/v.mp4"), link("https://shop.example/area"), image("https://cdn.example/button.png")},
		},
		{
			name: "html only: URLs in its text",
			html: `<p>Open https://shop.example/in-text now, or <a href="https://shop.example/btn">https://shop.example/btn</a></p>`,
			want: []Target{link("https://shop.example/in-text"), link("https://shop.example/btn")},
		},
		{
			name: "scripts and comments are not read",
			html: `<script>var u = "https://evil.example/s.js"; url(https://evil.example/x)</script><!-- <img src="https://x.example/c.png"> --><img src="https://cdn.example/ok.png">`,
			text: "x",
			want: []Target{image("https://cdn.example/ok.png")},
		},
		{
			name: "first kind wins",
			html: `<a href="https://cdn.example/big.png"><img src="https://cdn.example/big.png"></a>`,
			want: []Target{link("https://cdn.example/big.png")},
		},
		{
			name: "folded href",
			html: "<a href=\"https://shop.example/very/\n\tlong\">x</a>",
			want: []Target{link("https://shop.example/very/long")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Targets(tc.html, tc.text)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Targets:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// TestTargetsLimit: at most 500 targets, the first ones.
func TestTargetsLimit(t *testing.T) {
	var b strings.Builder
	for i := range 600 {
		fmt.Fprintf(&b, `<img src="https://cdn.example/%d.png">`, i)
	}
	got := Targets(b.String(), "")
	if len(got) != 500 || got[499].URL != "https://cdn.example/499.png" {
		t.Fatalf("%d targets, last %v", len(got), got[len(got)-1])
	}
}

// TestTargetsKeepLinks: reading for targets finds every link Links finds,
// over the extraction corpus.
func TestTargetsKeepLinks(t *testing.T) {
	for _, c := range extractCorpus {
		raw, err := os.ReadFile(filepath.Join("testdata/extract", c.file))
		if err != nil {
			t.Fatal(err)
		}
		m := Parse(raw)
		var urls []string
		for _, tg := range Targets(m.HTML, m.Text) {
			urls = append(urls, tg.URL)
		}
		for _, l := range Links(m.HTML, m.Text) {
			if !slices.Contains(urls, l.Href) {
				t.Errorf("%s: link %s not among the targets %v", c.file, l.Href, urls)
			}
		}
	}
}

func FuzzTargets(f *testing.F) {
	f.Add(`<img srcset="https://a.example/x 1x, , https://b.example/(y) 2x"><style>url(`, "https://c.example")
	f.Add(`<td style="background:url('https://a.example/`, "")
	f.Fuzz(func(t *testing.T, html, text string) {
		for _, tg := range Targets(html, text) {
			if schemeLen(tg.URL) == 0 || len(tg.URL) > maxHref {
				t.Fatalf("target %q", tg.URL)
			}
		}
	})
}
