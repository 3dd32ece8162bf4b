// Package linkcheck checks the links and images of a received email: every
// URL the email links to or loads (message.Targets) is asked for once, with
// HEAD (GET where HEAD is refused), following redirects, and its answer, final
// URL, redirect count, time and error are kept as the email's link check.
//
// The URLs are the email sender's, so the check is an outgoing fetch to
// targets a user names: it obeys the one rule of package egress (no loopback,
// private or link-local target unless CATCHBOX_ALLOW_PRIVATE_TARGETS, true in
// local mode only), applied to each URL and each redirect's target when it is
// met, and to every connection when it is dialled. A run is bounded
// everywhere: a few requests at once in all and fewer per host, 10 s per URL,
// 30 s per run, no body read past a small cap, response headers capped.
//
// A run is a job on the service's one queue (internal/jobs), requested and
// stored as deliverability reports are (service.go; docs/flow.md).
package linkcheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/catchbox/catchbox/internal/egress"
	"github.com/catchbox/catchbox/internal/message"
)

// Limits of a run (contract section 5, "Email checks", and docs/api.md).
const (
	// MaxRedirects is how many redirects one URL's check follows.
	MaxRedirects = 10
	// URLTimeout bounds one URL's check, its redirects and its GET included.
	URLTimeout = 10 * time.Second
	// RunTimeout bounds a whole run.
	RunTimeout = 30 * time.Second
	// Workers is how many URLs one run checks at once.
	Workers = 8
	// PerHost is how many requests one run has in flight to one host.
	PerHost = 2
	// BodyCap is the most of a GET answer's body that is read (and then
	// discarded), so that a small answer's connection can be used again; a
	// longer body is not read further and its connection is closed.
	BodyCap = 16 << 10
	// MaxHeaderBytes caps an answer's headers.
	MaxHeaderBytes = 64 << 10
	// UserAgent names the checker to the servers it asks, in the form crawlers
	// use, so that servers that refuse unknown clients outright are less
	// likely to refuse it.
	UserAgent = "Mozilla/5.0 (compatible; Catchbox-LinkCheck/1)"
)

// Kinds of a checked URL.
const (
	KindLink  = "link"  // an anchor, an image map area, a URL in the text
	KindImage = "image" // loaded with the email: an image, a background, a CSS url()
)

// Link is one URL's outcome (the API's link object). Error is set when the
// URL is broken: it gave no answer (a time limit, a refused or failed
// connection, a name that does not resolve, a TLS failure, a refused private
// target), its redirects went past the limit or to a URL that cannot be
// followed, or its final answer is a 4xx or 5xx.
type Link struct {
	URL  string `json:"url"`
	Kind string `json:"kind"`
	// StatusCode is the last answer's status (0, and left out, without one).
	StatusCode int `json:"status_code,omitempty"`
	// FinalURL is the last URL asked for: URL itself without redirects.
	FinalURL   string `json:"final_url"`
	Redirects  int    `json:"redirects"`
	DurationMs int64  `json:"duration_ms"`
	Error      string `json:"error,omitempty"`
}

// Checker checks URLs. Its zero value is not usable: build it with NewChecker.
type Checker struct {
	guard      *egress.Guard
	client     *http.Client
	urlTimeout time.Duration
	runTimeout time.Duration
	workers    int
	perHost    int
}

// CheckerConfig is what a Checker is built from; zero durations and counts
// take the package's limits.
type CheckerConfig struct {
	// AllowPrivate allows loopback, private and other non-public targets
	// (CATCHBOX_ALLOW_PRIVATE_TARGETS).
	AllowPrivate bool
	// Resolver resolves names (nil: the system's).
	Resolver *net.Resolver
	// TLS is the client's TLS configuration (nil: the system's roots); tests
	// set their server's certificate.
	TLS *tls.Config

	URLTimeout time.Duration
	RunTimeout time.Duration
	Workers    int
	PerHost    int
}

// NewChecker builds a checker whose every connection goes through the
// outgoing-fetch guard.
func NewChecker(cfg CheckerConfig) *Checker {
	c := &Checker{
		guard:      &egress.Guard{AllowPrivate: cfg.AllowPrivate, Resolver: cfg.Resolver},
		urlTimeout: cfg.URLTimeout, runTimeout: cfg.RunTimeout, workers: cfg.Workers, perHost: cfg.PerHost,
	}
	if c.urlTimeout <= 0 {
		c.urlTimeout = URLTimeout
	}
	if c.runTimeout <= 0 {
		c.runTimeout = RunTimeout
	}
	if c.workers <= 0 {
		c.workers = Workers
	}
	if c.perHost <= 0 {
		c.perHost = PerHost
	}
	tr := c.guard.Transport(c.urlTimeout)
	tr.MaxResponseHeaderBytes = MaxHeaderBytes
	tr.MaxIdleConnsPerHost = c.perHost
	tr.TLSClientConfig = cfg.TLS
	// Redirects are followed by check, one at a time, so that each target
	// is checked before it is asked for and counted.
	c.client = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return c
}

// Close closes the checker's idle connections.
func (c *Checker) Close() { c.client.CloseIdleConnections() }

// Check checks every target within the run's time limit and returns their
// outcomes in the targets' order. A target the run had no time left for is
// reported with an error that says so.
func (c *Checker) Check(ctx context.Context, targets []message.Target) []Link {
	ctx, cancel := context.WithTimeout(ctx, c.runTimeout)
	defer cancel()
	out := make([]Link, len(targets))
	r := &run{c: c, ctx: ctx, hosts: map[string]chan struct{}{}}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(c.workers, len(targets)) {
		wg.Go(func() {
			for i := range next {
				out[i] = r.checkSafely(targets[i])
			}
		})
	}
feed:
	for i := range targets {
		select {
		case next <- i:
		case <-ctx.Done():
			for ; i < len(targets); i++ {
				out[i] = Link{URL: targets[i].URL, Kind: kindOf(targets[i]), FinalURL: targets[i].URL,
					Error: fmt.Sprintf("not checked: the run reached its %s limit first", c.runTimeout)}
			}
			break feed
		}
	}
	close(next)
	wg.Wait()
	return out
}

