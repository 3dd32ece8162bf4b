// Package web is the dashboard: server-rendered pages (html/template, embedded
// in the binary, no build step) where people sign in, watch their inboxes live
// and manage namespaces, keys, SMS numbers and authenticators. Every page works
// without JavaScript; a little hand-written script adds live updates (server-
// sent events woken by the same notifications as the API's wait), copy buttons,
// countdowns and times in the browser's own zone. What a form has to tell the
// page it redirects to travels in a sealed one-shot cookie (note.go), never in
// the address.
//
// A page reads who is asking from the one principal authentication yields
// (tenant.PrincipalFrom), as every API handler does, and the domain services do
// the work: the dashboard holds no logic of its own beyond the forms.
package web

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/chaos"
	"github.com/catchbox/catchbox/internal/deliverability"
	"github.com/catchbox/catchbox/internal/htmlcheck"
	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/linkcheck"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/outbound"
	"github.com/catchbox/catchbox/internal/preview"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/totp"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Dashboard serves the pages. Its fields are the services the pages use.
type Dashboard struct {
	Tenants        *tenant.Service
	Sessions       *tenant.Sessions
	Inbox          *inbox.API
	SMS            *sms.API
	TOTP           *totp.Service
	Outbound       *outbound.Service
	Deliverability *deliverability.Service
	HTMLCheck      *htmlcheck.Service
	Previews       *preview.Service
	LinkCheck      *linkcheck.Service
	Notifier       notify.Notifier
	// Chaos holds the namespaces' SMTP fault rules (the settings page's
	// fault-rule section); nil leaves the section out.
	Chaos        *chaos.Service
	SMTPEndpoint tenant.SMTPEndpoint
	MailboxPorts tenant.MailboxPorts
	MailDomain   string
	// PublicURL is the base of links shown to the user, no trailing slash.
	PublicURL func() string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Key seals the one-shot notes a form leaves for the next page (note.go).
	Key *secret.Key

	pages map[string]*template.Template
	notes *secret.Sealer
}

// New returns the dashboard with its templates parsed (a broken template
// fails here, at start-up, not at a user's request).
func New(d Dashboard) (*Dashboard, error) {
	if d.Key == nil {
		return nil, errors.New("dashboard: no server key")
	}
	d.notes = d.Key.Sealer("dashboard note")
	d.pages = map[string]*template.Template{}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" || strings.HasPrefix(base, "_") {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/_*.html", n)
		if err != nil {
			return nil, fmt.Errorf("dashboard template %s: %w", base, err)
		}
		d.pages[base] = t
	}
	return &d, nil
}

func (d *Dashboard) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Handler is a page handler. An error it returns is shown as an error page:
// a *problem.Error (what the operations and the pages' own checks return)
// with its kind's status and its message; any other error as a 500 with the
// request id only, never internals.
type Handler func(w http.ResponseWriter, r *http.Request) error

// notFound is the page of a thing the user's organisation cannot see (404):
// "Inbox not found".
func notFound(what string) error { return problem.NotFoundf(what) }

// badRequest is a form or address the page cannot use (400), its text shown
// as written.
func badRequest(format string, args ...any) error {
	return problem.Errorf(problem.Invalid, "invalid_form", format, args...)
}

// forbidden is an action the user may not take (403), its text shown as
// written; code is the API's code for the same refusal.
func forbidden(code, msg string) error { return problem.Errorf(problem.Forbidden, code, "%s", msg) }

// Static serves the stylesheet and script, cached for a day.
func (d *Dashboard) Static() http.Handler {
	sub, _ := fs.Sub(staticFS, "static")
	files := http.StripPrefix("/static/", http.FileServer(http.FS(sub)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})
}

// pageCSP is the policy of every dashboard page: its own scripts, styles and
// frames only, nothing inline, no plugins, not framed elsewhere.
const pageCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"frame-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'self'; base-uri 'none'; object-src 'none'"

