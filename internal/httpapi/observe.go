package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/limit"
	"github.com/catchbox/catchbox/internal/metrics"
)

// observe is the access log and the HTTP metrics: one log line per request
// (method, route pattern, status, duration, bytes, request id, key id, and
// for a 4xx or 5xx the error code), and the request counted and timed by
// route and status. It never logs the key, the query (which can hold search
// terms) or a path parameter: the route pattern stands for the path.
//
// A 2xx, 3xx or 4xx is logged at Info, a 5xx at Error; with
// accessLog false only the 4xx and 5xx are logged, so that every failure can
// still be found by the request id its answer carries. Refusals are the
// exception: a 401, 429 or 503 is logged through refusals (limit.Quiet), at
// most once per interval for each status, code and client address (clientKey)
// with a count of the others, so that a flood of refused requests does not
// flood the log; the metrics count each of them.
func observe(accessLog bool, refusals *limit.Quiet, clientKey func(*http.Request) string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ctx, note := httpx.WithNote(r.Context())
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r.WithContext(ctx))
			d := time.Since(start)
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK // nothing written: net/http answers 200
			}
			route := "unmatched"
			if rc := chi.RouteContext(ctx); rc != nil && rc.RoutePattern() != "" {
				route = rc.RoutePattern()
			}
			metrics.HTTPRequest(route, r.Method, status, d)
			level := slog.LevelInfo
			switch {
			case status >= 500:
				level = slog.LevelError
			case status >= 400:
				level = slog.LevelInfo // the client's mistake: nothing for an operator to do
			case !accessLog:
				return
			}
			if isRefusal(status) {
				kind := strconv.Itoa(status) + " " + note.Code
				refusals.Log(level, "HTTP request", kind, clientKey(r), requestAttrs(ctx, r, route, status, d, ww.BytesWritten(), note)...)
				return
			}
			logRequest(ctx, level, r, route, status, d, ww.BytesWritten(), note)
		})
	}
}

// isRefusal tells the answers that refuse a request before it is served:
// a credential that is missing or wrong, a limit reached, the server busy.
func isRefusal(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

func logRequest(ctx context.Context, level slog.Level, r *http.Request, route string, status int, d time.Duration, bytes int, note *httpx.Note) {
	if !slog.Default().Enabled(ctx, level) {
		return
	}
	slog.LogAttrs(ctx, level, "HTTP request", requestAttrs(ctx, r, route, status, d, bytes, note)...)
}

// requestAttrs are the details of a request's log line.
func requestAttrs(ctx context.Context, r *http.Request, route string, status int, d time.Duration, bytes int, note *httpx.Note) []slog.Attr {
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs,
		slog.String("method", r.Method),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
		slog.Int("bytes", bytes),
		slog.String("request_id", httpx.RequestID(ctx)),
	)
	if note.KeyID != "" {
		attrs = append(attrs, slog.String("key_id", note.KeyID))
	}
	if note.Code != "" {
		attrs = append(attrs, slog.String("code", note.Code))
	}
	return attrs
}
