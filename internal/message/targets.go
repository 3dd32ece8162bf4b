package message

import "strings"

// Target is one URL of a message that a reader's mail client loads or that a
// reader can follow: what a link check asks for.
type Target struct {
	URL string
	// Image is true for what the client loads with the message (an image, a
	// picture's source, a video's poster, a background, a CSS url()), false
	// for a link the reader follows.
	Image bool
}

// Targets returns the http and https URLs of a message, each once, in the
// order the HTML body has them, then those of the text body it did not have:
// the href of every anchor and image map area; the src and srcset of images
// and of picture sources, the poster of a video, the background attribute of
// tables and cells, the src of Outlook's VML fills and images, and every
// url() of the CSS in style attributes and style elements; and the URLs
// written out in the text body, or in the HTML's visible text when there is
// no text body. As for Links, character references are decoded, relative URLs
// and other schemes are left out, and at most 500 are listed.
func Targets(html, text string) []Target {
	l := targetList{seen: map[string]bool{}}
	if html != "" {
		if len(html) > maxScan {
			html = html[:maxScan]
		}
		r := &htmlReader{src: html, all: text == "", urls: text == "", space: true, targets: &l}
		r.read()
	}
	if len(text) > maxScan {
		text = text[:maxScan]
	}
	for _, u := range bareURLs(text) {
		l.add(u, false)
	}
	if l.list == nil {
		return []Target{}
	}
	return l.list
}

// targetList is a list of targets without repeats: a URL both linked to and
// loaded keeps the kind it was first met with.
type targetList struct {
	list []Target
	seen map[string]bool
}

// add lists raw, read as a browser reads an attribute's URL (cleanHref),
// when it is an absolute http or https URL not listed yet.
func (l *targetList) add(raw string, image bool) {
	u, ok := cleanHref(raw)
	if !ok || l.seen[u] || len(l.list) >= maxLinks {
		return
	}
	l.seen[u] = true
	l.list = append(l.list, Target{URL: u, Image: image})
}

// targetTag reads the start tag name, whose attributes start at src[j], for
// its targets, and acts on it as startTag does; it returns the index after
// the tag.
func (r *htmlReader) targetTag(name string, j int) int {
	var href, inputSrc string
	var hasHref, imageInput bool
	for {
		for j < len(r.src) && (isHTMLSpace(r.src[j]) || r.src[j] == '/') {
			j++
		}
		if j >= len(r.src) || r.src[j] == '>' {
			j++
			break
		}
		key, value, next := r.attribute(j)
		j = next
		switch key {
		case "href":
			if (name == "a" || name == "area") && !hasHref {
				href, hasHref = unescape(value), true
			}
		case "src":
			switch name {
			case "img", "source", "v:fill", "v:image", "v:imagedata":
				r.targets.add(unescape(value), true)
			case "input":
				inputSrc = unescape(value)
			}
		case "srcset":
			if name == "img" || name == "source" {
				srcset(unescape(value), func(u string) { r.targets.add(u, true) })
			}
		case "poster":
			if name == "video" {
				r.targets.add(unescape(value), true)
			}
		case "background":
			r.targets.add(unescape(value), true)
		case "style":
			r.targets.addCSS(unescape(value))
		case "type":
			imageInput = strings.EqualFold(strings.TrimSpace(value), "image")
		}
	}
	if name == "input" && imageInput {
		r.targets.add(inputSrc, true)
	}
	switch name {
	case "a":
		r.closeAnchor()
		if u, ok := cleanHref(href); ok && hasHref {
			r.anchor = &Link{Href: u}
			r.targets.add(u, false)
		}
		return j
	case "area":
		if hasHref {
			r.targets.add(href, false)
		}
		return j
	case "img":
		return j
	}
	return r.otherTag(name, j)
}

// addCSS lists the URLs of css's url() functions (CSS Values 4 section
// 4.5): quoted or not, with white space around them. Escapes are not
// decoded: a URL that needs them is rare in mail.
func (l *targetList) addCSS(css string) {
	for i := 0; i+4 <= len(css); {
		k := indexURLFunc(css[i:])
		if k < 0 {
			return
		}
		i += k + 4
		for i < len(css) && isHTMLSpace(css[i]) {
			i++
		}
		if i >= len(css) {
			return
		}
		var u string
		if q := css[i]; q == '"' || q == '\'' {
			end := strings.IndexByte(css[i+1:], q)
			if end < 0 {
				return
			}
			u, i = css[i+1:i+1+end], i+end+2
		} else {
			end := strings.IndexAny(css[i:], ") \t\n\r\f")
			if end < 0 {
				end = len(css) - i
			}
			u, i = css[i:i+end], i+end
		}
		l.add(u, true)
	}
}

// indexURLFunc returns the index of the first "url(" in s, in any letter
// case, or -1.
func indexURLFunc(s string) int {
	for i := 0; i+4 <= len(s); i++ {
		k := strings.IndexAny(s[i:], "uU")
		if k < 0 {
			return -1
		}
		i += k
		if i+4 <= len(s) && (s[i+1] == 'r' || s[i+1] == 'R') && (s[i+2] == 'l' || s[i+2] == 'L') && s[i+3] == '(' {
			return i
		}
	}
	return -1
}

// srcset calls fn with each candidate URL of a srcset attribute, read as the
// HTML Standard's algorithm reads it (section 4.8.4.3.10): candidates are
// separated by commas, a URL runs up to white space, and its descriptors
// ("2x", "640w") up to the next comma outside parentheses.
func srcset(v string, fn func(string)) {
	i := 0
	for {
		for i < len(v) && (isHTMLSpace(v[i]) || v[i] == ',') {
			i++
		}
		if i >= len(v) {
			return
		}
		start := i
		for i < len(v) && !isHTMLSpace(v[i]) {
			i++
		}
		u := v[start:i]
		if strings.HasSuffix(u, ",") {
			fn(strings.TrimRight(u, ","))
			continue
		}
		fn(u)
		depth := 0
		for ; i < len(v); i++ {
			switch v[i] {
			case '(':
				depth++
			case ')':
				if depth > 0 {
					depth--
				}
			}
			if v[i] == ',' && depth == 0 {
				break
			}
		}
	}
}
