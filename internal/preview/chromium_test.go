package preview

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// chromiumPath is the Chromium the tests render with: CATCHBOX_TEST_CHROMIUM,
// else Debian's. A machine without one skips these tests, saying so; CI
// installs Debian's chromium, so they run there.
func chromiumPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("CATCHBOX_TEST_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no Chromium at %s (set CATCHBOX_TEST_CHROMIUM, or apt-get install chromium): preview rendering not tested", p)
	}
	return p
}

// tracker is a loopback HTTP server that counts the requests it gets: any
// means a preview reached the network.
type tracker struct {
	mu   sync.Mutex
	hits []string
	url  string
}

func startTracker(t *testing.T) *tracker {
	tr := &tracker{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.mu.Lock()
		tr.hits = append(tr.hits, r.URL.Path)
		tr.mu.Unlock()
		w.Header().Set("Content-Type", "image/gif")
		w.Write([]byte("GIF89a"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	tr.url = "http://" + ln.Addr().String()
	// The tracker answers: a request that reached it would be seen.
	resp, err := http.Get(tr.url + "/alive")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tr.mu.Lock()
	if len(tr.hits) != 1 {
		t.Fatalf("the tracker saw %v", tr.hits)
	}
	tr.hits = nil
	tr.mu.Unlock()
	return tr
}

func (tr *tracker) seen() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.hits...)
}

func decode(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	return img
}

// remoteDoc loads from the tracker every way an email can: images, style
// sheets, imports, fonts, backgrounds, scripts, media, frames, objects.
func remoteDoc(base string) string {
	return fmt.Sprintf(`<!doctype html><html><head>
<link rel="stylesheet" href="%[1]s/style.css">
<style>@import url("%[1]s/import.css"); @font-face { font-family: F; src: url(%[1]s/font.woff2); }
body { font-family: F; background-image: url(%[1]s/bg.png); margin: 0 }</style>
<script src="%[1]s/script.js"></script>
</head><body>
<img src="%[1]s/pixel.gif" width="1" height="1" alt="">
<img src="http://tracker.example/by-name.gif" alt="">
<video poster="%[1]s/poster.png" src="%[1]s/clip.mp4"></video>
<iframe src="%[1]s/frame.html"></iframe>
<object data="%[1]s/object.swf"></object>
<div style="width: 3000px; height: 20px">wider than the page</div>
<p>Hello</p><script>new Image().src = "%[1]s/script-ran";</script>
</body></html>`, base)
}

func TestRenderWidthsWithoutNetwork(t *testing.T) {
	c := &chromium{path: chromiumPath(t), timeout: time.Minute}
	tr := startTracker(t)
	doc := remoteDoc(tr.url)
	for _, w := range Widths {
		b, _, err := c.render(context.Background(), doc, w, "light")
		if err != nil {
			t.Fatalf("width %d: %v", w, err)
		}
		img := decode(t, b)
		if img.Bounds().Dx() != w || img.Bounds().Dy() < 1 || img.Bounds().Dy() > MaxHeight {
			t.Errorf("width %d: image is %v", w, img.Bounds())
		}
	}
	if hits := tr.seen(); len(hits) != 0 {
		t.Errorf("a preview reached the network: %v", hits)
	}
}

// TestEachGuardKeepsTheNetworkOut takes the guards away one at a time: each
// left alone still keeps every request from the tracker, and with none the
// same page reaches it (so the silence of the others is theirs). Chromium's
// local network access rules, which would stop the page's requests to the
// loopback tracker on their own, are off here.
func TestEachGuardKeepsTheNetworkOut(t *testing.T) {
	path := chromiumPath(t)
	tr := startTracker(t)
	doc := remoteDoc(tr.url)
	render := func(c *chromium) stats {
		t.Helper()
		c.path, c.timeout, c.noLNA = path, time.Minute, true
		_, st, err := c.render(context.Background(), doc, 375, "light")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	// The interception alone: the browser asks, and is refused.
	st := render(&chromium{noCSP: true, allowProxy: true})
	if hits := tr.seen(); len(hits) != 0 || st.Blocked < 5 {
		t.Errorf("interception alone: the tracker saw %v, %d requests blocked", hits, st.Blocked)
	}
	// The proxy and resolver rules alone.
	render(&chromium{noCSP: true, pageOnly: true})
	if hits := tr.seen(); len(hits) != 0 {
		t.Errorf("proxy rules alone: the tracker saw %v", hits)
	}
	// The policy alone.
	render(&chromium{pageOnly: true, allowProxy: true})
	if hits := tr.seen(); len(hits) != 0 {
		t.Errorf("the policy alone: the tracker saw %v", hits)
	}
	// None: the page reaches the tracker.
	render(&chromium{noCSP: true, pageOnly: true, allowProxy: true})
	if hits := tr.seen(); len(hits) < 3 {
		t.Errorf("without any guard the tracker saw only %v: the checks above prove nothing", hits)
	}
}

func TestRenderScheme(t *testing.T) {
	c := &chromium{path: chromiumPath(t), timeout: time.Minute}
	doc := `<style>body { background: #ffffff; margin: 0 } @media (prefers-color-scheme: dark) { body { background: #000000 } }</style><p>Hi</p>`
	for _, tc := range []struct {
		scheme string
		want   uint32
	}{{"light", 0xffff}, {"dark", 0}} {
		b, _, err := c.render(context.Background(), doc, 375, tc.scheme)
		if err != nil {
			t.Fatal(err)
		}
		r, g, bl, _ := decode(t, b).At(200, 5).RGBA()
		if r != tc.want || g != tc.want || bl != tc.want {
			t.Errorf("%s: pixel (%d %d %d), want %#x", tc.scheme, r, g, bl, tc.want)
		}
	}
}

func TestRenderHeightIsBounded(t *testing.T) {
	c := &chromium{path: chromiumPath(t), timeout: time.Minute}
	b, _, err := c.render(context.Background(), `<body style="margin:0"><div style="height: 12000px; background: #c00"></div>`, 768, "light")
	if err != nil {
		t.Fatal(err)
	}
	if got := decode(t, b).Bounds(); got.Dx() != 768 || got.Dy() != MaxHeight {
		t.Errorf("a 12000 px email: %v, want 768×%d", got, MaxHeight)
	}
	b, _, err = c.render(context.Background(), `<body style="margin:0"><div style="height: 300px"></div>`, 768, "light")
	if err != nil {
		t.Fatal(err)
	}
	if got := decode(t, b).Bounds(); got.Dy() != 300 {
		t.Errorf("a 300 px email: %v", got)
	}
}

func TestRenderTimeLimit(t *testing.T) {
	c := &chromium{path: chromiumPath(t), timeout: time.Millisecond}
	start := time.Now()
	if _, _, err := c.render(context.Background(), "<p>x</p>", 375, "light"); err == nil {
		t.Fatal("a render past its time limit succeeded")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the render ended %v after its 1 ms limit", d)
	}
	// A browser that is not there fails at once.
	c = &chromium{path: "/nonexistent/chromium", timeout: time.Minute}
	if _, _, err := c.render(context.Background(), "<p>x</p>", 375, "light"); err == nil || !strings.Contains(err.Error(), "start") {
		t.Errorf("missing browser: %v", err)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
