package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

func TestPercentileNearestRank(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name    string
		samples []time.Duration
		p       int
		want    time.Duration
	}{
		{"single", ms(7), 99, 7 * time.Millisecond},
		{"median of odd", ms(1, 2, 3), 50, 2 * time.Millisecond},
		{"median of even is the lower", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p99 of 100 is the 99th", ms(hundred...), 99, 99 * time.Millisecond},
		{"p90 of 100 is the 90th", ms(hundred...), 90, 90 * time.Millisecond},
		{"p99 of 10 is the max", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"empty", nil, 50, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.samples, tc.p); got != tc.want {
				t.Errorf("percentile(%v, %d) = %v, want %v", tc.samples, tc.p, got, tc.want)
			}
		})
	}
}

func TestSummarizeDoesNotReorderInput(t *testing.T) {
	in := []time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond}
	l := summarize(in)
	if l.Count != 3 || l.P50 != 2 || l.Max != 3 || l.Mean != 2 {
		t.Errorf("summarize = %+v", l)
	}
	if in[0] != 3*time.Millisecond {
		t.Errorf("summarize sorted its input in place: %v", in)
	}
}

func TestBuildMessageSmall(t *testing.T) {
	raw, err := buildMessage(messageSpec{From: "a@x.test", To: "b@y.test", Subject: "bench-r-1", Size: sizeSmall, Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(raw); n < 900 || n > 1500 {
		t.Errorf("small message is %d bytes, want about 1 KB", n)
	}
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if got := m.Header.Get("Subject"); got != "bench-r-1" {
		t.Errorf("subject = %q", got)
	}
	checkLines(t, raw)
}

func TestBuildMessageLarge(t *testing.T) {
	raw, err := buildMessage(messageSpec{From: "a@x.test", To: "b@y.test", Subject: "bench-r-2", Size: sizeLarge, Seq: 2})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(raw); n < 45000 || n > 56000 {
		t.Errorf("large message is %d bytes, want about 50 KB", n)
	}
	checkLines(t, raw)
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" {
		t.Fatalf("content type %q: %v", mt, err)
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	var attachments int
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("next part: %v", err)
		}
		if p.FileName() == "" {
			continue
		}
		attachments++
		enc, err := io.ReadAll(p)
		if err != nil {
			t.Fatal(err)
		}
		encoded := strings.ReplaceAll(string(enc), "\r\n", "")
		if len(encoded) != 40960 {
			t.Errorf("attachment is %d base64 characters, want 40960 (40 KiB)", len(encoded))
		}
		dec, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			t.Fatalf("attachment is not base64: %v", err)
		}
		if len(dec) != attachmentBytes {
			t.Errorf("attachment decodes to %d bytes, want %d", len(dec), attachmentBytes)
		}
	}
	if attachments != 1 {
		t.Errorf("found %d attachments, want 1", attachments)
	}
}

func TestBuildMessageUnknownSize(t *testing.T) {
	if _, err := buildMessage(messageSpec{Size: "huge"}); err == nil {
		t.Error("buildMessage accepted size huge")
	}
}

// checkLines asserts RFC 5322 line endings and the 998-octet line limit.
func checkLines(t *testing.T, raw []byte) {
	t.Helper()
	for i, line := range bytes.Split(raw, []byte("\r\n")) {
		if bytes.ContainsAny(line, "\r\n") {
			t.Fatalf("line %d has a bare CR or LF", i)
		}
		if len(line) > 998 {
			t.Fatalf("line %d is %d octets long", i, len(line))
		}
	}
}

// catcher is a minimal mail catcher on loopback: a real go-smtp server that
// keeps subjects, and an HTTP inbox search with wait=true, enough to check
// what the tool sends and how it measures.
type catcher struct {
	mu       sync.Mutex
	subjects []string
	rcpts    []string // every accepted recipient
	rcptMsg  []int    // index in subjects of the message each recipient got
	sessions int
	arrived  chan struct{} // closed and replaced on each message
	auth     string        // required "user:pass" when set
	hold     bool          // hold wait=true searches (false: answer at once)
	smtpAddr string
	httpURL  string
}

func newCatcher(t *testing.T, auth string, hold bool) *catcher {
	t.Helper()
	c := &catcher{arrived: make(chan struct{}), auth: auth, hold: hold}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) {
		c.mu.Lock()
		c.sessions++
		c.mu.Unlock()
		return &catcherSession{c: c}, nil
	}))
	srv.AllowInsecureAuth = true
	srv.Domain = "catcher.test"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c.smtpAddr = ln.Addr().String()

	hs := httptest.NewServer(http.HandlerFunc(c.search))
	t.Cleanup(hs.Close)
	c.httpURL = hs.URL
	return c
}

