package preview

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/tenant"
)

// emails is the one email the tests preview, readable by the organisation
// "mine" alone.
type emails struct{ e inbox.StoredEmail }

func (m emails) Email(_ context.Context, p tenant.Principal, id string) (inbox.StoredEmail, error) {
	if id != m.e.ID || p.Org.ID != "mine" {
		return inbox.StoredEmail{}, problem.NotFoundf("email")
	}
	return m.e, nil
}

var mine = tenant.Principal{Org: tenant.Org{ID: "mine"}}

func testEmails() emails {
	e := inbox.StoredEmail{}
	e.ID, e.HTML = "e1", `<h1 style="margin:0">Hello</h1>`
	return emails{e}
}

func kind(err error) (problem.Kind, string) {
	var pe *problem.Error
	if errors.As(err, &pe) {
		return pe.Kind, pe.Code
	}
	return 255, ""
}

func TestParseRequest(t *testing.T) {
	for q, want := range map[string]Request{"": {1280, "light"}, "width=375&scheme=dark": {375, "dark"}, "width=768": {768, "light"}} {
		v, _ := url.ParseQuery(q)
		if got, err := ParseRequest(v); err != nil || got != want {
			t.Errorf("%q: %+v, %v", q, got, err)
		}
	}
	for _, q := range []string{"width=376", "width=abc", "scheme=Dark", "width=0&scheme=x"} {
		v, _ := url.ParseQuery(q)
		if _, err := ParseRequest(v); err == nil {
			t.Errorf("%q accepted", q)
		} else if k, code := kind(err); k != problem.Invalid || code != "invalid_parameter" {
			t.Errorf("%q: %v", q, err)
		}
	}
}

func TestWithoutChromium(t *testing.T) {
	s := New(Config{}, testEmails())
	if s.Enabled() {
		t.Fatal("enabled without a Chromium")
	}
	for _, id := range []string{"e1", "no-such-email"} {
		_, err := s.Preview(context.Background(), mine, id, Request{1280, "light"})
		if k, code := kind(err); k != problem.NotImplemented || code != "previews_unavailable" {
			t.Errorf("%s: %v", id, err)
		}
	}
}

// TestOneRenderPerImage: requests for the same image at once share one
// render, later ones are served from memory, and a stranger's is not found.
func TestOneRenderPerImage(t *testing.T) {
	s := New(Config{Chromium: chromiumPath(t), Timeout: time.Minute, Workers: 2}, testEmails())
	req := Request{375, "light"}
	var wg sync.WaitGroup
	pngs := make([][]byte, 4)
	for i := range pngs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			png, err := s.Preview(context.Background(), mine, "e1", req)
			if err != nil {
				t.Error(err)
			}
			pngs[i] = png
		}()
	}
	wg.Wait()
	if n := s.renders.Load(); n != 1 {
		t.Errorf("%d renders for one image asked four times at once", n)
	}
	for i := range pngs {
		if len(pngs[i]) == 0 || string(pngs[i]) != string(pngs[0]) {
			t.Fatalf("answer %d differs", i)
		}
	}
	if png, err := s.Preview(context.Background(), mine, "e1", req); err != nil || string(png) != string(pngs[0]) || s.renders.Load() != 1 {
		t.Errorf("asked again: %v, %d renders", err, s.renders.Load())
	}
	if _, err := s.Preview(context.Background(), tenant.Principal{Org: tenant.Org{ID: "other"}}, "e1", req); !isNotFound(err) {
		t.Errorf("another organisation: %v", err)
	}
}

func isNotFound(err error) bool { k, _ := kind(err); return k == problem.NotFound }

// TestBusy: with every waiting place taken, a preview is refused at once.
func TestBusy(t *testing.T) {
	s := New(Config{Chromium: "/usr/bin/chromium", Workers: 1}, testEmails())
	for range cap(s.queue) {
		s.queue <- struct{}{}
	}
	_, err := s.Preview(context.Background(), mine, "e1", Request{768, "dark"})
	if k, code := kind(err); k != problem.Unavailable || code != "previews_busy" {
		t.Errorf("a full queue: %v", err)
	}
	if s.renders.Load() != 0 {
		t.Error("a refused preview was rendered")
	}
}
