package deliverability

import (
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/catchbox/catchbox/internal/htmlcheck"
)

// ContentResult is the content section: what spam filters read in the
// message itself.
type ContentResult struct {
	Section
	SizeBytes       int  `json:"size_bytes"`
	HasText         bool `json:"has_text"`
	HasHTML         bool `json:"has_html"`
	HTMLBytes       int  `json:"html_bytes"`
	LinkCount       int  `json:"link_count"`
	ImageCount      int  `json:"image_count"`
	AttachmentCount int  `json:"attachment_count"`
	// BulkLooking is whether the message looks like bulk mail (a mailing
	// list, a newsletter), which receivers hold to stricter rules.
	BulkLooking bool `json:"bulk_looking"`
	// HTMLCheck sums up what the HTML check finds in the HTML body; nil
	// without one.
	HTMLCheck *HTMLCheckSummary `json:"html_check,omitempty"`
}

// HTMLCheckSummary is the HTML check's finding (GET
// /api/emails/{emailId}/html-check, which has it whole, with places and notes)
// as the content section refers to it. Which clients render the HTML is no
// matter for spam filters, so it raises no issue; it is here because the
// content section is where a sender reads about the body.
type HTMLCheckSummary struct {
	// Score is the check's overall score, 0 to 100.
	Score float64 `json:"score"`
	// Features names the features some client lacks, the most unsupported
	// first (at most maxHTMLCheckFeatures); FeatureCount counts them all.
	Features     []string `json:"features"`
	FeatureCount int      `json:"feature_count"`
	// Unsupported names those that Gmail, Outlook, Apple Mail or Yahoo! Mail
	// does not support on one of its platforms.
	Unsupported []string `json:"unsupported_by_major_clients"`
}

// maxHTMLCheckFeatures is how many feature names the summary lists.
const maxHTMLCheckFeatures = 20

// majorClients are the families the summary names features for.
var majorClients = []string{"gmail", "outlook", "apple-mail", "yahoo"}

// summarizeHTMLCheck checks the HTML body against the email clients.
func summarizeHTMLCheck(body string) *HTMLCheckSummary {
	rep, err := htmlcheck.Check(body)
	if err != nil {
		return nil
	}
	s := &HTMLCheckSummary{Score: rep.Score, FeatureCount: len(rep.Features), Features: []string{}, Unsupported: []string{}}
	for _, f := range rep.Features {
		if len(s.Features) < maxHTMLCheckFeatures {
			s.Features = append(s.Features, f.Name)
		}
		if slices.ContainsFunc(f.Unsupported, func(c string) bool {
			fam, _, _ := strings.Cut(c, ".")
			return slices.Contains(majorClients, fam)
		}) {
			s.Unsupported = append(s.Unsupported, f.Name)
		}
	}
	return s
}

// Thresholds of the content check (docs/api.md gives the reasons).
const (
	largeMessageBytes = 10 << 20 // many receivers refuse larger mail
	clippedHTMLBytes  = 102 << 10
	manyLinks         = 50
	imageOnlyText     = 100 // visible characters below which image mail is image-only
)

// link is one link of the message.
type link struct {
	href string
	host string // lower case, without port
	text string // the anchor's visible text; "" for a link found in plain text
}

// urlShorteners are hosts whose links hide their destination; filters
// distrust them because spam uses them to dodge URL blocklists.
var urlShorteners = []string{"bit.ly", "bitly.com", "tinyurl.com", "t.co", "goo.gl", "ow.ly", "is.gd", "buff.ly",
	"rebrand.ly", "cutt.ly", "shorturl.at", "tiny.cc", "rb.gy", "t.ly", "s.id", "v.gd", "bl.ink", "soo.gd", "clck.ru", "qr.ae"}

