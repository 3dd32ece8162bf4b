package outstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// start is the tests' first instant, on a millisecond boundary as stored.
var start = time.Date(2026, 11, 22, 3, 23, 50, 123_000_000, time.UTC)

// clock is a time the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is an outbound store on a fresh database, with two organisations.
type env struct {
	t     *testing.T
	db    *store.DB
	s     *outstore.Store
	clock *clock
	org   string // the organisation the tests send from
	other string // another organisation
}

func newEnv(t *testing.T, db *store.DB) *env {
	t.Helper()
	e := &env{t: t, db: db, s: outstore.NewStore(db, 0, nil), clock: &clock{now: start}}
	e.s.Now = e.clock.Now
	tenants := tenant.NewService(db, nil, time.Hour)
	for _, p := range []struct {
		name string
		id   *string
	}{{"acme", &e.org}, {"globex", &e.other}} {
		o, err := tenants.CreateOrg(context.Background(), p.name, 100, true)
		if err != nil {
			t.Fatalf("create organisation: %v", err)
		}
		*p.id = o.ID
	}
	return e
}

// message returns a new email of org to the recipients, each "to" and
// external unless its address ends in the sending namespace's domain.
func message(org, subject string, rcpts ...outstore.NewRecipient) outstore.NewEmail {
	id := outstore.NewID()
	return outstore.NewEmail{ID: id, OrgID: org, NamespaceID: "ns-" + org, Type: outstore.TypeNew,
		From:    outstore.Address{Email: "outbound-delivery@team.localhost"},
		Subject: subject, Text: "Hello", MessageID: "<" + id + "@localhost>", Recipients: rcpts,
		Source: []byte("Message-ID: <" + id + "@localhost>\r\nSubject: " + subject + "\r\n\r\nHello\r\n")}
}

func to(addr string, internal bool) outstore.NewRecipient {
	return outstore.NewRecipient{Type: outstore.To, Email: addr, Internal: internal}
}

// create stores in and returns it as created.
func (e *env) create(in outstore.NewEmail) outstore.Email {
	e.t.Helper()
	var out outstore.Email
	err := e.db.InTx(context.Background(), func(tx *store.Tx) error {
		var err error
		out, err = e.s.Create(context.Background(), tx, in)
		return err
	})
	if err != nil {
		e.t.Fatalf("create outbound email: %v", err)
	}
	return out
}

// record records ev of the email in a transaction of its own.
func (e *env) record(id string, ev outstore.NewEvent) (outstore.Event, error) {
	var out outstore.Event
	err := e.db.InTx(context.Background(), func(tx *store.Tx) error {
		var err error
		out, err = e.s.RecordEvent(context.Background(), tx, id, ev)
		return err
	})
	return out, err
}

func (e *env) get(id string) outstore.Detail {
	e.t.Helper()
	d, err := e.s.Get(context.Background(), e.org, id)
	if err != nil {
		e.t.Fatalf("get %s: %v", id, err)
	}
	return d
}

// addrs returns n external recipients.
func addrs(n int) []outstore.NewRecipient {
	var rs []outstore.NewRecipient
	for i := range n {
		rs = append(rs, to(fmt.Sprintf("user%d@example.com", i), false))
	}
	return rs
}
