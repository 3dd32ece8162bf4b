// Package preview renders a received email as an image: its HTML (or its
// text) at a phone's, a tablet's or a desktop's width, in the light or the
// dark colour scheme, screenshot by a headless Chromium that the email can
// make reach nothing on the network (chromium.go). Rendering is optional: a
// server without CATCHBOX_CHROMIUM answers that previews are unavailable.
//
// Renders are few at a time, bounded in time and size, and kept in memory: an
// email never changes once received, so an image stays right for as long as
// its email exists.
package preview

import (
	"context"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/lru"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/tenant"
)

// The contract's choices and limits.
const (
	// MaxHeight is the tallest image: a longer email is cut at it.
	MaxHeight = 4000
	// MaxHTMLBytes is the most HTML rendered; a longer email is rendered up
	// to there.
	MaxHTMLBytes = 4 << 20
	// CacheBytes is the memory images are kept in, per replica.
	CacheBytes = 64 << 20
	// DefaultTimeout bounds a render when Config.Timeout is zero.
	DefaultTimeout = 20 * time.Second
	// queueFactor times the workers is how many renders may wait for one.
	queueFactor = 8
)

// Widths are the widths a preview may be asked at, in CSS pixels: a phone's,
// a tablet's and a desktop's.
var Widths = []int{375, 768, 1280}

// Request is what to render: a width of Widths and a scheme, light or dark.
type Request struct {
	Width  int
	Scheme string
}

// ParseRequest reads width (default 1280) and scheme (default light) from a
// query, every bad value named.
func ParseRequest(q url.Values) (Request, error) {
	r := Request{Width: 1280, Scheme: "light"}
	var f problem.Fields
	if v := q.Get("width"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || (n != 375 && n != 768 && n != 1280) {
			f.Add("width", "must be 375, 768 or 1280")
		} else {
			r.Width = n
		}
	}
	if v := q.Get("scheme"); v != "" {
		if v != "light" && v != "dark" {
			f.Add("scheme", "must be light or dark")
		} else {
			r.Scheme = v
		}
	}
	return r, f.Err()
}

// Emails finds an email a principal may read: problem.NotFound for any other
// (htmlcheck.Service.Email).
type Emails interface {
	Email(ctx context.Context, p tenant.Principal, emailID string) (inbox.StoredEmail, error)
}

// Config is what the service is built from.
type Config struct {
	// Chromium is the browser's path; "" leaves previews off.
	Chromium string
	// Timeout bounds one render, the browser's start included.
	Timeout time.Duration
	// Workers is how many renders run at once.
	Workers int
}

// Service renders previews of stored emails.
type Service struct {
	emails   Emails
	chromium *chromium
	cache    *lru.Cache[string, []byte]
	slots    chan struct{} // a render holds one while it runs
	queue    chan struct{} // a render holds one while it waits or runs

	mu       sync.Mutex
	inflight map[string]*flight
	renders  atomic.Int64 // renders started, for the tests
}

// flight is a render others asking for the same image wait on.
type flight struct {
	done chan struct{}
	png  []byte
	err  error
}

