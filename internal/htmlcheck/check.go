// Package htmlcheck tells which email clients would not render an email's
// HTML as written: it finds the HTML elements and attributes, and the CSS
// properties, values, at-rules and selectors (in <style> elements and style
// attributes) that the email uses, and looks each up in the caniemail data
// set, embedded in the binary (caniemail/, MIT licence). The result lists
// every feature some client does not support or supports only in part, with
// the data set's notes and where the feature is in the HTML, a summary per
// client family and an overall score.
//
// Check is the analysis alone, for any HTML; Service.Check is the operation
// on a stored email, as a principal may ask it, with its results cached.
package htmlcheck

import (
	"cmp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// Limits of one check: HTML past MaxHTMLBytes is not read, and a check stops
// reading after MaxDuration; either way the report says it is Truncated.
const (
	MaxHTMLBytes = 4 << 20
	MaxDuration  = 2 * time.Second
	// maxPlaces is how many places of one feature a report gives (Count
	// counts them all).
	maxPlaces = 5
	// snippetBytes is how much of the HTML a place quotes.
	snippetBytes = 80
)

// Kinds of feature: the data set's CSS category is css, the rest (HTML,
// image formats, others) html.
const (
	KindHTML = "html"
	KindCSS  = "css"
)

// Report is the result of a check: the contract's html-check object.
type Report struct {
	// Features are the features the HTML uses that at least one client does
	// not support or supports in part, the most unsupported first.
	Features []Feature `json:"features"`
	// Clients is the summary per client family, the lowest score first.
	Clients []Family `json:"clients"`
	// Score is the mean of the families' scores, 0 to 100 (see Family.Score).
	Score float64 `json:"score"`
	// Checked is how many features of the data set the HTML uses, supported
	// everywhere or not.
	Checked int `json:"checked_features"`
	// HTMLBytes is the size of the HTML checked.
	HTMLBytes int `json:"html_bytes"`
	// Truncated tells that the HTML was larger than MaxHTMLBytes or took
	// longer than MaxDuration, and only its beginning was checked.
	Truncated bool `json:"truncated"`
	// Data names the data set and the version of it used.
	Data DataInfo `json:"data"`
}

// Feature is one feature the HTML uses and some client lacks.
type Feature struct {
	Slug string `json:"slug"`
	// Name is the data set's title ("display:grid", "<video> element").
	Name string `json:"name"`
	// Kind is html or css.
	Kind string `json:"kind"`
	// URL is the feature's page on caniemail.com: its tests and details.
	URL string `json:"url"`
	// Count is how many times the HTML uses it.
	Count int `json:"count"`
	// Places are where, the first maxPlaces.
	Places []Place `json:"places"`
	// Unsupported and Partial are the clients (family.platform, e.g.
	// outlook.windows) whose latest test found no support, or partial
	// support.
	Unsupported []string `json:"unsupported"`
	Partial     []string `json:"partial"`
	// Notes are the data set's notes on the feature, each with the clients
	// it is about (none: about the feature in general).
	Notes []Note `json:"notes"`
}

// Place is where a feature is used: the line and column (1-based, in
// characters) of the element, declaration, rule or selector, and the HTML
// there.
type Place struct {
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Text   string `json:"text"`
}

// Note is one of the data set's notes on a feature.
type Note struct {
	Text    string   `json:"text"`
	Clients []string `json:"clients"`
}

// Family is the summary of one client family (Gmail, Outlook).
type Family struct {
	Family string `json:"family"`
	Name   string `json:"name"`
	// Score is the mean of its platforms' scores.
	Score float64 `json:"score"`
	// Unsupported and Partial name the features (by Name) that one or more
	// of its platforms does not support, or supports in part.
	Unsupported []string `json:"unsupported"`
	Partial     []string `json:"partial"`
	Platforms   []Client `json:"platforms"`
}

// Client is the summary of one client: a family on one platform.
type Client struct {
	Client string `json:"client"`
	Name   string `json:"name"`
	// Score is the share of the features it was tested with that it
	// supports, from 0 to 100, a partial support counting half; 100 when
	// none of the features used was tested with it.
	Score       float64  `json:"score"`
	Unsupported []string `json:"unsupported"`
	Partial     []string `json:"partial"`
}

// DataInfo names the data set.
type DataInfo struct {
	Source  string `json:"source"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
	Licence string `json:"licence"`
}

// found is what the walk records of one feature.
type found struct {
	count  int
	places []int // offsets in the HTML
}

// walk is one check's reading of the HTML.
type walk struct {
	d        *dataSet
	html     string
	found    map[int]*found // by feature index
	deadline time.Time
	steps    int
	expired  bool
}

// Check analyses an HTML document. An empty one yields a report without
// features. It never fails: malformed HTML and CSS are read as a browser
// would, past what cannot be read.
func Check(htmlDoc string) (*Report, error) {
	return check(htmlDoc, time.Now().Add(MaxDuration))
}

func check(htmlDoc string, deadline time.Time) (*Report, error) {
	d, err := loadData()
	if err != nil {
		return nil, err
	}
	r := &Report{HTMLBytes: len(htmlDoc), Data: DataInfo{Source: d.Source, Commit: d.Commit, Date: d.Date, Licence: d.Licence}}
	if len(htmlDoc) > MaxHTMLBytes {
		htmlDoc = htmlDoc[:MaxHTMLBytes]
		r.Truncated = true
	}
	w := &walk{d: d, html: htmlDoc, found: map[int]*found{}, deadline: deadline}
	if strings.TrimSpace(htmlDoc) != "" {
		w.run()
	}
	if w.expired {
		r.Truncated = true
	}
	w.report(r)
	return r, nil
}

// alive tells whether the check may go on; it reads the clock every 64 calls.
func (w *walk) alive() bool {
	if w.expired {
		return false
	}
	w.steps++
	if w.steps%64 == 0 && time.Now().After(w.deadline) {
		w.expired = true
	}
	return !w.expired
}

func (w *walk) hit(slug string, off int) {
	i, ok := w.d.bySlug[slug]
	if !ok {
		return
	}
	f := w.found[i]
	if f == nil {
		f = &found{}
		w.found[i] = f
	}
	f.count++
	if len(f.places) < maxPlaces {
		f.places = append(f.places, off)
	}
}

// run tokenizes the HTML, keeping the offset of each token.
func (w *walk) run() {
	z := html.NewTokenizer(strings.NewReader(w.html))
	off := 0
	inStyle := false
	for w.alive() {
		tt := z.Next()
		if tt == html.ErrorToken {
			return
		}
		start := off
		raw := z.Raw()
		off += len(raw)
		switch tt {
		case html.DoctypeToken:
			if strings.EqualFold(strings.TrimSpace(string(z.Text())), "html") {
				w.hit(slugDoctype, start)
			}
		case html.CommentToken:
			w.hit(slugHTMLComments, start)
		case html.StartTagToken, html.SelfClosingTagToken:
			name := w.element(z, start)
			inStyle = name == "style" && tt == html.StartTagToken
		case html.EndTagToken:
			inStyle = false
		case html.TextToken:
			if inStyle {
				scanStyleSheet(string(raw), start, w.hit, w.alive)
			}
		}
	}
}

// element reads a start tag at offset off and returns its name.
func (w *walk) element(z *html.Tokenizer, off int) string {
	nameB, more := z.TagName()
	name := string(nameB)
	for _, slug := range elementRules[name] {
		w.hit(slug, off)
	}
	attrs := map[string]string{}
	for more {
		var k, v []byte
		k, v, more = z.TagAttr()
		key := string(k)
		if _, dup := attrs[key]; dup {
			continue // a browser keeps the first
		}
		attrs[key] = string(v)
		for _, slug := range attributeRules[key] {
			w.hit(slug, off)
		}
		if key == "style" {
			scanStyleAttr(string(v), off, w.hit, w.alive)
		}
	}
	switch name {
	case "input":
		t, ok := attrs["type"]
		if !ok {
			w.hit(slugInputText, off)
		} else if slug := inputTypes[strings.ToLower(strings.TrimSpace(t))]; slug != "" {
			w.hit(slug, off)
		}
	case "button":
		t, ok := attrs["type"]
		if !ok {
			w.hit(slugButtonSubmit, off)
		} else if slug := buttonTypes[strings.ToLower(strings.TrimSpace(t))]; slug != "" {
			w.hit(slug, off)
		}
	case "a":
		href := strings.TrimSpace(attrs["href"])
		switch {
		case strings.HasPrefix(href, "#") && len(href) > 1:
			w.hit(slugAnchorLinks, off)
		case len(href) >= 7 && strings.EqualFold(href[:7], "mailto:"):
			w.hit(slugMailtoLinks, off)
		}
	case "meta":
		switch strings.ToLower(strings.TrimSpace(attrs["name"])) {
		case "color-scheme", "supported-color-schemes":
			w.hit(slugMetaColorScheme, off)
		}
	case "img":
		w.image(attrs["src"], off)
		for _, c := range strings.Split(attrs["srcset"], ",") {
			if f := strings.Fields(c); len(f) > 0 {
				w.image(f[0], off)
			}
		}
	case "source":
		for _, c := range strings.Split(attrs["srcset"], ",") {
			if f := strings.Fields(c); len(f) > 0 {
				w.image(f[0], off)
			}
		}
	}
	return name
}

// image reports the format of an image source: a data: URL's base64, or the
// file name's extension.
func (w *walk) image(src string, off int) {
	src = strings.TrimSpace(src)
	if src == "" {
		return
	}
	if len(src) > 5 && strings.EqualFold(src[:5], "data:") {
		head, _, _ := strings.Cut(src[5:], ",")
		if strings.HasSuffix(strings.ToLower(head), ";base64") {
			w.hit(slugBase64Image, off)
		}
		return
	}
	p := src
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 && !strings.Contains(p[i:], "/") {
		if slug := imageFormats[strings.ToLower(p[i+1:])]; slug != "" {
			w.hit(slug, off)
		}
	}
}

// clientTally counts one client's support of the features found.
type clientTally struct {
	tested      int
	points      float64 // 1 per supported feature, ½ per partial one
	unsupported []string
	partial     []string
}

// report fills r from the features found.
func (w *walk) report(r *Report) {
	d := w.d
	r.Checked = len(w.found)
	tallies := make([]clientTally, len(d.Clients))
	idx := make([]int, 0, len(w.found))
	for i := range w.found {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	places := w.places()
	for _, fi := range idx {
		f := &d.Features[fi]
		fe := Feature{Slug: f.Slug, Name: f.Title, Kind: KindHTML, URL: featureURL(f.Slug), Count: w.found[fi].count,
			Unsupported: []string{}, Partial: []string{}, Notes: []Note{}}
		if f.Category == "css" {
			fe.Kind = KindCSS
		}
		noteClients := map[string][]string{}
		for ci, s := range f.support {
			t := &tallies[ci]
			client := d.Clients[ci]
			switch s.level {
			case levelSupported:
				t.tested++
				t.points++
			case levelPartial:
				t.tested++
				t.points += 0.5
				t.partial = append(t.partial, f.Title)
				fe.Partial = append(fe.Partial, client)
			case levelUnsupported:
				t.tested++
				t.unsupported = append(t.unsupported, f.Title)
				fe.Unsupported = append(fe.Unsupported, client)
			default:
				continue
			}
			for _, n := range s.notes {
				noteClients[n] = append(noteClients[n], client)
			}
		}
		if len(fe.Unsupported) == 0 && len(fe.Partial) == 0 {
			continue
		}
		if f.Note != "" {
			fe.Notes = append(fe.Notes, Note{Text: f.Note, Clients: []string{}})
		}
		nums := make([]string, 0, len(noteClients))
		for n := range noteClients {
			nums = append(nums, n)
		}
		sort.Slice(nums, func(a, b int) bool { return noteLess(nums[a], nums[b]) })
		for _, n := range nums {
			if text := f.Notes[n]; text != "" {
				fe.Notes = append(fe.Notes, Note{Text: text, Clients: noteClients[n]})
			}
		}
		for _, off := range w.found[fi].places {
			fe.Places = append(fe.Places, places[off])
		}
		r.Features = append(r.Features, fe)
	}
	slices.SortStableFunc(r.Features, func(a, b Feature) int {
		return cmp.Or(cmp.Compare(len(b.Unsupported), len(a.Unsupported)), cmp.Compare(len(b.Partial), len(a.Partial)), cmp.Compare(a.Name, b.Name))
	})
	if r.Features == nil {
		r.Features = []Feature{}
	}
	r.Clients = w.families(tallies)
	r.Score = 100
	if len(r.Clients) > 0 {
		sum := 0.0
		for _, f := range r.Clients {
			sum += f.Score
		}
		r.Score = round1(sum / float64(len(r.Clients)))
	}
}

// families sums the clients' tallies up by family, for the families the data
// set tests broadly (dataSet.broad). A client not tested with any feature
// found is left out, unless none was (an email using nothing the data set
// knows): then every client is listed with a score of 100.
func (w *walk) families(tallies []clientTally) []Family {
	d := w.d
	anyTested := false
	for ci, t := range tallies {
		fam, _, _ := strings.Cut(d.Clients[ci], ".")
		anyTested = anyTested || d.broad[fam] && t.tested > 0
	}
	var out []Family
	byFamily := map[string]int{}
	for ci, client := range d.Clients {
		t := tallies[ci]
		fam, _, _ := strings.Cut(client, ".")
		if !d.broad[fam] || anyTested && t.tested == 0 {
			continue
		}
		i, ok := byFamily[fam]
		if !ok {
			i = len(out)
			byFamily[fam] = i
			out = append(out, Family{Family: fam, Name: d.familyName(fam), Unsupported: []string{}, Partial: []string{}})
		}
		c := Client{Client: client, Name: d.clientName(client), Score: 100,
			Unsupported: orEmpty(t.unsupported), Partial: orEmpty(t.partial)}
		if t.tested > 0 {
			c.Score = round1(100 * t.points / float64(t.tested))
		}
		f := &out[i]
		f.Platforms = append(f.Platforms, c)
		for _, n := range t.unsupported {
			if !slices.Contains(f.Unsupported, n) {
				f.Unsupported = append(f.Unsupported, n)
			}
		}
		for _, n := range t.partial {
			if !slices.Contains(f.Partial, n) {
				f.Partial = append(f.Partial, n)
			}
		}
	}
	for i := range out {
		sum := 0.0
		for _, c := range out[i].Platforms {
			sum += c.Score
		}
		out[i].Score = round1(sum / float64(len(out[i].Platforms)))
		slices.Sort(out[i].Unsupported)
		slices.Sort(out[i].Partial)
	}
	slices.SortStableFunc(out, func(a, b Family) int {
		return cmp.Or(cmp.Compare(a.Score, b.Score), cmp.Compare(a.Family, b.Family))
	})
	if out == nil {
		out = []Family{}
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func round1(f float64) float64 { return float64(int(f*10+0.5)) / 10 }

// noteLess orders note numbers as numbers.
func noteLess(a, b string) bool {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA != nil || errB != nil {
		return a < b
	}
	return x < y
}

// places turns the offsets of the places found into lines and columns, in
// one reading of the HTML.
func (w *walk) places() map[int]Place {
	var offs []int
	for _, f := range w.found {
		offs = append(offs, f.places...)
	}
	slices.Sort(offs)
	offs = slices.Compact(offs)
	out := make(map[int]Place, len(offs))
	h := w.html
	pos, line, col := 0, 1, 1
	for _, off := range offs {
		off = min(off, len(h))
		for pos < off {
			r, n := utf8.DecodeRuneInString(h[pos:])
			pos += n
			if r == '\n' {
				line++
				col = 1
			} else {
				col++
			}
		}
		end := min(off+snippetBytes, len(h))
		if nl := strings.IndexByte(h[off:end], '\n'); nl >= 0 {
			end = off + nl
		}
		for end > off && end < len(h) && !utf8.RuneStart(h[end]) {
			end--
		}
		out[off] = Place{Line: line, Column: col, Text: strings.Join(strings.Fields(h[off:end]), " ")}
	}
	return out
}