// blockedExtensions are attachment types Gmail refuses outright, as its help
// pages list them; other large receivers refuse most of the same.
var blockedExtensions = []string{"ade", "adp", "apk", "appx", "appxbundle", "bat", "cab", "chm", "cmd", "com", "cpl",
	"diagcab", "diagcfg", "diagpack", "dll", "dmg", "ex", "ex_", "exe", "hta", "img", "ins", "iso", "isp", "jar", "jnlp",
	"js", "jse", "lib", "lnk", "mde", "msc", "msi", "msix", "msixbundle", "msp", "mst", "nsh", "pif", "ps1", "scr", "sct",
	"shb", "sys", "vb", "vbe", "vbs", "vhd", "vxd", "wsc", "wsf", "wsh", "xll"}

// macroExtensions are Office documents that may carry macros.
var macroExtensions = []string{"docm", "dotm", "xlsm", "xltm", "xlam", "pptm", "potm", "ppam", "sldm"}

// checkContent reads the message's structure, links, attachments and
// headers; it asks no server.
func checkContent(e *env) (*ContentResult, []link) {
	m := e.msg
	r := &ContentResult{SizeBytes: len(e.in.Raw), HasText: strings.TrimSpace(m.Text) != "", HasHTML: strings.TrimSpace(m.HTML) != "",
		HTMLBytes: len(m.HTML), AttachmentCount: len(m.Attachments)}
	defer r.finish()
	h := readHTML(m.HTML)
	links := mergeLinks(h.links, textLinks(m.Text))
	r.LinkCount, r.ImageCount = len(links), h.images
	r.BulkLooking = bulkLooking(m.Headers, m.Text+" "+h.text)
	if r.HasHTML {
		r.HTMLCheck = summarizeHTMLCheck(m.HTML)
	}
	r.checkStructure(m.Text, h)
	r.checkSize()
	r.checkLinks(links)
	r.checkAttachments(e)
	r.checkHeaders(m.Headers)
	if len(r.Issues) == 0 {
		r.add(Pass, "content_ok", map[string]any{"size_bytes": r.SizeBytes, "link_count": r.LinkCount},
			"Nothing in the message's structure, links, attachments or headers is known to trouble spam filters.")
	}
	return r, links
}

func (r *ContentResult) checkStructure(text string, h htmlInfo) {
	visible := utf8.RuneCountInString(strings.Join(strings.Fields(h.text), " "))
	switch {
	case !r.HasText && !r.HasHTML && r.AttachmentCount == 0:
		r.add(Warning, "content_empty_body", nil, "The message has no body. Spam filters distrust empty mail: say in text what the message is about.")
	case !r.HasText && !r.HasHTML:
		r.add(Warning, "content_no_text_part", map[string]any{"attachment_count": r.AttachmentCount},
			"The message has attachments but no text. Add a text body saying what is attached and why.")
	case r.HasHTML && !r.HasText:
		r.add(Warning, "content_html_only", map[string]any{"html_bytes": r.HTMLBytes},
			"The message is HTML only, without a text/plain alternative; spam filters score that higher and some readers show nothing. Send multipart/alternative with a text part of the same content.")
	}
	if r.HasHTML && h.images > 0 && visible < imageOnlyText && utf8.RuneCountInString(strings.TrimSpace(text)) < imageOnlyText {
		r.add(Warning, "content_image_only", map[string]any{"image_count": h.images, "visible_characters": visible},
			"The message is mostly images with little text (%d characters beside %d images); filters score image-only mail as spam because its words cannot be read. Put the message's words in text, not in pictures.", visible, h.images)
	}
}

func (r *ContentResult) checkSize() {
	if r.SizeBytes > largeMessageBytes {
		r.add(Warning, "content_large_message", map[string]any{"size_bytes": r.SizeBytes},
			"The message is %.1f MB; many receivers refuse mail over 10 MB (Gmail 25 MB, counting the base64 growth). Link to large files instead of attaching them.", float64(r.SizeBytes)/(1<<20))
	}
	if r.HTMLBytes > clippedHTMLBytes {
		r.add(Warning, "content_html_clipped", map[string]any{"html_bytes": r.HTMLBytes},
			"The HTML body is %d KB; Gmail clips HTML over 102 KB behind a \"view entire message\" link, hiding the rest (an unsubscribe link too). Trim the markup (inline styles, comments) below 102 KB.", r.HTMLBytes>>10)
	}
}