// New returns the service; with no Chromium configured every preview is
// problem.NotImplemented.
func New(cfg Config, emails Emails) *Service {
	s := &Service{emails: emails, cache: lru.New[string, []byte](CacheBytes), inflight: map[string]*flight{}}
	if cfg.Chromium != "" {
		workers := max(cfg.Workers, 1)
		s.chromium = &chromium{path: cfg.Chromium, timeout: orDefault(cfg.Timeout, DefaultTimeout)}
		s.slots = make(chan struct{}, workers)
		s.queue = make(chan struct{}, workers*queueFactor)
	}
	return s
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Enabled tells whether the server can render previews.
func (s *Service) Enabled() bool { return s != nil && s.chromium != nil }

// Errors of a preview, beyond the email's NotFound and the request's fields.
var (
	errUnavailable = &problem.Error{Kind: problem.NotImplemented, Code: "previews_unavailable",
		Message: "previews are not available: this server has no Chromium to render them (CATCHBOX_CHROMIUM)"}
	errBusy = &problem.Error{Kind: problem.Unavailable, Code: "previews_busy",
		Message: "too many previews are being rendered; try again in a few seconds"}
	errFailed = &problem.Error{Kind: problem.Unavailable, Code: "preview_failed",
		Message: "the preview could not be rendered in time; try again later"}
)

// Preview is the PNG of the email emailID as p may read it, rendered as req
// asks (ParseRequest). Without Chromium it is problem.NotImplemented
// (previews_unavailable), whatever the email.
func (s *Service) Preview(ctx context.Context, p tenant.Principal, emailID string, req Request) ([]byte, error) {
	if !s.Enabled() {
		return nil, errUnavailable
	}
	e, err := s.emails.Email(ctx, p, emailID)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s/%d/%s", e.ID, req.Width, req.Scheme)
	if png, ok := s.cache.Get(key); ok {
		return png, nil
	}
	s.mu.Lock()
	f, ok := s.inflight[key]
	if !ok {
		f = &flight{done: make(chan struct{})}
		s.inflight[key] = f
		go s.fly(key, f, document(e), req)
	}
	s.mu.Unlock()
	select {
	case <-f.done:
		return f.png, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fly renders one image for everyone waiting on f; it runs apart from the
// request that started it, so that a client going away does not waste the
// render others wait for.
func (s *Service) fly(key string, f *flight, doc string, req Request) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("Preview render panicked", "err", fmt.Errorf("%v", p), "stack", string(debug.Stack()))
			f.png, f.err = nil, errFailed
		}
		s.mu.Lock()
		delete(s.inflight, key)
		s.mu.Unlock()
		close(f.done)
	}()
	select {
	case s.queue <- struct{}{}:
		defer func() { <-s.queue }()
	default:
		f.err = errBusy
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*s.chromium.timeout)
	defer cancel()
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-ctx.Done():
		f.err = errBusy
		return
	}
	start := time.Now()
	s.renders.Add(1)
	png, st, err := s.chromium.render(ctx, doc, req.Width, req.Scheme)
	if err != nil {
		slog.Warn("Preview render failed", "key", key, "duration_ms", time.Since(start).Milliseconds(), "err", err)
		f.err = errFailed
		return
	}
	slog.Debug("Preview rendered", "key", key, "bytes", len(png), "blocked_requests", st.Blocked, "duration_ms", time.Since(start).Milliseconds())
	s.cache.Put(key, png, int64(len(png)))
	f.png = png
}

// document is what a preview shows: the email's HTML (up to MaxHTMLBytes), or
// its text as the dashboard shows an email without HTML.
func document(e inbox.StoredEmail) string {
	if e.HTML != "" {
		h := e.HTML
		if len(h) > MaxHTMLBytes {
			h = h[:MaxHTMLBytes]
		}
		return h
	}
	return `<!doctype html><meta charset="utf-8"><pre style="white-space:pre-wrap;font:14px/1.5 ui-monospace,monospace;margin:8px">` +
		html.EscapeString(e.Text) + "</pre>"
}

// PreviewHandler answers GET /api/emails/{emailId}/preview.png: 400 for a bad
// width or scheme first, then 501 previews_unavailable without Chromium.
func (s *Service) PreviewHandler(w http.ResponseWriter, r *http.Request) error {
	req, err := ParseRequest(r.URL.Query())
	if err != nil {
		return err
	}
	png, err := s.Preview(r.Context(), tenant.PrincipalFrom(r.Context()), chi.URLParam(r, "emailId"), req)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "image/png")
	h.Set("Content-Length", strconv.Itoa(len(png)))
	h.Set("Cache-Control", "private, max-age=3600")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(png)
	return err
}