func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// ServeHTTP runs the page and shows its error, if any. A page loaded in a tab
// takes the one-shot note a form left for it (takeNote), so that it shows the
// note once.
func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if d := pagesOf(r); d != nil && isNavigation(r) {
		if n := d.takeNote(w, r); n != (note{}) {
			r = r.WithContext(withNote(r.Context(), n))
		}
	}
	err := h(w, r)
	if err == nil {
		return
	}
	status, msg := http.StatusInternalServerError, "Something went wrong on our side. Request id: "+httpx.RequestID(r.Context())
	he := httpx.AsError(err)
	switch {
	case he != nil && he.Status < 500:
		status, msg = he.Status, pageMessage(he)
	case errors.Is(err, tenant.ErrNotFound):
		status, msg = http.StatusNotFound, "Not found"
	default:
		slog.Error("Dashboard page failed", "method", r.Method, "path", r.URL.Path,
			"request_id", httpx.RequestID(r.Context()), "err", err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if d := pagesOf(r); d != nil {
		d.render(w, r, "error", map[string]any{"Title": http.StatusText(status), "Status": status, "StatusText": http.StatusText(status), "Message": msg})
	}
}

// pageMessage is what the error page says of a refusal: its message, a
// sentence with its full stop when it names invalid fields ("retention_time
// must be between 60 and 86400 seconds.").
func pageMessage(he *httpx.Error) string {
	if len(he.Fields) > 0 && !strings.HasSuffix(he.Message, ".") {
		return he.Message + "."
	}
	return he.Message
}

// view is what every page's template sees besides its own data.
type view struct {
	Title     string
	Principal tenant.Principal
	Nav       string
	Flash     string
	Data      any
	CSRFPath  string
}

type dashKey struct{}

// pagesOf returns the dashboard serving the request (set by Protect).
func pagesOf(r *http.Request) *Dashboard {
	d, _ := r.Context().Value(dashKey{}).(*Dashboard)
	return d
}

// render writes the page name with data; status 200 unless the caller wrote one.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, name string, data any) error {
	return d.execute(w, r, name, "layout.html", data)
}

// fragment writes the page's content alone, without the layout: what a live
// page fetches to swap in.
func (d *Dashboard) fragment(w http.ResponseWriter, r *http.Request, name string, data any) error {
	return d.execute(w, r, name, "content", data)
}

func (d *Dashboard) execute(w http.ResponseWriter, r *http.Request, name, tmpl string, data any) error {
	t := d.pages[name]
	if t == nil {
		return fmt.Errorf("no template %q", name)
	}
	v := view{Principal: tenant.PrincipalFrom(r.Context()), Data: data, Flash: noteFrom(r.Context()).Message}
	if m, ok := data.(interface{ meta() (string, string) }); ok {
		v.Title, v.Nav = m.meta()
	}
	if m, ok := data.(map[string]any); ok {
		if s, ok := m["Title"].(string); ok {
			v.Title = s
		}
		if s, ok := m["Nav"].(string); ok {
			v.Nav = s
		}
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, tmpl, v); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// redirect answers a form post with 303 to path, with a message the next page
// shows once (a one-shot note, never a query parameter).
func redirect(w http.ResponseWriter, r *http.Request, path, flash string) error {
	if d := pagesOf(r); d != nil && flash != "" {
		d.setNote(w, r, note{Message: flash})
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
	return nil
}

// orgCookie remembers which of a user's organisations the dashboard shows.
const orgCookie = "catchbox_org"

// Protect is the middleware of every dashboard route: it refuses
// state-changing requests from other origins (CSRF; the sign-in form too) and
// makes the dashboard reachable from the request for error pages.
func (d *Dashboard) Protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(contextWith(r, d))
		if err := d.Sessions.CrossOrigin.Check(r); err != nil {
			Handler(func(http.ResponseWriter, *http.Request) error {
				return forbidden("cross_origin_request", "This form was sent from another site and was refused.")
			}).ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// RequireUser lets signed-in users through, acting for the organisation they
// chose (a cookie, checked against their memberships on every request);
// others are sent to the sign-in page.
func (d *Dashboard) RequireUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok, err := d.Sessions.Authenticate(r)
		if err != nil {
			Handler(func(http.ResponseWriter, *http.Request) error { return err }).ServeHTTP(w, r)
			return
		}
		if !ok {
			d.toSignIn(w, r)
			return
		}
		if c, err := r.Cookie(orgCookie); err == nil {
			if o, ok := p.Member(c.Value); ok {
				p.Org = o
			}
		}
		next.ServeHTTP(w, r.WithContext(tenant.WithPrincipal(r.Context(), p)))
	})
}

func (d *Dashboard) toSignIn(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		securityHeaders(w.Header())
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		d.render(w, r, "signin", map[string]any{"Title": "Sign in", "Error": "Your session has ended. Sign in again."})
		return
	}
	next := r.URL.RequestURI()
	if next == "/" {
		http.Redirect(w, r, "/signin", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/signin?next="+url.QueryEscape(next), http.StatusSeeOther)
}