func (c *catcher) search(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Api-Key") != "k" {
		http.Error(w, "no key", http.StatusUnauthorized)
		return
	}
	want := r.URL.Query().Get("subject_includes")
	prefix := r.URL.Query().Get("to_addr_prefix")
	for {
		c.mu.Lock()
		n := 0
		if prefix != "" {
			for _, to := range c.rcpts {
				if strings.HasPrefix(strings.ToLower(to), strings.ToLower(prefix)) {
					n++
				}
			}
		} else {
			for _, s := range c.subjects {
				if strings.Contains(s, want) {
					n++
				}
			}
		}
		arrived := c.arrived
		c.mu.Unlock()
		if n > 0 || r.URL.Query().Get("wait") != "true" || !c.hold {
			json.NewEncoder(w).Encode(map[string]any{"total_count": n, "data": []any{}})
			return
		}
		select {
		case <-arrived:
		case <-r.Context().Done():
			return
		}
	}
}

type catcherSession struct {
	c      *catcher
	authed bool
	to     []string
}

func (s *catcherSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *catcherSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user+":"+pass != s.c.auth {
			return errors.New("bad credentials")
		}
		s.authed = true
		return nil
	}), nil
}

func (s *catcherSession) Mail(string, *smtp.MailOptions) error {
	if s.c.auth != "" && !s.authed {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "authentication required"}
	}
	return nil
}

func (s *catcherSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if strings.HasPrefix(to, "reject") {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	s.to = append(s.to, to)
	return nil
}

func (s *catcherSession) Data(r io.Reader) error {
	m, err := mail.ReadMessage(r)
	if err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, m.Body); err != nil {
		return err
	}
	s.c.mu.Lock()
	for _, to := range s.to {
		s.c.rcpts = append(s.c.rcpts, to)
		s.c.rcptMsg = append(s.c.rcptMsg, len(s.c.subjects))
	}
	s.to = nil
	s.c.subjects = append(s.c.subjects, m.Header.Get("Subject"))
	close(s.c.arrived)
	s.c.arrived = make(chan struct{})
	s.c.mu.Unlock()
	return nil
}

func (s *catcherSession) Reset()        { s.to = nil }
func (s *catcherSession) Logout() error { return nil }

func runJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	var out bytes.Buffer
	if err := run(append(args, "--json"), &out); err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		t.Fatalf("decode %q: %v", out.String(), err)
	}
}

