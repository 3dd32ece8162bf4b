package deliverability

import (
	"slices"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/htmlcheck"
)

// TestContentFixtures reads the fixture messages field by field.
func TestContentFixtures(t *testing.T) {
	for _, tc := range []struct {
		fixture                    string
		hasText, hasHTML, bulk     bool
		links, images, attachments int
		codes                      []string
		status                     Status
	}{
		{"plain.eml", true, true, false, 1, 0, 0, []string{"content_ok"}, Pass},
		{"lunch.eml", true, false, false, 0, 0, 0, []string{"content_ok"}, Pass},
		{"newsletter.eml", false, true, true, 3, 1, 0, []string{"content_html_only", "content_image_only", "content_link_text_mismatch",
			"content_url_shortener", "content_missing_list_unsubscribe"}, Warning},
		{"attachment.eml", true, false, false, 0, 0, 2, []string{"content_risky_attachment", "content_macro_attachment",
			"content_missing_message_id", "content_missing_date"}, Fail},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			raw := fixture(t, tc.fixture)
			r, _ := checkContent(newEnv(Input{Raw: raw}, nil))
			if r.SizeBytes != len(raw) || r.HasText != tc.hasText || r.HasHTML != tc.hasHTML || r.BulkLooking != tc.bulk ||
				r.LinkCount != tc.links || r.ImageCount != tc.images || r.AttachmentCount != tc.attachments {
				t.Errorf("%+v", r)
			}
			if !slices.Equal(r.codes(), tc.codes) || r.Status != tc.status {
				t.Fatalf("codes %v status %s, want %v %s", r.codes(), r.Status, tc.codes, tc.status)
			}
		})
	}
}

func TestContentEvidence(t *testing.T) {
	r, _ := checkContent(newEnv(Input{Raw: fixture(t, "newsletter.eml")}, nil))
	d := details(t, r.issue("content_link_text_mismatch"))
	if d["shown_domain"] != "www.mybank.test" || d["target_domain"] != "track.evil.test" || d["href"] != "https://track.evil.test/login" {
		t.Errorf("mismatch details %v", d)
	}
	if d := details(t, r.issue("content_url_shortener")); !slices.Equal(toStrings(d["links"]), []string{"https://bit.ly/3xDeal"}) {
		t.Errorf("shortener details %v", d)
	}
	r, _ = checkContent(newEnv(Input{Raw: fixture(t, "attachment.eml")}, nil))
	if d := details(t, r.issue("content_risky_attachment")); d["filename"] != "invoice.pdf.exe" || d["extension"] != "exe" {
		t.Errorf("attachment details %v", d)
	}
}

// TestContentRules covers the rules the fixtures do not reach.
func TestContentRules(t *testing.T) {
	big := strings.Repeat("<p>line of a long newsletter</p>\n", 4000)
	for _, tc := range []struct {
		name  string
		raw   string
		codes []string
	}{
		{"empty body", "From: a@shop.test\nSubject: x\nDate: Wed, 25 Nov 2026 09:00:00 +0000\nMessage-ID: <e@shop.test>\n\n", []string{"content_empty_body"}},
		{"no subject", "From: a@shop.test\nDate: Wed, 25 Nov 2026 09:00:00 +0000\nMessage-ID: <e@shop.test>\n\nHello there.\n", []string{"content_missing_subject"}},
		{"list without one-click unsubscribe", "From: a@shop.test\nSubject: News\nDate: Wed, 25 Nov 2026 09:00:00 +0000\nMessage-ID: <e@shop.test>\nList-Id: <news.shop.test>\nList-Unsubscribe: <https://shop.test/u?id=1>\n\nThe news.\n",
			[]string{"content_missing_one_click_unsubscribe"}},
		{"list with one-click unsubscribe", "From: a@shop.test\nSubject: News\nDate: Wed, 25 Nov 2026 09:00:00 +0000\nMessage-ID: <e@shop.test>\nPrecedence: bulk\nList-Unsubscribe: <https://shop.test/u?id=1>\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\n\nThe news.\n",
			[]string{"content_ok"}},
		{"HTML past Gmail's clipping", "From: a@shop.test\nSubject: News\nDate: Wed, 25 Nov 2026 09:00:00 +0000\nMessage-ID: <e@shop.test>\nContent-Type: multipart/alternative; boundary=b\n\n--b\nContent-Type: text/plain\n\nThe news.\n--b\nContent-Type: text/html\n\n" + big + "\n--b--\n",
			[]string{"content_html_clipped"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := checkContent(newEnv(Input{Raw: crlf(tc.raw)}, nil))
			if !slices.Equal(r.codes(), tc.codes) {
				t.Errorf("codes %v, want %v", r.codes(), tc.codes)
			}
		})
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestContentRefersToHTMLCheck: the content section sums up the HTML check of
// the HTML body (the same score, the features some client lacks, those a
// major client does not support) and raises no issue for it; a message
// without HTML has no summary.
func TestContentRefersToHTMLCheck(t *testing.T) {
	raw := crlf("From: a@promo.test\nTo: b@default.localhost\nSubject: Grid\nDate: Wed, 25 Nov 2026 09:00:00 +0000\n" +
		"Message-ID: <g@promo.test>\nContent-Type: text/html; charset=utf-8\n\n<div style=\"display:grid;border-radius:4px\">Hi</div>\n")
	r, _ := checkContent(newEnv(Input{Raw: raw}, nil))
	if r.HTMLCheck == nil {
		t.Fatal("no html_check summary for an HTML body")
	}
	want, err := htmlcheck.Check("<div style=\"display:grid;border-radius:4px\">Hi</div>\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if r.HTMLCheck.Score != want.Score || r.HTMLCheck.FeatureCount != len(want.Features) || len(r.HTMLCheck.Features) != len(want.Features) {
		t.Errorf("summary %+v, check %v with %d features", r.HTMLCheck, want.Score, len(want.Features))
	}
	if !slices.Contains(r.HTMLCheck.Unsupported, "display:grid") {
		t.Errorf("display:grid, which Outlook on Windows does not support, is not among %v", r.HTMLCheck.Unsupported)
	}
	for _, i := range r.Issues {
		if strings.Contains(i.Code, "html_check") || strings.Contains(i.Code, "client") {
			t.Errorf("the HTML check raised issue %s", i.Code)
		}
	}
	r, _ = checkContent(newEnv(Input{Raw: crlf("From: a@promo.test\nSubject: x\n\nplain\n")}, nil))
	if r.HTMLCheck != nil {
		t.Errorf("a text message has a summary: %+v", r.HTMLCheck)
	}
}
