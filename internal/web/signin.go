package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/limit"
	"github.com/catchbox/catchbox/internal/tenant"
)

// maxFormBytes bounds a dashboard form that carries no file.
const maxFormBytes = 64 << 10

func parseForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return badRequest("The form could not be read.")
	}
	return nil
}

// safeNext is where to go after signing in: a path of this site only, never
// another site (an open redirect).
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || len(next) > 2000 {
		return "/"
	}
	return next
}

// HomeHandler answers GET /: the namespaces of a signed-in user, else the
// sign-in page.
func (d *Dashboard) HomeHandler(w http.ResponseWriter, r *http.Request) error {
	p, ok, err := d.Sessions.Authenticate(r)
	if err != nil {
		return err
	}
	if !ok {
		return d.render(w, r, "signin", map[string]any{"Title": "Sign in", "Next": "/"})
	}
	if c, err := r.Cookie(orgCookie); err == nil {
		if o, ok := p.Member(c.Value); ok {
			p.Org = o
		}
	}
	return d.namespacesPage(w, r.WithContext(tenant.WithPrincipal(r.Context(), p)))
}

// SignInPageHandler answers GET /signin.
func (d *Dashboard) SignInPageHandler(w http.ResponseWriter, r *http.Request) error {
	if _, ok, err := d.Sessions.Authenticate(r); err == nil && ok {
		return redirect(w, r, safeNext(r.URL.Query().Get("next")), "")
	}
	return d.render(w, r, "signin", map[string]any{"Title": "Sign in", "Next": safeNext(r.URL.Query().Get("next"))})
}

// SignInHandler answers POST /signin: a new session on the right address and
// password; the form again, with one message for either being wrong, else
// (401); 429 with Retry-After while the attempt's throttles are empty, 503
// with Retry-After when too many passwords are being checked at once.
func (d *Dashboard) SignInHandler(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	email, next := strings.TrimSpace(r.PostForm.Get("email")), safeNext(r.PostForm.Get("next"))
	_, err := d.Sessions.SignIn(w, r, email, r.PostForm.Get("password"))
	var throttled *tenant.ErrThrottled
	switch {
	case err == nil:
		return redirect(w, r, next, "")
	case errors.As(err, &throttled):
		w.Header().Set("Retry-After", strconv.Itoa(limit.RetryAfter(throttled.Retry)))
		w.WriteHeader(http.StatusTooManyRequests)
		return d.render(w, r, "signin", map[string]any{"Title": "Sign in", "Next": next, "Email": email,
			"Error": "Too many failed attempts. Try again in " + strconv.Itoa(limit.RetryAfter(throttled.Retry)) + " seconds."})
	case errors.Is(err, tenant.ErrBusy):
		w.Header().Set("Retry-After", strconv.Itoa(limit.RetryAfter(tenant.BusyRetry)))
		w.WriteHeader(http.StatusServiceUnavailable)
		return d.render(w, r, "signin", map[string]any{"Title": "Sign in", "Next": next, "Email": email,
			"Error": "Too many sign-ins at once. Try again in a few seconds."})
	case errors.Is(err, tenant.ErrBadPassword):
		w.WriteHeader(http.StatusUnauthorized)
		return d.render(w, r, "signin", map[string]any{"Title": "Sign in", "Next": next, "Email": email,
			"Error": "Wrong email address or password."})
	default:
		return err
	}
}

// SignInLinkHandler answers GET /signin/link/{token}: a one-time sign-in link
// (printed at a local-mode start, or by catchbox admin signin-link) signs the
// browser in as its user and goes on to next, a path of this site (/ when
// none). The link is used up by its first request; a used, expired or unknown
// one shows the sign-in page with how to get a new one. The answer is never
// cached, and the link is not sent on as a referrer.
func (d *Dashboard) SignInLinkHandler(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-store")
	_, err := d.Sessions.SignInWithLink(w, r, chi.URLParam(r, "token"))
	switch {
	case err == nil:
		return redirect(w, r, safeNext(r.URL.Query().Get("next")), "")
	case errors.Is(err, tenant.ErrLinkInvalid):
		w.WriteHeader(http.StatusUnauthorized)
		return d.render(w, r, "signin", map[string]any{"Title": "Sign in", "Next": "/",
			"Error": "This sign-in link has expired or was already used. Run catchbox admin signin-link --user EMAIL for a new one (a restart in local mode prints one too)."})
	default:
		return err
	}
}

// SignOutHandler answers POST /signout: the session ends here and now.
func (d *Dashboard) SignOutHandler(w http.ResponseWriter, r *http.Request) error {
	if err := d.Sessions.SignOut(w, r); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: orgCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	return redirect(w, r, "/signin", "You are signed out.")
}

// SwitchOrgHandler answers POST /org/switch: the dashboard shows another of the
// user's organisations.
func (d *Dashboard) SwitchOrgHandler(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	o, ok := tenant.PrincipalFrom(r.Context()).Member(r.PostForm.Get("org"))
	if !ok {
		return forbidden("organisation_forbidden", "You are not a member of that organisation.")
	}
	http.SetCookie(w, &http.Cookie{Name: orgCookie, Value: o.ID, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: d.Sessions.Secure || r.TLS != nil})
	return redirect(w, r, "/", "Now showing "+o.Name+".")
}
