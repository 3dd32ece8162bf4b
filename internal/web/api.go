package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/httpx"
)

// apiCall runs an API handler for a dashboard form, in the request's
// context (so for its principal), with a JSON body: the form is held to the
// API's own rules and limits, which are written once, in the handler. params
// are the handler's path parameters. An error answer becomes an error the
// page shows, with the API's status and message and the fields it names.
func apiCall(r *http.Request, h httpx.Handler, method, target string, params map[string]string, body any, out any) error {
	var buf bytes.Buffer
	if body != nil {
		if err := json.NewEncoder(&buf).Encode(body); err != nil {
			return err
		}
	}
	ctx := r.Context()
	rctx := chi.NewRouteContext()
	for k, v := range params {
		rctx.URLParams.Add(k, v)
	}
	ctx = context.WithValue(ctx, chi.RouteCtxKey, rctx)
	req, err := http.NewRequestWithContext(ctx, method, target, &buf)
	if err != nil {
		return err
	}
	req.RemoteAddr = r.RemoteAddr
	req.Header.Set("Content-Type", "application/json")
	rec := &recorder{header: http.Header{}, Code: http.StatusOK}
	h.ServeHTTP(rec, req)
	if rec.Code >= 400 {
		var e struct {
			Message string `json:"message"`
			Errors  []struct {
				Field  string `json:"field"`
				Detail []struct {
					Description string `json:"description"`
				} `json:"detail"`
			} `json:"errors"`
		}
		json.Unmarshal(rec.Body.Bytes(), &e)
		msg := e.Message
		var parts []string
		for _, f := range e.Errors {
			for _, d := range f.Detail {
				parts = append(parts, f.Field+" "+d.Description)
			}
		}
		if len(parts) > 0 {
			msg = strings.Join(parts, "; ")
		}
		if rec.Code >= 500 {
			return fmt.Errorf("API %s %s answered %d", method, target, rec.Code)
		}
		return &httpx.Error{Status: rec.Code, Message: msg}
	}
	if out != nil && rec.Body.Len() > 0 {
		return json.Unmarshal(rec.Body.Bytes(), out)
	}
	return nil
}

// recorder keeps an API handler's answer for the page.
type recorder struct {
	header http.Header
	Code   int
	Body   bytes.Buffer
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.Code, r.wrote = code, true
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.Body.Write(b)
}
