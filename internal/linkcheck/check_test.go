package linkcheck

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/deliverability/dnstest"
	"github.com/catchbox/catchbox/internal/egress"
	"github.com/catchbox/catchbox/internal/egress/egresstest"
	"github.com/catchbox/catchbox/internal/message"
)

// site is a loopback HTTP server with one path per case the checker must
// tell apart, and a record of what it was asked.
type site struct {
	*httptest.Server
	mu      sync.Mutex
	methods map[string][]string // path: the methods asked, in order
	hang    chan struct{}       // closed when the test ends: /hang's answer
	written atomic.Int64        // bytes /huge wrote before the client went away
	hugeEnd chan error          // /huge's last write error
}

func newSite(t *testing.T) *site {
	s := &site{methods: map[string][]string{}, hang: make(chan struct{}), hugeEnd: make(chan error, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("fine")) })
	mux.HandleFunc("/r/{n}", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.PathValue("n"), &n)
		if n == 0 {
			http.Redirect(w, r, "/ok", http.StatusFound) // relative, and another code
			return
		}
		http.Redirect(w, r, fmt.Sprintf("%s/r/%d", s.URL, n-1), http.StatusMovedPermanently)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/broken", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "broken", http.StatusInternalServerError) })
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-s.hang:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/no-head", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Write([]byte("only GET"))
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNotImplemented)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		chunk := make([]byte, 64<<10)
		for s.written.Load() < 4<<30 {
			n, err := w.Write(chunk)
			s.written.Add(int64(n))
			if err != nil {
				s.hugeEnd <- err
				return
			}
		}
		s.hugeEnd <- nil
	})
	mux.HandleFunc("/to-ftp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "ftp://files.example/x")
		w.WriteHeader(http.StatusFound)
	})
	mux.HandleFunc("/no-location", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusFound) })
	mux.HandleFunc("/private", func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); ok || r.Header.Get("Cookie") != "" {
			w.WriteHeader(http.StatusTeapot) // credentials were sent
		}
	})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.methods[r.URL.Path] = append(s.methods[r.URL.Path], r.Method)
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		close(s.hang)
		s.Close()
	})
	return s
}

func (s *site) asked(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.methods[path]...)
}

func targets(urls ...string) []message.Target {
	out := make([]message.Target, len(urls))
	for i, u := range urls {
		out[i] = message.Target{URL: u, Image: strings.HasSuffix(u, ".png")}
	}
	return out
}

