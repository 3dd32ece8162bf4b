package message

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// extractCorpus is the links and codes corpus: real-looking messages written for
// this test (testdata/extract), each with every link and code a reader would
// take from it, in order. Messages are read through Parse, so transfer
// encodings and charsets are undone as at ingest.
var extractCorpus = []struct {
	file  string
	links []Link
	codes []string
}{
	{
		file: "signin-text.eml", // a code in a text-only mail, with an address and a ZIP code in the footer
		links: []Link{
			{Href: "https://acme.example/account/security"},
			{Href: "https://acme.example/u/7781?list=security"},
		},
		codes: []string{"482913"},
	},
	{
		file: "signin-html.eml", // the code in the subject, set apart in both bodies, a year in the footer
		links: []Link{
			{Href: "https://acme.example/?utm_source=email", Text: "Acme"},
			{Href: "https://acme.example/help", Text: "Help"},
		},
		codes: []string{"739201"},
	},
	{
		file: "reset.eml", // a reset link, a request id that is no code, a mailto link
		links: []Link{
			{Href: "https://shop.example/account/reset?token=q8Zx2LmP91aV&uid=1042", Text: "Reset your password"},
		},
		codes: []string{},
	},
	{
		file: "magic-link.eml", // HTML only: a logo, the button, the same URL as text, links a test cannot follow
		links: []Link{
			{Href: "https://notion.example/", Text: "Notion"},
			{Href: "https://notion.example/loginwithemail?token=eyJhbGciOi.J9x-1f&state=7Yk2", Text: "Sign in to Notion"},
		},
		codes: []string{},
	},
	{
		file: "receipt.eml", // order, invoice, SKU, prices, card, ZIP, phone, tracking and promo numbers: none is a code
		links: []Link{
			{Href: "https://store.example/track/1Z999AA10123456784"},
		},
		codes: []string{},
	},
	{
		file: "receipt-table.eml", // a German receipt in tables: numbers under their labels
		links: []Link{
			{Href: "https://laden.example/sendung?id=00340434161094042557&lang=de", Text: "Sendung verfolgen"},
		},
		codes: []string{},
	},
	{
		file: "qp-verification.eml", // quoted-printable, soft breaks inside the link, the code in the cell beside its label
		links: []Link{
			{Href: "https://github.example/settings/security?utm_campaign=verify&utm_medium=email", Text: "change your password"},
		},
		codes: []string{"307521"},
	},
	{
		file:  "german-latin1-qp.eml", // ISO-8859-1, quoted-printable; a customer number is no code
		links: []Link{},
		codes: []string{"551204"},
	},
	{
		file: "french-html-only.eml", // four digits; an order number and a date beside
		links: []Link{
			{Href: "https://boutique.example/compte?lang=fr", Text: "Mon compte"},
		},
		codes: []string{"5821"},
	},
	{
		file:  "spanish.eml",
		links: []Link{},
		codes: []string{"904172"},
	},
	{
		file: "japanese.eml", // no spaces around the code; a URL ended by "。"; an order number
		links: []Link{
			{Href: "https://example.jp/login?next=%2Fhome"},
		},
		codes: []string{"318204"},
	},
	{
		file: "chinese-gb2312.eml", // GB 2312, base64; an order number beside
		links: []Link{
			{Href: "https://shop.example.cn/order/2026112212", Text: "查看订单"},
		},
		codes: []string{"662019"},
	},
	{
		file:  "russian-koi8.eml", // KOI8-R, 8bit; an order number and a date
		links: []Link{},
		codes: []string{"4471"},
	},
	{
		file:  "korean.eml",
		links: []Link{},
		codes: []string{"482913"},
	},
	{
		file:  "portuguese.eml",
		links: []Link{},
		codes: []string{"553201"},
	},
	{
		file:  "google-style.eml", // the code after the sender's prefix, the keyword after the code
		links: []Link{},
		codes: []string{"482913"},
	},
	{
		file: "slack-alnum.eml", // capitals and digits, set apart, hyphen kept
		links: []Link{
			{Href: "https://slack.example/legal", Text: "Our Blog"},
			{Href: "https://slack.example/policy", Text: "Policies"},
		},
		codes: []string{"3GF-XQ7"},
	},
	{
		file: "grouped-digits.eml", // "482 913" is one code
		links: []Link{
			{Href: "https://account.example/r/?id=93ab"},
		},
		codes: []string{"482913"},
	},
	{
		file: "code-and-link.eml", // a magic link and a code in two groups of four
		links: []Link{
			{Href: "https://linear.example/auth/magic?token=5f1c9a0e&email=kai%40test.localhost", Text: "Log in to Linear"},
		},
		codes: []string{"55218830"},
	},
	{
		file: "newsletter.eml", // many numbers, a promo code, a phone number, a repeated link: no code
		links: []Link{
			{Href: "https://weekly.example/?utm_source=nl&utm_id=2026-47", Text: "The Weekly"},
			{Href: "https://click.weekly.example/ls/click?upn=aB3%2Fx&n=1", Text: "Tool one"},
			{Href: "https://click.weekly.example/ls/click?upn=Qz9%2Fy&n=2", Text: "Tool two"},
			{Href: "https://weekly.example/issues/2047", Text: "https://weekly.example/issues/2047"},
			{Href: "https://weekly.example/unsubscribe?u=leo%40test.localhost&l=47", Text: "Unsubscribe"},
		},
		codes: []string{},
	},
	{
		file: "temp-password.eml", // lower-case letters and digits beside their keyword; a URL wrapped inside angle brackets
		links: []Link{
			{Href: "https://sso.corp.example/login?tenant=corp&user=mia"},
		},
		codes: []string{"x7K2m9Pq"},
	},
}

func TestExtractCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/extract/*.eml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(extractCorpus) {
		t.Errorf("testdata/extract has %d messages, the corpus table %d", len(files), len(extractCorpus))
	}
	for _, c := range extractCorpus {
		t.Run(strings.TrimSuffix(c.file, ".eml"), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata/extract", c.file))
			if err != nil {
				t.Fatal(err)
			}
			p := Parse(raw)
			links, codes := Extract(p.Subject, p.Text, p.HTML)
			checkLinks(t, links, c.links)
			if !slices.Equal(codes, c.codes) {
				t.Errorf("codes = %q, want %q", codes, c.codes)
			}
			// Extract is Links and Codes at once.
			if l := Links(p.HTML, p.Text); !slices.Equal(l, links) {
				t.Errorf("Links = %+v, Extract gave %+v", l, links)
			}
			if cs := Codes(p.Subject, p.Text, p.HTML); !slices.Equal(cs, codes) {
				t.Errorf("Codes = %q, Extract gave %q", cs, codes)
			}
		})
	}
}

// checkLinks compares links with want field by field.
func checkLinks(t *testing.T, links, want []Link) {
	t.Helper()
	if links == nil {
		t.Errorf("links are nil, want an empty slice")
	}
	for i := 0; i < max(len(links), len(want)); i++ {
		switch {
		case i >= len(want):
			t.Errorf("link %d = %+v, want none", i, links[i])
		case i >= len(links):
			t.Errorf("link %d missing, want %+v", i, want[i])
		default:
			if links[i].Href != want[i].Href {
				t.Errorf("link %d href = %q, want %q", i, links[i].Href, want[i].Href)
			}
			if links[i].Text != want[i].Text {
				t.Errorf("link %d text = %q, want %q", i, links[i].Text, want[i].Text)
			}
		}
	}
}

// smsCorpus is the same check for SMS bodies: text only, short, the code often
// first.
var smsCorpus = []struct {
	body  string
	links []Link
	codes []string
}{
	{"G-482913 is your Google verification code.", nil, []string{"482913"}},
	{"Your Uber code: 5521. Never share this code. Reply STOP to unsubscribe.", nil, []string{"5521"}},
	{"123456 is your Amazon OTP. Do not share it with anyone.", nil, []string{"123456"}},
	{"<#> Your WhatsApp code: 482-913\nYou can also tap on this link to verify your phone: v.whatsapp.example/482913\nDon't share this code with others\n4sgLq1p5sV6", nil, []string{"482913"}},
	{"FB-77120 is your Facebook confirmation code", nil, []string{"77120"}},
	{"Ihr Anmeldecode: 662019. Gültig für 5 Minuten.", nil, []string{"662019"}},
	{"【Example】您的验证码是662019，5分钟内有效。", nil, []string{"662019"}},
	{"Sign in: https://app.example/m/Kx81Qz?c=1 (expires in 15 min)", []Link{{Href: "https://app.example/m/Kx81Qz?c=1"}}, nil},
	{"Your package 1Z999AA10123456784 arrives today between 10:00 and 14:00.", nil, nil},
	{"Your balance is $1,234.56. Call 0800 123 4567 for help.", nil, nil},
	{"Your appointment on 2026-12-01 at 09:30 is confirmed. Ref 88213.", nil, nil},
	{"Your verification code is 2026. It expires on Dec 1, 2026.", nil, []string{"2026"}},
	{"Your code is 4821. Order 10423 ships today, invoice 20931 follows.", nil, []string{"4821"}},
	{"Order 10423: your code is 4821.", nil, []string{"4821"}},
	{"Verification code: 771204 (do not share). Promo code SAVE2026 gives 20% off.", nil, []string{"771204"}},
}

func TestExtractSMS(t *testing.T) {
	for _, c := range smsCorpus {
		links, codes := Extract("", c.body, "")
		want := c.links
		if want == nil {
			want = []Link{}
		}
		checkLinks(t, links, want)
		wantCodes := c.codes
		if wantCodes == nil {
			wantCodes = []string{}
		}
		if !slices.Equal(codes, wantCodes) {
			t.Errorf("%q: codes = %q, want %q", c.body, codes, wantCodes)
		}
	}
}

// TestHTMLTextIsReadWhenTheTextBodyCannotHaveIt checks when the text the HTML
// body shows is read: for codes, when the text body has no digit; for URLs
// written out in it, when there is no text body.
func TestHTMLTextIsReadWhenTheTextBodyCannotHaveIt(t *testing.T) {
	html := "<p>Your sign-in code is <b>660912</b>.</p><p>Or paste https://app.example/s/1 into your browser. <a href='https://app.example/help'>Help</a></p>"
	for _, c := range []struct {
		text  string
		links []Link
		codes []string
	}{
		{"", []Link{{Href: "https://app.example/s/1"}, {Href: "https://app.example/help", Text: "Help"}}, []string{"660912"}},
		{"View this email in a browser that shows HTML.", []Link{{Href: "https://app.example/help", Text: "Help"}}, []string{"660912"}},
		{"Your sign-in code is 660912.", []Link{{Href: "https://app.example/help", Text: "Help"}}, []string{"660912"}},
		{"Your order 10423 has shipped.", []Link{{Href: "https://app.example/help", Text: "Help"}}, []string{}},
	} {
		links, codes := Extract("Sign in", c.text, html)
		checkLinks(t, links, c.links)
		if !slices.Equal(codes, c.codes) {
			t.Errorf("text %q: codes %q, want %q", c.text, codes, c.codes)
		}
	}
}

// FuzzExtract reads arbitrary subjects and bodies: Extract must not panic, must
// keep to its limits, and what it returns must have the shape it promises.
func FuzzExtract(f *testing.F) {
	for _, c := range extractCorpus {
		raw, err := os.ReadFile(filepath.Join("testdata/extract", c.file))
		if err != nil {
			f.Fatal(err)
		}
		p := Parse(raw)
		f.Add(p.Subject, p.Text, p.HTML)
	}
	for _, c := range smsCorpus {
		f.Add("", c.body, "")
	}
	f.Add("code 12345", "<https://a.example/x\n y>", "<a href=' http://b.example/\n'>x<a href=https://c.example>y</a>")
	f.Fuzz(func(t *testing.T, subject, text, html string) {
		links, codes := Extract(subject, text, html)
		if links == nil || codes == nil {
			t.Fatal("nil result")
		}
		if len(links) > maxLinks || len(codes) > maxCodes {
			t.Fatalf("%d links, %d codes", len(links), len(codes))
		}
		// The one read of Extract gives what Links and Codes give.
		if l := Links(html, text); !slices.Equal(l, links) {
			t.Fatalf("Links %+v, Extract %+v", l, links)
		}
		if c := Codes(subject, text, html); !slices.Equal(c, codes) {
			t.Fatalf("Codes %q, Extract %q", c, codes)
		}
		seen := map[string]bool{}
		for _, l := range links {
			if seen[l.Href] {
				t.Fatalf("link %q listed twice", l.Href)
			}
			seen[l.Href] = true
			if schemeLen(l.Href) == 0 || len(l.Href) > maxHref || utf8.RuneCountInString(l.Text) > maxLinkText {
				t.Fatalf("link %+v", l)
			}
		}
		for _, c := range codes {
			bare := strings.ReplaceAll(c, "-", "")
			if len(bare) < 4 || len(bare) > 10 || !hasDigit(bare) || strings.Trim(bare, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
				t.Fatalf("code %q from %q / %q / %q", c, subject, text, html)
			}
		}
	})
}
