package htmlcheck

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzCheck reads arbitrary HTML: the check must never panic, and every
// place it gives must be inside the HTML.
func FuzzCheck(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.html")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add(`<style>@media (x){a{b:c}}</style><p style="d:e;f">`)
	f.Add(`<style>/*`)
	f.Add(`<div style="background:url(&quot;x">`)
	f.Fuzz(func(t *testing.T, h string) {
		r, err := check(h, time.Now().Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for _, fe := range r.Features {
			if fe.Count < len(fe.Places) || len(fe.Places) == 0 {
				t.Fatalf("%s: count %d, %d places", fe.Slug, fe.Count, len(fe.Places))
			}
			for _, p := range fe.Places {
				if p.Line < 1 || p.Column < 1 || p.Line > len(h)+1 {
					t.Fatalf("%s: place %+v outside %d bytes", fe.Slug, p, len(h))
				}
			}
		}
		if r.Score < 0 || r.Score > 100 {
			t.Fatalf("score %v", r.Score)
		}
	})
}