// TestCheck: each kind of answer a link can get, on loopback in local mode.
func TestCheck(t *testing.T) {
	s := newSite(t)
	c := NewChecker(CheckerConfig{AllowPrivate: true, URLTimeout: 2 * time.Second})
	defer c.Close()
	u := s.URL
	got := c.Check(context.Background(), targets(u+"/ok", u+"/r/3", u+"/missing", u+"/broken", u+"/loop",
		u+"/hang", u+"/huge", u+"/no-head", u+"/to-ftp", u+"/no-location", u+"/ok?img.png", "http://127.0.0.1:1/closed", strings.Replace(u, "http://", "http://user:secret@", 1)+"/private"))
	want := []Link{
		{URL: u + "/ok", Kind: "link", StatusCode: 200, FinalURL: u + "/ok"},
		{URL: u + "/r/3", Kind: "link", StatusCode: 200, FinalURL: u + "/ok", Redirects: 4},
		{URL: u + "/missing", Kind: "link", StatusCode: 404, FinalURL: u + "/missing", Error: "HTTP 404 Not Found"},
		{URL: u + "/broken", Kind: "link", StatusCode: 500, FinalURL: u + "/broken", Error: "HTTP 500 Internal Server Error"},
		{URL: u + "/loop", Kind: "link", StatusCode: 301, FinalURL: u + "/loop", Redirects: 10, Error: "more than 10 redirects"},
		{URL: u + "/hang", Kind: "link", FinalURL: u + "/hang", Error: "no answer within 2s"},
		{URL: u + "/huge", Kind: "link", StatusCode: 200, FinalURL: u + "/huge"},
		{URL: u + "/no-head", Kind: "link", StatusCode: 200, FinalURL: u + "/no-head"},
		{URL: u + "/to-ftp", Kind: "link", StatusCode: 302, FinalURL: "ftp://files.example/x", Redirects: 1, Error: "not an http or https URL"},
		{URL: u + "/no-location", Kind: "link", StatusCode: 302, FinalURL: u + "/no-location", Error: "HTTP 302 without a Location to follow"},
		{URL: u + "/ok?img.png", Kind: "image", StatusCode: 200, FinalURL: u + "/ok?img.png"},
		{URL: "http://127.0.0.1:1/closed", Kind: "link", FinalURL: "http://127.0.0.1:1/closed", Error: "connection refused"},
		{URL: strings.Replace(u, "http://", "http://user:secret@", 1) + "/private", Kind: "link", StatusCode: 200,
			FinalURL: strings.Replace(u, "http://", "http://user:secret@", 1) + "/private"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d results for %d URLs", len(got), len(want))
	}
	for i := range want {
		g := got[i]
		g.DurationMs = 0
		if g != want[i] {
			t.Errorf("result %d:\n got %+v\nwant %+v", i, g, want[i])
		}
	}
	if got[5].DurationMs < 2000 {
		t.Errorf("/hang took %d ms, less than its time limit", got[5].DurationMs)
	}
	// HEAD first; GET only where HEAD was answered with an error.
	for path, methods := range map[string]string{"/ok": "HEAD HEAD HEAD", "/missing": "HEAD GET", "/broken": "HEAD GET",
		"/no-head": "HEAD GET", "/huge": "HEAD GET", "/r/3": "HEAD", "/loop": strings.Repeat("HEAD ", 11)} {
		if got := strings.Join(s.asked(path), " "); got != strings.TrimSpace(methods) {
			t.Errorf("%s was asked %q, want %q", path, got, methods)
		}
	}
	// The huge body was not read: the server's writes failed once the
	// checker closed the connection, long before the body's end.
	if err := <-s.hugeEnd; err == nil {
		t.Error("/huge wrote its whole body")
	}
	if n := s.written.Load(); n > 256<<20 {
		t.Errorf("/huge wrote %d bytes before the client went away", n)
	}
}

// TestCheckPrivateTargets: in server mode (private targets not allowed) a
// loopback, private or link-local URL is refused without a request, in each
// of its spellings, as is a redirect to one; in local mode the same URLs are
// asked.
func TestCheckPrivateTargets(t *testing.T) {
	s := newSite(t)
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	res := egresstest.Resolver(t)
	var urls []string
	for _, f := range egresstest.Forms {
		urls = append(urls, "http://"+f.Host+":"+port+"/ok")
	}
	server := NewChecker(CheckerConfig{Resolver: res, URLTimeout: time.Second, Workers: 16, PerHost: 4})
	defer server.Close()
	for i, l := range server.Check(context.Background(), targets(urls...)) {
		if l.StatusCode != 0 || !strings.Contains(l.Error, egress.Setting) {
			t.Errorf("server mode, %s: %+v", egresstest.Forms[i].Host, l)
		}
	}
	if n := len(s.asked("/ok")); n != 0 {
		t.Fatalf("server mode: %d requests reached the loopback server", n)
	}

	local := NewChecker(CheckerConfig{AllowPrivate: true, Resolver: res, URLTimeout: time.Second, Workers: 16, PerHost: 4})
	defer local.Close()
	for i, l := range local.Check(context.Background(), targets(urls...)) {
		f := egresstest.Forms[i]
		if strings.Contains(l.Error, egress.Setting) {
			t.Errorf("local mode, %s refused: %+v", f.Host, l)
		}
		// The server listens on 127.0.0.1 only: IPv6 forms have no route
		// to it, nor the non-loopback addresses.
		if f.Reach && !strings.HasPrefix(f.Host, "[") && (l.StatusCode != 200 || l.Error != "") {
			t.Errorf("local mode, %s: %+v", f.Host, l)
		}
	}
	if len(s.asked("/ok")) == 0 {
		t.Fatal("local mode: no request reached the loopback server")
	}
}

// TestRedirectToPrivateTarget: in server mode, every hop's target is checked
// before it is asked for (a redirect's Location included), and the
// connection is checked again when it is dialled.
func TestRedirectToPrivateTarget(t *testing.T) {
	s := newSite(t)
	c := NewChecker(CheckerConfig{URLTimeout: time.Second})
	defer c.Close()
	// Check a redirect's target as check does after a first hop: the
	// private Location is refused without a request.
	r := &run{c: c, ctx: context.Background(), hosts: map[string]chan struct{}{}}
	u, _ := url.Parse(s.URL + "/ok")
	if _, _, err := r.ask(context.Background(), u); egress.Refused(err) == nil {
		t.Fatalf("ask of a loopback URL in server mode: %v", err)
	}
	// The dial-time check holds even when the URL check is skipped (a name
	// that resolved elsewhere when it was checked): the checker's client
	// itself refuses to connect.
	req, _ := http.NewRequest(http.MethodHead, s.URL+"/ok", nil)
	_, err := c.client.Do(req)
	re := egress.Refused(err)
	if re == nil || !re.Dial {
		t.Fatalf("request through the checker's client: %v", err)
	}
	if n := len(s.asked("/ok")); n != 0 {
		t.Fatalf("%d requests reached the loopback server", n)
	}
}

// TestCheckLimits: no more than PerHost requests to one host and Workers in
// all at any time, over many hosts (names of the test's DNS server that all
// lead to one loopback server).
func TestCheckLimits(t *testing.T) {
	var inFlight, maxAll atomic.Int64
	var mu sync.Mutex
	perHost, maxHost := map[string]int{}, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := maxAll.Load(); n > m && !maxAll.CompareAndSwap(m, n); m = maxAll.Load() {
		}
		host, _, _ := net.SplitHostPort(r.Host)
		mu.Lock()
		perHost[host]++
		maxHost = max(maxHost, perHost[host])
		mu.Unlock()
		time.Sleep(5 * time.Millisecond) // overlap the requests in flight
		mu.Lock()
		perHost[host]--
		mu.Unlock()
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	var zone []string
	var urls []string
	for h := range 6 {
		zone = append(zone, fmt.Sprintf("h%d.test. 60 IN A 127.0.0.1", h))
		for i := range 10 {
			urls = append(urls, fmt.Sprintf("http://h%d.test:%s/%d", h, port, i))
		}
	}
	dns := dnstest.Start(t, zone...)
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, dns.Addr)
	}}
	c := NewChecker(CheckerConfig{AllowPrivate: true, Resolver: res, Workers: 5, PerHost: 2})
	defer c.Close()
	for _, l := range c.Check(context.Background(), targets(urls...)) {
		if l.StatusCode != 200 {
			t.Fatalf("%+v", l)
		}
	}
	if m := maxAll.Load(); m > 5 || m < 1 {
		t.Errorf("%d requests in flight at once, limit 5", m)
	}
	if maxHost > 2 || maxHost < 1 {
		t.Errorf("%d requests to one host at once, limit 2", maxHost)
	}
}

