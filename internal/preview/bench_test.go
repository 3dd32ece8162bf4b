package preview

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchDoc is a newsletter of about 50 KB: a <style> block, a table layout
// and product rows with inline styles, images (remote: blocked) and buttons.
func benchDoc() string {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><style>
body { margin: 0; background: #f3f4f6; } .wrapper { width: 100%; max-width: 600px; margin: 0 auto; background: #fff; }
@media screen and (max-width: 600px) { .column { display: block !important; width: 100% !important; } }
@media (prefers-color-scheme: dark) { body { background: #111827 !important; } .text { color: #f9fafb !important; } }
</style></head><body><table role="presentation" class="wrapper" width="600" cellpadding="0" cellspacing="0">
<tr><td style="padding:24px;text-align:center;"><img src="https://cdn.shop.example/logo.png" width="140" height="40" alt="Shop"></td></tr>`)
	for i := 0; b.Len() < 50<<10; i++ {
		fmt.Fprintf(&b, `<tr><td style="padding:16px 24px;"><div class="column" style="display:inline-block;width:48%%;vertical-align:top;">
<img src="https://cdn.shop.example/p/%[1]d.jpg" width="264" height="200" alt="Product %[1]d" style="display:block;width:100%%;background:#e5e7eb;"></div>
<div class="column" style="display:inline-block;width:48%%;vertical-align:top;padding-left:4%%;">
<h2 class="text" style="margin:0 0 8px;font:bold 20px/26px Helvetica,Arial,sans-serif;color:#111827;">Linen shirt, model %[1]d</h2>
<p class="text" style="margin:0 0 16px;font:15px/22px Helvetica,Arial,sans-serif;color:#374151;">Light, breathable and cut for warm days. Five colours, XS to XXL.</p>
<a href="https://shop.example/p/%[1]d" style="display:inline-block;padding:12px 20px;background:#2563eb;color:#fff;border-radius:4px;text-decoration:none;font:bold 15px Helvetica,Arial,sans-serif;">Shop now</a>
</div></td></tr>`, i)
	}
	b.WriteString(`</table></body></html>`)
	return b.String()
}

func benchmarkRender(b *testing.B, width int, scheme string) {
	path := "/usr/bin/chromium"
	if !exists(path) {
		b.Skipf("no Chromium at %s", path)
	}
	c := &chromium{path: path, timeout: time.Minute}
	doc := benchDoc()
	var size, height int
	for b.Loop() {
		png, _, err := c.render(context.Background(), doc, width, scheme)
		if err != nil {
			b.Fatal(err)
		}
		size = len(png)
		height = int(png[20])<<24 | int(png[21])<<16 | int(png[22])<<8 | int(png[23]) // IHDR
	}
	b.ReportMetric(float64(size), "png-bytes")
	b.ReportMetric(float64(height), "px-tall")
}

// BenchmarkRender375Dark and BenchmarkRender1280 are one screenshot of a
// 50 KB newsletter, the browser's start included.
func BenchmarkRender375Dark(b *testing.B) { benchmarkRender(b, 375, "dark") }
func BenchmarkRender1280(b *testing.B)    { benchmarkRender(b, 1280, "light") }