func TestSMTPSendsEveryMessageOverPersistentConnections(t *testing.T) {
	c := newCatcher(t, "", false)
	var rep smtpReport
	runJSON(t, &rep, "smtp", "--addr", c.smtpAddr, "--messages", "40", "--conns", "4", "--size", "large", "--run", "t1", "--pid", strconv.Itoa(os.Getpid()))
	if rep.OK != 40 || rep.Errors != 0 {
		t.Fatalf("ok=%d errors=%d samples=%v", rep.OK, rep.Errors, rep.ErrorSamples)
	}
	if rep.Latency.Count != 40 || rep.Latency.P99 <= 0 || rep.Rate <= 0 {
		t.Errorf("report = %+v", rep)
	}
	if rep.RSS == nil || rep.RSS.PeakRSSMiB <= 0 {
		t.Errorf("no RSS in report: %+v", rep.RSS)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions != 4 {
		t.Errorf("server saw %d sessions, want 4 (one per connection)", c.sessions)
	}
	seen := map[string]bool{}
	for _, s := range c.subjects {
		seen[s] = true
	}
	if len(seen) != 40 || !seen["bench-t1-0"] || !seen["bench-t1-39"] {
		t.Errorf("server got %d distinct subjects: %v", len(seen), c.subjects)
	}
}

func TestSMTPCountsRefusalsAndKeepsTheConnection(t *testing.T) {
	c := newCatcher(t, "", false)
	var rep smtpReport
	runJSON(t, &rep, "smtp", "--addr", c.smtpAddr, "--messages", "5", "--conns", "1", "--to", "reject@default.localhost")
	if rep.OK != 0 || rep.Errors != 5 || len(rep.ErrorSamples) == 0 || !strings.Contains(rep.ErrorSamples[0], "550") {
		t.Fatalf("report = %+v", rep)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions != 1 {
		t.Errorf("server saw %d sessions, want 1: a refused recipient must not cost a reconnect", c.sessions)
	}
}

func TestSMTPAuth(t *testing.T) {
	c := newCatcher(t, "ns:secret", false)
	var rep smtpReport
	runJSON(t, &rep, "smtp", "--addr", c.smtpAddr, "--messages", "3", "--conns", "1", "--auth", "ns:secret")
	if rep.OK != 3 {
		t.Fatalf("with credentials: %+v", rep)
	}
	runJSON(t, &rep, "smtp", "--addr", c.smtpAddr, "--messages", "3", "--conns", "1", "--auth", "ns:wrong")
	if rep.OK != 0 || rep.Errors != 3 {
		t.Fatalf("with wrong credentials: %+v", rep)
	}
}

func TestWaitMeasuresHeldSearches(t *testing.T) {
	c := newCatcher(t, "", true)
	var rep waitReport
	runJSON(t, &rep, "wait", "--api", c.httpURL, "--smtp", c.smtpAddr, "--key", "k", "--rounds", "5", "--hold-delay", "5ms")
	if rep.OK != 5 || rep.Errors != 0 || rep.Latency.Count != 5 {
		t.Fatalf("report = %+v", rep)
	}
}

func TestHeldAnswersEveryMail(t *testing.T) {
	c := newCatcher(t, "", true)
	var rep heldReport
	runJSON(t, &rep, "held", "--api", c.httpURL, "--smtp", c.smtpAddr, "--key", "k", "--waiters", "5", "--mails", "12",
		"--conns", "2", "--settle", "5ms", "--timeout", "30s")
	if rep.OK != 12 || rep.Errors != 0 || rep.Latency.Count != 12 || rep.RechecksPerMail != -1 {
		t.Fatalf("report = %+v", rep)
	}
	// Each mail went to one held search's own prefix; the five first
	// searches, and the replacements of those answered, were mailed in turn.
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.rcpts) != 12 {
		t.Fatalf("%d recipients, want 12", len(c.rcpts))
	}
	seen := map[string]bool{}
	for _, to := range c.rcpts {
		if !strings.HasPrefix(to, "held-") || seen[to] {
			t.Fatalf("recipient %q (repeated or not a held search's)", to)
		}
		seen[to] = true
	}
}

func TestWaitDetectsASearchThatIsNotHeld(t *testing.T) {
	c := newCatcher(t, "", false)
	var rep waitReport
	runJSON(t, &rep, "wait", "--api", c.httpURL, "--smtp", c.smtpAddr, "--key", "k", "--rounds", "2", "--hold-delay", "5ms")
	if rep.OK != 0 || rep.Errors != 2 {
		t.Fatalf("report = %+v", rep)
	}
	if !strings.Contains(rep.ErrorSamples[0], "not held") && !strings.Contains(rep.ErrorSamples[0], "no match") {
		t.Errorf("error = %q", rep.ErrorSamples[0])
	}
}

func TestSearchAsksTheThreeQueries(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.RequestURI())
		mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/api/v1/") {
			io.WriteString(w, `{"messages_count": 7}`)
			return
		}
		if r.Header.Get("X-Api-Key") != "k" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, `{"total_count": 3}`)
	}))
	defer hs.Close()

	var rep searchReport
	runJSON(t, &rep, "search", "--api", hs.URL, "--key", "k", "--namespace", "ns1", "--requests", "3", "--warmup", "1",
		"--subject-includes", "password reset", "--to-addr-prefix", "user0042@")
	if len(rep.Queries) != 3 {
		t.Fatalf("report = %+v", rep)
	}
	for _, q := range rep.Queries {
		if q.Errors != 0 || q.Total != 3 || q.Latency.Count != 3 {
			t.Errorf("query %s: %+v", q.Name, q)
		}
	}
	runJSON(t, &rep, "search", "--mailpit", "--api", hs.URL, "--requests", "2", "--warmup", "0",
		"--subject-includes", "password reset", "--to-addr-prefix", "user0042@")
	if rep.Server != "mailpit" || rep.Queries[1].Total != 7 {
		t.Fatalf("mailpit report = %+v", rep)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"/api/emails/ns1/inbox?limit=10&offset=0",
		"/api/emails/ns1/inbox?limit=10&offset=0&subject_includes=password+reset",
		"/api/emails/ns1/inbox?limit=10&offset=0&to_addr_prefix=user0042%40",
		"/api/v1/messages?limit=10",
		`/api/v1/search?limit=10&query=subject%3A%22password+reset%22`,
		`/api/v1/search?limit=10&query=to%3A%22user0042%40%22`,
	}
	for _, w := range want {
		found := false
		for _, s := range seen {
			found = found || s == w
		}
		if !found {
			t.Errorf("no request for %s; saw %v", w, seen)
		}
	}
}

