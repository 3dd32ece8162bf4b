package web

import (
	"regexp"
	"strings"

	"golang.org/x/net/html"
)

// The dashboard's frame shows an email in the colour scheme the preview asks
// for, whatever the viewer's own system prefers. A page cannot set the
// prefers-color-scheme its frames see (Chromium ignores the <iframe>'s
// color-scheme for it), so the email's HTML is given the scheme instead: in
// its style sheets and media attributes, (prefers-color-scheme: dark) and
// (prefers-color-scheme: light) become media conditions that always or never
// hold, and a color-scheme that offers both ("light dark", in CSS or in the
// color-scheme meta tag) becomes the one asked for. Nothing else of the HTML
// changes; its bytes outside those places are passed through as received.
// The screenshots of GET /api/emails/{emailId}/preview.png need none of this:
// they ask Chromium to emulate the scheme.

var (
	schemeQuery = regexp.MustCompile(`(?i)\(\s*prefers-color-scheme\s*:\s*(dark|light)\s*\)`)
	schemeDecl  = regexp.MustCompile(`(?i)((?:^|[;{\s"'])color-scheme\s*:\s*)([^;}"']*)`)
)

// Media conditions that always hold, and never do.
const (
	mediaAlways = "(min-width: 0px)"
	mediaNever  = "(max-width: -1px)"
)

// forceScheme returns the HTML with its colour-scheme choices made for scheme
// (dark or light).
func forceScheme(doc, scheme string) string {
	if !strings.Contains(strings.ToLower(doc), "color-scheme") {
		return doc
	}
	var out strings.Builder
	out.Grow(len(doc))
	z := html.NewTokenizer(strings.NewReader(doc))
	inStyle := false
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out.String()
		}
		raw := string(z.Raw())
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			name, more := z.TagName()
			inStyle = string(name) == "style" && tt == html.StartTagToken
			if strings.Contains(strings.ToLower(raw), "color-scheme") {
				raw = schemeCSS(raw, scheme)
				if string(name) == "meta" && schemeMetaName(z, more) {
					raw = metaContent.ReplaceAllStringFunc(raw, func(m string) string {
						p := metaContent.FindStringSubmatch(m)
						return p[1] + pickScheme(p[2], scheme)
					})
				}
			}
		case html.EndTagToken:
			inStyle = false
		case html.TextToken:
			if inStyle {
				raw = schemeCSS(raw, scheme)
			}
		}
		out.WriteString(raw)
	}
}

// schemeCSS makes the choices of CSS text (a style sheet, or a tag whose
// style or media attribute may hold some).
func schemeCSS(css, scheme string) string {
	css = schemeQuery.ReplaceAllStringFunc(css, func(m string) string {
		if strings.Contains(strings.ToLower(m), scheme) {
			return mediaAlways
		}
		return mediaNever
	})
	return schemeDecl.ReplaceAllStringFunc(css, func(m string) string {
		p := schemeDecl.FindStringSubmatch(m)
		return p[1] + pickScheme(p[2], scheme)
	})
}

var metaContent = regexp.MustCompile(`(?i)(\bcontent\s*=\s*["']?)([^"'>]*)`)

// schemeMetaName tells whether the meta tag being read is the color-scheme
// meta tag (or Apple Mail's older supported-color-schemes).
func schemeMetaName(z *html.Tokenizer, more bool) bool {
	for more {
		var k, v []byte
		k, v, more = z.TagAttr()
		if string(k) == "name" {
			n := strings.ToLower(strings.TrimSpace(string(v)))
			return n == "color-scheme" || n == "supported-color-schemes"
		}
	}
	return false
}

// pickScheme returns scheme for a color-scheme value that offers both light
// and dark, and the value unchanged otherwise.
func pickScheme(value, scheme string) string {
	v := strings.ToLower(value)
	if strings.Contains(v, "light") && strings.Contains(v, "dark") {
		trail := value[len(strings.TrimRight(value, " \t\r\n")):]
		if strings.Contains(v, "!important") {
			return scheme + " !important" + trail
		}
		return scheme + trail
	}
	return value
}
