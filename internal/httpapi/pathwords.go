package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/httpx"
)

// pathWords keeps a path parameter from answering for a path word of the
// API. chi prefers a static segment to a parameter, but when the static route
// lacks the request's method (or is not built) it falls back to the parameter:
// GET /api/devices/custom would reach the device of id "custom", and
// GET /api/emails/outbound the email of id "outbound", each answering a
// misleading "not found" of its resource. A path word is a static segment of
// the route table where another route has a parameter, or one of seedWords,
// which hold the API description's paths before their routes exist. A request
// whose parameter caught one is answered as the router answers a path it
// lacks: 405 when another method serves the path, 404 route_not_found
// otherwise.
type pathWords struct {
	root chi.Routes
	once sync.Once
	// after maps a route's segments before a parameter ("/api/devices",
	// parameters written "{}") to the static segments that follow them in
	// the route table ("custom", "otp", ...).
	after map[string]map[string]bool
	// params are the parameters of each route pattern, in order.
	params map[string][]param
}

// param is one parameter of a route pattern and the segments before it.
type param struct{ name, prefix string }

// seedWords are path words of the API description (its outbound mail:
// /api/emails/outbound, /api/emails/send) whose routes may not be in the table
// yet, by the route segments before them. Namespaces may not take these names.
var seedWords = map[string][]string{"/api/emails": {"outbound", "send"}}

// methods are the methods the route table serves or may serve.
var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// learn reads the route table, once, at the first request (the table is
// complete by then).
func (p *pathWords) learn() {
	p.after = map[string]map[string]bool{}
	p.params = map[string][]param{}
	for prefix, words := range seedWords {
		p.after[prefix] = map[string]bool{}
		for _, w := range words {
			p.after[prefix][w] = true
		}
	}
	chi.Walk(p.root, func(_, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		p.params[route] = paramsOf(route)
		segs := strings.Split(strings.Trim(route, "/"), "/")
		for i, s := range segs {
			if isParam(s) {
				continue
			}
			prefix := shape(segs[:i])
			if p.after[prefix] == nil {
				p.after[prefix] = map[string]bool{}
			}
			p.after[prefix][s] = true
		}
		return nil
	})
}

// guard is the middleware of every route: a request whose route caught a path
// word in a parameter is answered as the router answers an unknown path.
func (p *pathWords) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rctx := chi.RouteContext(r.Context()); rctx != nil && p.caught(rctx.RoutePattern(), rctx.URLParams) {
			p.answer(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// caught reports whether a parameter of pattern holds a path word.
func (p *pathWords) caught(pattern string, params chi.RouteParams) bool {
	p.once.Do(p.learn)
	ps, ok := p.params[pattern]
	if !ok {
		ps = paramsOf(pattern)
	}
	for _, pm := range ps {
		v := paramValue(params, pm.name)
		if p.after[pm.prefix][v] {
			return true
		}
	}
	return false
}

// paramsOf lists the parameters of a route pattern.
func paramsOf(pattern string) []param {
	var out []param
	segs := strings.Split(strings.Trim(pattern, "/"), "/")
	for i, s := range segs {
		if isParam(s) {
			out = append(out, param{name: strings.Trim(s, "{}"), prefix: shape(segs[:i])})
		}
	}
	return out
}

// answer is the router's answer to a path no route serves with the request's
// method: 405 with Allow when a route serves it with another, 404 otherwise.
// Routes whose parameters would catch a path word do not count.
func (p *pathWords) answer(w http.ResponseWriter, r *http.Request) {
	if allowed := p.allowed(r); len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		httpx.WriteError(w, r, httpx.Errorf(http.StatusMethodNotAllowed, "method_not_allowed", "%s is not allowed on %s", r.Method, r.URL.Path))
		return
	}
	httpx.WriteError(w, r, httpx.Errorf(http.StatusNotFound, "route_not_found", "no such endpoint: %s %s", r.Method, r.URL.Path))
}

// allowed lists the methods that reach a route for r's path without a
// parameter catching a path word.
func (p *pathWords) allowed(r *http.Request) []string {
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	var out []string
	for _, m := range methods {
		rctx := chi.NewRouteContext()
		if pattern := p.root.Find(rctx, m, path); pattern != "" && !p.caught(pattern, rctx.URLParams) {
			out = append(out, m)
		}
	}
	return out
}

func isParam(seg string) bool { return strings.HasPrefix(seg, "{") }

// shape writes route segments with every parameter as "{}".
func shape(segs []string) string {
	var b strings.Builder
	for _, s := range segs {
		if isParam(s) {
			s = "{}"
		}
		fmt.Fprintf(&b, "/%s", s)
	}
	return b.String()
}

func paramValue(params chi.RouteParams, name string) string {
	for i := len(params.Keys) - 1; i >= 0; i-- {
		if params.Keys[i] == name {
			return params.Values[i]
		}
	}
	return ""
}
