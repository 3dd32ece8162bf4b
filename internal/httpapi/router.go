// Package httpapi wires the HTTP API: every route in one function, and the
// middleware every request passes through (request id, panic recovery, body
// limit, API-key authentication). The handlers themselves live with their domain
// packages.
package httpapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Deps are the domain services the routes call.
type Deps struct {
	Tenants      *tenant.Service
	Inbox        *inbox.API
	SMTPEndpoint tenant.SMTPEndpoint
	// Extra registers further key-protected routes (features wired by the server).
	Extra []func(chi.Router)
	// Public registers routes that authenticate by other means (provider
	// webhooks with their own signatures).
	Public []func(chi.Router)
}

// NewRouter returns the HTTP handler of the whole API.
func NewRouter(d Deps) http.Handler {
	r := chi.NewRouter()
	r.Use(requestID, recoverPanics, limitBody)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, r, httpx.Errorf(http.StatusNotFound, "route_not_found", "no such endpoint: %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, r, httpx.Errorf(http.StatusMethodNotAllowed, "method_not_allowed", "%s is not allowed on %s", r.Method, r.URL.Path))
	})
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})

	r.Get("/api/openapi.yaml", serveOpenAPI)
	// Signed links: no API key, the signature is the credential.
	d.Inbox.DownloadRoutes(r)
	for _, f := range d.Public {
		f(r)
	}

	r.Group(func(r chi.Router) {
		r.Use(d.Tenants.RequireKey)
		r.Method(http.MethodGet, "/api/test", httpx.Handler(d.Tenants.TestKeyHandler))
		r.Method(http.MethodGet, "/api/namespaces", httpx.Handler(d.Tenants.ListNamespacesHandler))
		r.Method(http.MethodPost, "/api/namespace/{namespace}/settings", httpx.Handler(d.Tenants.UpsertSettingsHandler))
		r.Method(http.MethodGet, "/api/smtp/{namespace}", d.Tenants.SMTPSettingsHandler(d.SMTPEndpoint))
		d.Inbox.Routes(r)
		for _, f := range d.Extra {
			f(r)
		}
	})
	return r
}

func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := httpx.NewRequestID()
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(httpx.WithRequestID(r.Context(), id)))
	})
}

func recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				slog.Error("Handler panicked", "method", r.Method, "path", r.URL.Path,
					"request_id", httpx.RequestID(r.Context()), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				httpx.WriteError(w, r, fmt.Errorf("panic: %v", p))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > httpx.MaxBodyBytes {
			httpx.WriteError(w, r, httpx.Errorf(http.StatusRequestEntityTooLarge, "body_too_large", "request body is larger than %d bytes", httpx.MaxBodyBytes))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// NewHTTPServer returns an http.Server with time limits, so no client can hold a
// connection open by sending slowly. Write timeout is left to handlers: a held
// wait request lasts as long as the configured hold.
func NewHTTPServer(h http.Handler, waitHold time.Duration) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      waitHold + 60*time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}
