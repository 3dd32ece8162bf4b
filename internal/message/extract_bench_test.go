package message

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkExtract compares Extract with Parse on the same messages: text
// bodies of prose like the ingest benchmark's small and large messages, the
// ingest benchmark's html message (testdata/bench-signin.eml, made by
// catchbox-bench), the corpus's receipt and newsletter, and a 64 KB marketing
// mail of 120 product blocks (prices, links, images), the heaviest kind of HTML
// a test inbox receives. docs/benchmarks.md has the figures.
func BenchmarkExtract(b *testing.B) {
	msgs := map[string][]byte{
		"text-1k":       proseMail(850),
		"text-8k":       proseMail(8 << 10),
		"marketing-64k": marketingMail(120),
		"sms":           []byte("Content-Type: text/plain\r\n\r\nYour Acme sign-in code is 482913. It expires in 10 minutes; never share it. https://acme.example/s/1\r\n"),
	}
	for name, f := range map[string]string{"signin-8k": "bench-signin.eml", "receipt": "extract/receipt.eml", "newsletter": "extract/newsletter.eml"} {
		raw, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			b.Fatal(err)
		}
		msgs[name] = raw
	}
	for _, name := range []string{"sms", "text-1k", "text-8k", "signin-8k", "receipt", "newsletter", "marketing-64k"} {
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

// proseMail returns a text/plain mail of about n bytes of prose.
func proseMail(n int) []byte {
	words := strings.Fields("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua")
	var b strings.Builder
	b.WriteString("From: a@example.com\r\nTo: b@test.localhost\r\nSubject: bench message\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n")
	for i, line := 0, 0; b.Len() < n; i++ {
		w := words[(i*7)%len(words)]
		if line+len(w) > 72 {
			b.WriteString("\r\n")
			line = 0
		}
		b.WriteString(w + " ")
		line += len(w) + 1
	}
	return []byte(b.String())
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
