package outbound_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/outbound/destinations"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testkit"
)

// relayed is a message the test relay accepted.
type relayed struct {
	from string
	to   []string
	data string
}

// testRelay is an SMTP relay on a loopback port that requires AUTH PLAIN
// as relay-user/relay-pass and hands each accepted message to got.
type testRelay struct {
	url string
	got chan relayed
}

func newTestRelay(t *testing.T) *testRelay {
	t.Helper()
	r := &testRelay{got: make(chan relayed, 16)}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &relaySession{r: r}, nil }))
	srv.Domain = "relay.test"
	srv.AllowInsecureAuth = true
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	r.url = "smtp://relay-user:relay-pass@" + l.Addr().String() + "?tls=none"
	return r
}

type relaySession struct {
	r    *testRelay
	auth bool
	m    relayed
}

func (s *relaySession) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *relaySession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != "relay-user" || pass != "relay-pass" {
			return errors.New("bad credentials")
		}
		s.auth = true
		return nil
	}), nil
}
func (s *relaySession) Mail(from string, _ *smtp.MailOptions) error {
	if !s.auth {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Authentication required"}
	}
	s.m = relayed{from: from}
	return nil
}
func (s *relaySession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.m.to = append(s.m.to, to)
	return nil
}
func (s *relaySession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.m.data = string(b)
	s.r.got <- s.m
	return nil
}
func (s *relaySession) Reset()        {}
func (s *relaySession) Logout() error { return nil }

// next waits for the relay's next message.
func (r *testRelay) next(t *testing.T) relayed {
	t.Helper()
	return testkit.Receive(t, "the relay's next message", r.got)
}

var linkRE = regexp.MustCompile(`http://\S+/verify/destinations/\S+`)

// destinationJSON is a destination as the API shows it.
type destinationJSON struct {
	ID         string `json:"id"`
	Email      string `json:"email"`
	Status     string `json:"status"`
	VerifiedAt string `json:"verified_at"`
	CreatedAt  string `json:"created_at"`
}