func (r *ContentResult) checkLinks(links []link) {
	if len(links) > manyLinks {
		r.add(Warning, "content_many_links", map[string]any{"link_count": len(links)},
			"The message has %d links; filters score link-heavy mail as spam. Keep to the links a reader needs.", len(links))
	}
	var shortened []string
	for _, l := range links {
		if slices.Contains(urlShorteners, l.host) && !slices.Contains(shortened, l.href) {
			shortened = append(shortened, l.href)
		}
		if shown := shownDomain(l.text); shown != "" && validDomain(l.host) && orgDomain(shown) != orgDomain(l.host) {
			r.add(Warning, "content_link_text_mismatch", map[string]any{"text": l.text, "href": l.href, "shown_domain": shown, "target_domain": l.host},
				"A link shows %s but leads to %s; filters treat a link whose text names another domain than its target as phishing. Make the text name the real destination, or not look like an address.", shown, l.host)
		}
	}
	if len(shortened) > 0 {
		r.add(Warning, "content_url_shortener", map[string]any{"links": shortened},
			"The message links through a URL shortener (%s); shorteners hide the destination and spam uses them to dodge domain blocklists, so filters distrust them. Link to the destination directly.", strings.Join(shortened, ", "))
	}
}

func (r *ContentResult) checkAttachments(e *env) {
	for _, a := range e.msg.Attachments {
		ext := strings.ToLower(strings.TrimPrefix(path.Ext(a.Filename), "."))
		d := map[string]any{"filename": a.Filename, "content_type": a.ContentType, "extension": ext}
		switch {
		case slices.Contains(blockedExtensions, ext):
			r.add(Fail, "content_risky_attachment", d,
				"The attachment %q is of a type receivers block as a malware risk (.%s); Gmail refuses such mail outright, even zipped. Link to the file on a download page instead.", a.Filename, ext)
		case slices.Contains(macroExtensions, ext):
			r.add(Warning, "content_macro_attachment", d,
				"The attachment %q is an Office document that can carry macros (.%s); receivers quarantine or strip them. Send the macro-free format (.docx, .xlsx, .pptx) or a PDF.", a.Filename, ext)
		}
	}
}

// checkHeaders looks for the header fields receivers expect (RFC 5322
// section 3.6) and, on bulk-looking mail, the unsubscribe ones (RFC 2369,
// RFC 8058) that Gmail and Yahoo require of bulk senders.
func (r *ContentResult) checkHeaders(h map[string]string) {
	if strings.TrimSpace(h["message-id"]) == "" {
		r.add(Warning, "content_missing_message_id", nil,
			"The message has no Message-ID header (RFC 5322 section 3.6.4); Gmail rejects or junks such mail. Have the sending software add one, e.g. Message-ID: <unique-id@your-domain>.")
	}
	if strings.TrimSpace(h["date"]) == "" {
		r.add(Warning, "content_missing_date", nil,
			"The message has no Date header, which RFC 5322 section 3.6 requires; filters score that as spam. Have the sending software add the date it sent the message.")
	}
	if strings.TrimSpace(h["subject"]) == "" {
		r.add(Warning, "content_missing_subject", nil,
			"The message has no subject; filters score that as spam and readers skip it. Add a Subject header saying what the message is about.")
	}
	if !r.BulkLooking {
		return
	}
	lu := strings.TrimSpace(h["list-unsubscribe"])
	switch {
	case lu == "":
		r.add(Warning, "content_missing_list_unsubscribe", nil,
			"The message looks like bulk mail but has no List-Unsubscribe header (RFC 2369); Gmail and Yahoo require one from bulk senders. Add List-Unsubscribe: <https://your-domain/unsubscribe?id=...>, <mailto:unsubscribe@your-domain>.")
	case !strings.EqualFold(strings.TrimSpace(h["list-unsubscribe-post"]), "List-Unsubscribe=One-Click"):
		r.add(Warning, "content_missing_one_click_unsubscribe", map[string]any{"list_unsubscribe": lu},
			"The message has List-Unsubscribe but no List-Unsubscribe-Post: List-Unsubscribe=One-Click (RFC 8058); Gmail and Yahoo require one-click unsubscribe from bulk senders. Add that header, with an https URL in List-Unsubscribe that unsubscribes on a POST.")
	}
}

