package message

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkExtract compares Extract with Parse on the same messages: the
// corpus's sign-in, receipt and newsletter mails, and a 64 KB marketing mail
// of 120 product blocks (prices, links, images), the heaviest kind of HTML a
// test inbox receives. docs/benchmarks.md has the figures.
func BenchmarkExtract(b *testing.B) {
	msgs := map[string][]byte{}
	for _, f := range []string{"signin-html.eml", "qp-verification.eml", "receipt.eml", "newsletter.eml"} {
		raw, err := os.ReadFile(filepath.Join("testdata/extract", f))
		if err != nil {
			b.Fatal(err)
		}
		msgs[strings.TrimSuffix(f, ".eml")] = raw
	}
	msgs["marketing-64k"] = marketingMail(120)
	for _, name := range []string{"signin-html", "qp-verification", "receipt", "newsletter", "marketing-64k"} {
		raw := msgs[name]
		p := Parse(raw)
		b.Run(name+"/parse", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for i := 0; i < b.N; i++ {
				Parse(raw)
			}
		})
		b.Run(name+"/extract", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for i := 0; i < b.N; i++ {
				Extract(p.Subject, p.Text, p.HTML)
			}
		})
	}
}

// marketingMail returns a multipart/alternative mail of n product blocks.
func marketingMail(n int) []byte {
	var h, t strings.Builder
	h.WriteString("<html><head><style>td{font-family:Arial}.p{color:#333}</style></head><body><table width=\"600\">")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&h, `<tr><td class="p"><a href="https://click.shop.example/ls/click?upn=%d-aB3xQz9&amp;utm_source=nl&amp;utm_medium=email"><img src="https://cdn.shop.example/p/%d.jpg" alt="Product %d" width="120"></a></td>`+
			`<td><h3>Product %d, now in 3 colours</h3><p>Was $%d.99, now <b>$%d.49</b>. SKU %d. Free shipping over $50.</p></td></tr>`+"\n", i, i, i, i, 100+i, 80+i, 880000+i)
		fmt.Fprintf(&t, "Product %d, now in 3 colours: was $%d.99, now $%d.49 (SKU %d)\nhttps://click.shop.example/ls/click?upn=%d-aB3xQz9&utm_source=nl&utm_medium=email\n\n", i, 100+i, 80+i, 880000+i, i)
	}
	h.WriteString("</table><p>&copy; 2026 Shop Inc. &middot; <a href=\"https://shop.example/unsubscribe\">Unsubscribe</a></p></body></html>")
	return []byte("From: Shop <news@shop.example>\r\nTo: a@test.localhost\r\nSubject: Black Friday: 40% off\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/alternative; boundary=mk\r\n\r\n--mk\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + t.String() +
		"\r\n--mk\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + h.String() + "\r\n--mk--\r\n")
}
