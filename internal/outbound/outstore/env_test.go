package outstore_test

import (
	"context"
	"testing"

	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/outbound/outstore/outstoretest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/testkit"
)

// The shared test fixtures, under the names the tests use.
var (
	start   = outstoretest.Start
	message = outstoretest.Message
	to      = outstoretest.To
	addrs   = outstoretest.Addrs
)

// env is an outbound store on a fresh database, with two organisations.
type env struct {
	t     *testing.T
	db    *store.DB
	s     *outstore.Store
	clock *testkit.Clock
	org   string // the organisation the tests send from
	other string // another organisation
}

func newEnv(t *testing.T, db *store.DB) *env {
	t.Helper()
	e := &env{t: t, db: db, s: outstore.NewStore(db, 0, nil), clock: outstoretest.NewClock()}
	e.s.Now = e.clock.Now
	e.org, e.other = outstoretest.Orgs(t, db)
	return e
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