// TestDestinationVerification: POST /api/destinations mails a signed link
// through the relay (AUTH as configured); until it is followed a send to the
// address is 403 recipient_not_verified; a tampered link is 404; following
// the link verifies it and the send is accepted; another organisation can
// neither see nor delete it; DELETE makes the address 403 again.
func TestDestinationVerification(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		relay := newTestRelay(t)
		e := newAPIEnvWith(t, db, func(c *config.Serve) { c.RelayURL = relay.url })
		if err := e.svc.Jobs.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			e.svc.Jobs.Stop(ctx)
		})
		sendBody := map[string]any{"to": []string{"partner@example.com"}, "subject": "Hi", "text": "x"}

		r := e.do(e.key, "POST", "/api/destinations", map[string]any{"email": "Partner@Example.com"})
		if r.status != http.StatusAccepted {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		var created struct{ Data destinationJSON }
		r.json(t, &created)
		if created.Data.Email != "partner@example.com" || created.Data.Status != "pending" || created.Data.VerifiedAt != "" {
			t.Errorf("created %+v", created.Data)
		}
		m := relay.next(t)
		if m.from != "no-reply@localhost" || len(m.to) != 1 || m.to[0] != "partner@example.com" ||
			!strings.Contains(m.data, "Subject: Verify partner@example.com as a Catchbox destination") {
			t.Errorf("relayed %+v", m)
		}
		link := linkRE.FindString(m.data)
		if link == "" {
			t.Fatalf("no link in %s", m.data)
		}

		if r := e.do(e.key, "POST", "/api/emails/send?namespace=default", sendBody); r.status != http.StatusForbidden ||
			!strings.Contains(string(r.body), `"code":"recipient_not_verified"`) {
			t.Errorf("send to a pending destination: %d %s", r.status, r.body)
		}

		u, _ := url.Parse(link)
		q := u.Query()
		exp, _ := strconv.ParseInt(q.Get("expires"), 10, 64)
		q.Set("expires", strconv.FormatInt(exp+3600, 10))
		u.RawQuery = q.Encode()
		for _, bad := range []string{u.String(), strings.Replace(link, created.Data.ID, outstore.NewID(), 1)} {
			resp, err := http.Get(bad)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("tampered link %s: %d", bad, resp.StatusCode)
			}
		}
		resp, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"verified"`) {
			t.Fatalf("follow the link: %d %s", resp.StatusCode, body)
		}
		e.send("default", sendBody)

		// Asked again once verified: 200, no mail.
		if r := e.do(e.key, "POST", "/api/destinations", map[string]any{"email": "partner@example.com"}); r.status != http.StatusOK {
			t.Errorf("again: %d %s", r.status, r.body)
		}

		var list struct{ Data []destinationJSON }
		e.do(e.otherKey, "GET", "/api/destinations", nil).json(t, &list)
		if len(list.Data) != 0 {
			t.Errorf("another organisation sees %+v", list.Data)
		}
		if r := e.do(e.otherKey, "DELETE", "/api/destinations/"+created.Data.ID, nil); r.status != http.StatusNotFound {
			t.Errorf("another organisation's delete: %d", r.status)
		}
		e.do(e.key, "GET", "/api/destinations", nil).json(t, &list)
		if len(list.Data) != 1 || list.Data[0].Status != "verified" || list.Data[0].VerifiedAt == "" {
			t.Errorf("list %+v", list.Data)
		}
		if r := e.do(e.key, "DELETE", "/api/destinations/"+created.Data.ID, nil); r.status != http.StatusNoContent {
			t.Errorf("delete: %d %s", r.status, r.body)
		}
		if r := e.do(e.key, "POST", "/api/emails/send?namespace=default", sendBody); r.status != http.StatusForbidden {
			t.Errorf("send after delete: %d %s", r.status, r.body)
		}
		select {
		case m := <-relay.got:
			t.Errorf("a second mail was relayed: %+v", m)
		default:
		}
	})
}

// TestDestinationLimits: a bad email is 400 naming the field; the
// verification mails of an hour are limited (429 with Retry-After), and
// the allowance returns an hour later; past MaxDestinations a new address
// is 403 destination_limit_reached.
func TestDestinationLimits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		for _, body := range []any{map[string]any{}, map[string]any{"email": "not an address"},
			map[string]any{"email": "Jane <jane@example.com>"}, map[string]any{"email": 5}} {
			r := e.do(e.key, "POST", "/api/destinations", body)
			var b errorBody
			r.json(t, &b)
			if r.status != http.StatusBadRequest || len(b.Errors) != 1 || b.Errors[0].Field != "email" && b.Code != "invalid_json" {
				t.Errorf("%v: %d %s", body, r.status, r.body)
			}
		}
		for i := range destinations.MaxVerificationMailsPerHour {
			if r := e.do(e.key, "POST", "/api/destinations", map[string]any{"email": "user" + strconv.Itoa(i) + "@example.com"}); r.status != http.StatusAccepted {
				t.Fatalf("mail %d: %d %s", i, r.status, r.body)
			}
		}
		r := e.do(e.key, "POST", "/api/destinations", map[string]any{"email": "user0@example.com"})
		if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "3600" ||
			!strings.Contains(string(r.body), `"code":"verification_rate_limited"`) {
			t.Errorf("past the allowance: %d %q %s", r.status, r.header.Get("Retry-After"), r.body)
		}
		if r := e.do(e.otherKey, "POST", "/api/destinations", map[string]any{"email": "user0@example.com"}); r.status != http.StatusAccepted {
			t.Errorf("another organisation's allowance: %d %s", r.status, r.body)
		}
		e.later(time.Hour)
		if r := e.do(e.key, "POST", "/api/destinations", map[string]any{"email": "user0@example.com"}); r.status != http.StatusAccepted {
			t.Errorf("an hour later: %d %s", r.status, r.body)
		}
		ds, err := e.svc.Outbound.Destinations.List(context.Background(), e.org.ID)
		if err != nil || len(ds) != destinations.MaxVerificationMailsPerHour {
			t.Errorf("%d destinations (%v)", len(ds), err)
		}
		for i := len(ds); i < destinations.MaxDestinations; i++ {
			if _, _, err := e.svc.Outbound.Destinations.AddVerified(context.Background(), e.org.ID,
				"more"+strconv.Itoa(i)+"@example.com"); err != nil {
				t.Fatal(err)
			}
		}
		e.later(time.Hour)
		r = e.do(e.key, "POST", "/api/destinations", map[string]any{"email": "one-too-many@example.com"})
		if r.status != http.StatusForbidden || !strings.Contains(string(r.body), `"code":"destination_limit_reached"`) {
			t.Errorf("past the destination limit: %d %s", r.status, r.body)
		}
	})
}

// TestDestinationRequestsAtOnce: twenty requests for one new address at
// once store one destination and send exactly the hour's allowance of
// verification mails; the rest are 429.
func TestDestinationRequestsAtOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		const n = 20
		statuses := make(chan int, n)
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses <- e.do(e.key, "POST", "/api/destinations", map[string]any{"email": "same@example.com"}).status
			}()
		}
		wg.Wait()
		close(statuses)
		count := map[int]int{}
		for s := range statuses {
			count[s]++
		}
		if count[http.StatusAccepted] != destinations.MaxVerificationMailsPerHour || count[http.StatusTooManyRequests] != n-destinations.MaxVerificationMailsPerHour {
			t.Errorf("statuses %v", count)
		}
		ds, err := e.svc.Outbound.Destinations.List(context.Background(), e.org.ID)
		if err != nil || len(ds) != 1 {
			t.Errorf("%d destinations (%v)", len(ds), err)
		}
	})
}
