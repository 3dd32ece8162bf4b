package htmlcheck

import (
	"fmt"
	"strings"
	"testing"
)

// newsletter builds a newsletter of about size bytes as email builders write
// them: a <style> block with resets, a mobile @media query and dark-mode
// rules, MSO conditional comments, a table layout, and product rows with
// inline styles, images and buttons, repeated up to the size.
func newsletter(size int) string {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html lang="en" xmlns:v="urn:schemas-microsoft-com:vml"><head>
<meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><meta name="supported-color-schemes" content="light dark">
<title>Spring collection</title>
<!--[if mso]><xml><o:OfficeDocumentSettings><o:PixelsPerInch>96</o:PixelsPerInch></o:OfficeDocumentSettings></xml><![endif]-->
<style>
  body, table, td, a { -webkit-text-size-adjust: 100%; -ms-text-size-adjust: 100%; }
  table, td { mso-table-lspace: 0pt; mso-table-rspace: 0pt; border-collapse: collapse !important; }
  img { -ms-interpolation-mode: bicubic; border: 0; height: auto; line-height: 100%; outline: none; text-decoration: none; }
  a[x-apple-data-detectors] { color: inherit !important; text-decoration: none !important; }
  .button:hover { background-color: #1d4ed8 !important; }
  .wrapper { width: 100%; max-width: 600px; margin: 0 auto; }
  @media screen and (max-width: 600px) {
    .column { display: block !important; width: 100% !important; }
    .hide-mobile { display: none !important; }
    h1 { font-size: 28px !important; line-height: 1.2 !important; }
  }
  @media (prefers-color-scheme: dark) {
    body, .bg { background-color: #111827 !important; }
    .text { color: #f9fafb !important; }
  }
</style></head>
<body style="margin:0;padding:0;background-color:#f3f4f6;" class="bg">
<div style="display:none;max-height:0;overflow:hidden;">Our spring collection is here: new colours, new fabrics.</div>
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background-color:#f3f4f6;">
<tr><td align="center" style="padding:24px 12px;">
<table role="presentation" class="wrapper" width="600" cellpadding="0" cellspacing="0" border="0" style="background:#ffffff;border-radius:8px;">
<tr><td style="padding:24px;text-align:center;"><img src="https://cdn.shop.example/logo.png" width="140" height="40" alt="Shop" style="display:block;margin:0 auto;"></td></tr>
<tr><td><img src="https://cdn.shop.example/hero.jpg" width="600" alt="Spring" style="display:block;width:100%;max-width:600px;"></td></tr>
<tr><td class="text" style="padding:32px 24px 8px;font-family:Helvetica,Arial,sans-serif;color:#111827;"><h1 style="margin:0;font-size:34px;line-height:40px;font-weight:700;">New in this spring</h1></td></tr>
`)
	footer := `<tr><td style="padding:24px;font-family:Helvetica,Arial,sans-serif;font-size:12px;line-height:18px;color:#6b7280;text-align:center;">
<p style="margin:0 0 8px;">You receive this email because you signed up at shop.example.</p>
<p style="margin:0;"><a href="https://shop.example/unsubscribe?u=42" style="color:#6b7280;text-decoration:underline;">Unsubscribe</a> · <a href="https://shop.example/preferences" style="color:#6b7280;">Preferences</a></p>
</td></tr></table></td></tr></table></body></html>
`
	for i := 0; b.Len()+len(footer) < size; i++ {
		fmt.Fprintf(&b, `<tr><td style="padding:16px 24px;">
<!--[if mso]><table role="presentation" width="100%%"><tr><td width="50%%" valign="top"><![endif]-->
<div class="column" style="display:inline-block;width:48%%;vertical-align:top;">
<img src="https://cdn.shop.example/products/%[1]d.jpg" width="264" alt="Product %[1]d" style="display:block;width:100%%;border-radius:6px;">
</div>
<!--[if mso]></td><td width="50%%" valign="top"><![endif]-->
<div class="column" style="display:inline-block;width:48%%;vertical-align:top;padding-left:4%%;">
<h2 class="text" style="margin:0 0 8px;font-family:Helvetica,Arial,sans-serif;font-size:20px;line-height:26px;color:#111827;">Linen shirt, model %[1]d</h2>
<p class="text" style="margin:0 0 16px;font-family:Helvetica,Arial,sans-serif;font-size:15px;line-height:22px;color:#374151;">Light, breathable and cut for warm days. Available in five colours and every size from XS to XXL.</p>
<table role="presentation" cellpadding="0" cellspacing="0" border="0"><tr><td class="button" style="border-radius:4px;background-color:#2563eb;">
<a href="https://shop.example/p/%[1]d?utm_source=newsletter" style="display:inline-block;padding:12px 20px;font-family:Helvetica,Arial,sans-serif;font-size:15px;font-weight:bold;color:#ffffff;text-decoration:none;border-radius:4px;">Shop now</a>
</td></tr></table></div>
<!--[if mso]></td></tr></table><![endif]-->
</td></tr>
`, i)
	}
	b.WriteString(footer)
	return b.String()
}

func benchmarkCheck(b *testing.B, size int) {
	doc := newsletter(size)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	var r *Report
	for b.Loop() {
		var err error
		if r, err = Check(doc); err != nil {
			b.Fatal(err)
		}
	}
	if r.Truncated || len(r.Features) == 0 {
		b.Fatalf("truncated %v, %d features", r.Truncated, len(r.Features))
	}
	b.ReportMetric(float64(r.Checked), "features")
}

// BenchmarkCheckNewsletter50KB is the check of a typical newsletter.
func BenchmarkCheckNewsletter50KB(b *testing.B) { benchmarkCheck(b, 50<<10) }

// BenchmarkCheck1MB is the check of a 1 MB email of the same make.
func BenchmarkCheck1MB(b *testing.B) { benchmarkCheck(b, 1<<20) }