func kindOf(t message.Target) string {
	if t.Image {
		return KindImage
	}
	return KindLink
}

// run is one Check: its time limit and its per-host slots.
type run struct {
	c     *Checker
	ctx   context.Context
	mu    sync.Mutex
	hosts map[string]chan struct{}
}

// slot takes one of host's request slots, waiting for one within ctx; the
// returned function gives it back.
func (r *run) slot(ctx context.Context, host string) (func(), error) {
	r.mu.Lock()
	ch := r.hosts[host]
	if ch == nil {
		ch = make(chan struct{}, r.c.perHost)
		r.hosts[host] = ch
	}
	r.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// checkSafely is check, with a panic reported as the URL's error rather than
// ending the process.
func (r *run) checkSafely(t message.Target) (l Link) {
	defer func() {
		if p := recover(); p != nil {
			l = Link{URL: t.URL, Kind: kindOf(t), FinalURL: t.URL, Error: "internal error while checking this URL"}
			logPanic(p)
		}
	}()
	return r.check(t)
}

// check follows one URL to its final answer. The URL's time limit starts
// when its first request may go (its host had a free slot), so that waiting
// behind other URLs of the same host does not count against it.
func (r *run) check(t message.Target) (l Link) {
	l = Link{URL: t.URL, Kind: kindOf(t), FinalURL: t.URL}
	ctx := r.ctx
	var start time.Time
	defer func() {
		if !start.IsZero() {
			l.DurationMs = time.Since(start).Milliseconds()
		}
	}()
	cur := t.URL
	for {
		u, err := url.Parse(cur)
		switch {
		case err != nil:
			l.Error = "not a valid URL"
			return l
		case u.Scheme != "http" && u.Scheme != "https":
			l.Error = "not an http or https URL"
			return l
		case u.Host == "":
			l.Error = "the URL has no host"
			return l
		}
		release, err := r.slot(ctx, strings.ToLower(u.Hostname()))
		if err != nil {
			l.Error = r.describe(err, start.IsZero())
			return l
		}
		if start.IsZero() {
			start = time.Now()
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(r.ctx, r.c.urlTimeout)
			defer cancel()
		}
		code, loc, err := r.ask(ctx, u)
		release()
		if err != nil {
			l.Error = r.describe(err, false)
			return l
		}
		l.StatusCode = code
		if code < 300 || code > 399 || code == http.StatusNotModified {
			if code >= 400 {
				l.Error = fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
			}
			return l
		}
		if loc == "" {
			l.Error = fmt.Sprintf("HTTP %d without a Location to follow", code)
			return l
		}
		if l.Redirects == MaxRedirects {
			l.Error = fmt.Sprintf("more than %d redirects", MaxRedirects)
			return l
		}
		next, err := u.Parse(loc)
		if err != nil {
			l.Error = "redirected to an invalid URL"
			return l
		}
		next.Fragment = "" // a fragment is the browser's, never sent
		l.Redirects++
		cur = next.String()
		l.FinalURL = cur
	}
}

// ask makes one URL's request: HEAD, then GET when the answer to HEAD is an
// error status, since many servers refuse HEAD (405, 501) or answer it
// wrongly (403, 404, 500) where GET works. It returns the status and the
// Location header. The URL's target is checked first (egress.Guard.CheckURL);
// the connection is checked again when it is dialled.
func (r *run) ask(ctx context.Context, u *url.URL) (int, string, error) {
	if err := r.c.guard.CheckURL(ctx, u); err != nil {
		return 0, "", err
	}
	code, loc, err := r.do(ctx, http.MethodHead, u)
	if err != nil || code < 400 {
		return code, loc, err
	}
	return r.do(ctx, http.MethodGet, u)
}

func (r *run) do(ctx context.Context, method string, u *url.URL) (int, string, error) {
	// No credentials are sent: user information in a URL would become an
	// Authorization header.
	bare := *u
	bare.User = nil
	req, err := http.NewRequestWithContext(ctx, method, bare.String(), nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("Accept", "*/*")
	resp, err := r.c.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	// A small body is read so that the connection can be used again; a
	// larger one is left, and its connection closed.
	io.Copy(io.Discard, io.LimitReader(resp.Body, BodyCap))
	return resp.StatusCode, resp.Header.Get("Location"), nil
}

// describe words a request's failure for the user.
func (r *run) describe(err error, before bool) string {
	if re := egress.Refused(err); re != nil {
		return re.Error()
	}
	if r.ctx.Err() != nil {
		if before {
			return fmt.Sprintf("not checked: the run reached its %s limit first", r.c.runTimeout)
		}
		return fmt.Sprintf("stopped at the run's %s limit", r.c.runTimeout)
	}
	if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		return fmt.Sprintf("no answer within %s", r.c.urlTimeout)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsNotFound {
			return "the host name does not resolve"
		}
		return "the host name could not be resolved"
	}
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	if errors.As(err, &certErr) || errors.As(err, &unknownAuth) || errors.As(err, &hostErr) || errors.As(err, &invalid) {
		return "TLS: the server's certificate is not valid for it"
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		if strings.Contains(opErr.Err.Error(), "refused") {
			return "connection refused"
		}
		return "could not connect: " + opErr.Err.Error()
	}
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the server closed the connection without an answer"
	}
	return err.Error()
}

func logPanic(p any) {
	slog.Error("Link check panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