// bulkLooking reports whether the message looks like bulk mail: list or
// campaign headers, a bulk precedence, or an unsubscribe offer in the body.
func bulkLooking(h map[string]string, body string) bool {
	for _, k := range []string{"list-id", "list-unsubscribe", "feedback-id", "x-campaign-id", "x-mailgun-tag"} {
		if h[k] != "" {
			return true
		}
	}
	switch strings.ToLower(strings.TrimSpace(h["precedence"])) {
	case "bulk", "list", "junk":
		return true
	}
	return strings.Contains(strings.ToLower(body), "unsubscribe")
}

// htmlInfo is what the HTML body shows.
type htmlInfo struct {
	links  []link
	images int
	text   string // visible text, scripts and styles left out
}

// readHTML tokenizes the HTML body for its links (with their text), images
// and visible text.
func readHTML(body string) htmlInfo {
	var out htmlInfo
	if body == "" {
		return out
	}
	z := html.NewTokenizer(strings.NewReader(body))
	var text strings.Builder
	var anchor *link
	var anchorText strings.Builder
	skip := 0 // inside script or style
	for {
		switch z.Next() {
		case html.ErrorToken:
			out.text = text.String()
			return out
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			attrs := map[string]string{}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				attrs[string(k)] = string(v)
			}
			switch string(name) {
			case "a":
				if l, ok := newLink(attrs["href"]); ok {
					anchor = &l
					anchorText.Reset()
				}
			case "img":
				out.images++
			case "script", "style":
				skip++
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "a":
				if anchor != nil {
					anchor.text = strings.Join(strings.Fields(anchorText.String()), " ")
					out.links = append(out.links, *anchor)
					anchor = nil
				}
			case "script", "style":
				if skip > 0 {
					skip--
				}
			}
		case html.TextToken:
			if skip == 0 {
				t := string(z.Text())
				text.WriteString(t)
				text.WriteByte(' ')
				if anchor != nil {
					anchorText.WriteString(t)
				}
			}
		}
	}
}

var textURL = regexp.MustCompile(`(?i)\bhttps?://[^\s<>"'()\[\]]+`)

// textLinks returns the http(s) URLs of the plain text body.
func textLinks(text string) []link {
	var out []link
	for _, u := range textURL.FindAllString(text, 200) {
		if l, ok := newLink(strings.TrimRight(u, ".,;:!?")); ok {
			out = append(out, l)
		}
	}
	return out
}

// mergeLinks adds to the HTML body's links those of the text body that it
// does not have: the two parts of multipart/alternative carry the same links.
func mergeLinks(htmlLinks, text []link) []link {
	out := slices.Clone(htmlLinks)
	for _, l := range text {
		if !slices.ContainsFunc(htmlLinks, func(h link) bool { return h.href == l.href }) {
			out = append(out, l)
		}
	}
	return out
}

// newLink reads an http(s) link; other schemes (mailto:, cid:, #) are not
// links to a web site.
func newLink(href string) (link, bool) {
	href = strings.TrimSpace(href)
	u, err := url.Parse(href)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return link{}, false
	}
	return link{href: href, host: hostname(u.Hostname())}, true
}

var shownDomainRE = regexp.MustCompile(`(?i)^(?:https?://)?((?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,63})(?:[/:?#]\S*)?$`)

// shownDomain returns the domain a link's text displays, when the whole
// text is an address or a domain ("www.bank.example", "https://bank.example/login").
func shownDomain(text string) string {
	m := shownDomainRE.FindStringSubmatch(strings.TrimSpace(text))
	if m == nil {
		return ""
	}
	return strings.ToLower(m[1])
}