func TestSeedSpreadsOverNamespaces(t *testing.T) {
	for _, rcpts := range []string{"1", "3"} {
		t.Run("rcpts="+rcpts, func(t *testing.T) {
			c := newCatcher(t, "", false)
			var created []string
			var mu sync.Mutex
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.Header.Get("X-Api-Key") != "k" {
					w.WriteHeader(http.StatusBadRequest)
					return
				}
				mu.Lock()
				created = append(created, r.URL.Path)
				mu.Unlock()
				w.WriteHeader(http.StatusCreated)
			}))
			defer hs.Close()
			var rep seedReport
			runJSON(t, &rep, "seed", "--smtp", c.smtpAddr, "--messages", "60", "--conns", "3", "--namespaces", "3",
				"--rcpts", rcpts, "--api", hs.URL, "--key", "k")
			if rep.OK != 60 || rep.Errors != 0 {
				t.Fatalf("report = %+v", rep)
			}
			if len(created) != 3 || created[2] != "/api/namespace/seed0002/settings" {
				t.Errorf("created = %v", created)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			// Each namespace got 20 emails; its t-th is for user<t> with topic t mod 10.
			perNS := map[string][]string{}
			for i, to := range c.rcpts {
				ns := to[strings.Index(to, "@")+1:]
				perNS[ns] = append(perNS[ns], to[:strings.Index(to, "@")]+" "+c.subjects[c.rcptMsg[i]])
			}
			if len(perNS) != 3 {
				t.Fatalf("emails went to %d namespaces: %v", len(perNS), perNS)
			}
			for ns, emails := range perNS {
				if len(emails) != 20 {
					t.Errorf("%s got %d emails, want 20", ns, len(emails))
				}
				var resets, user7 int
				for _, e := range emails {
					if strings.HasSuffix(e, " password reset") {
						resets++
					}
					if strings.HasPrefix(e, "user0007 ") {
						user7++
					}
				}
				if resets != 2 || user7 != 1 {
					t.Errorf("%s: %d password resets (want 2 of 20), %d for user0007 (want 1): %v", ns, resets, user7, emails)
				}
			}
		})
	}
}

func TestReadMemoryOfThisProcess(t *testing.T) {
	m, err := readMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.HWM < m.RSS {
		t.Errorf("memory = %+v", m)
	}
	if _, err := readMemory(-1); err == nil {
		t.Error("readMemory(-1) succeeded")
	}
}

func TestRunRejectsUnknownSubcommandAndStrayArguments(t *testing.T) {
	if err := run([]string{"nope"}, io.Discard); err == nil {
		t.Error("unknown subcommand accepted")
	}
	if err := run([]string{"smtp", "extra"}, io.Discard); err == nil {
		t.Error("stray argument accepted")
	}
	if err := run([]string{"smtp", "--conns", "0"}, io.Discard); err == nil {
		t.Error("--conns 0 accepted")
	}
}

// The signin load posts the form as a browser does, each attempt from a
// loopback address of its own, and counts the answers.
func TestSigninPostsTheFormFromManyAddresses(t *testing.T) {
	var mu sync.Mutex
	sources := map[string]bool{}
	emails := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/signin" || r.Header.Get("Sec-Fetch-Site") != "same-origin" || r.Header.Get("Origin") == "" {
			http.Error(w, "not a same-origin form post", http.StatusForbidden)
			return
		}
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		mu.Lock()
		sources[host] = true
		emails[r.PostFormValue("email")] = true
		mu.Unlock()
		if r.PostFormValue("password") == "right" {
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	var rep signinReport
	runJSON(t, &rep, "signin", "--api", srv.URL, "--attempts", "30", "--concurrency", "10", "--pid", strconv.Itoa(os.Getpid()), "--settle", "1ms")
	if rep.Statuses["401"] != 30 || rep.Latency.Count != 30 || rep.RSS == nil || rep.SettledRSSMiB <= 0 {
		t.Fatalf("report %+v", rep)
	}
	if len(sources) != 30 || len(emails) != 30 {
		t.Fatalf("%d source addresses and %d accounts for 30 attempts", len(sources), len(emails))
	}
	runJSON(t, &rep, "signin", "--api", srv.URL, "--attempts", "5", "--concurrency", "5", "--email", "alice@example.com", "--password", "right")
	if rep.Statuses["303"] != 5 {
		t.Fatalf("right password: %v", rep.Statuses)
	}
}