// TestCheckRunLimit: at the run's time limit, a URL under way is stopped and
// those not started are reported as not checked.
func TestCheckRunLimit(t *testing.T) {
	s := newSite(t)
	c := NewChecker(CheckerConfig{AllowPrivate: true, RunTimeout: 300 * time.Millisecond, Workers: 1})
	defer c.Close()
	got := c.Check(context.Background(), targets(s.URL+"/hang", s.URL+"/ok", s.URL+"/ok2"))
	if got[0].Error != "stopped at the run's 300ms limit" {
		t.Errorf("URL under way: %+v", got[0])
	}
	for _, l := range got[1:] {
		if l.Error != "not checked: the run reached its 300ms limit first" || l.StatusCode != 0 {
			t.Errorf("URL not started: %+v", l)
		}
	}
}

// TestCheckTLS: an https URL whose certificate the checker trusts is
// checked; one it does not is an error.
func TestCheckTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusting client's handshake failure
	srv.StartTLS()
	defer srv.Close()
	trusting := NewChecker(CheckerConfig{AllowPrivate: true, TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig})
	defer trusting.Close()
	if l := trusting.Check(context.Background(), targets(srv.URL+"/a"))[0]; l.StatusCode != 200 || l.Error != "" {
		t.Errorf("trusted certificate: %+v", l)
	}
	plain := NewChecker(CheckerConfig{AllowPrivate: true})
	defer plain.Close()
	if l := plain.Check(context.Background(), targets(srv.URL+"/a"))[0]; l.StatusCode != 0 || !strings.HasPrefix(l.Error, "TLS: ") {
		t.Errorf("untrusted certificate: %+v", l)
	}
}
