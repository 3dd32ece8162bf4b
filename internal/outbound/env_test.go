package outbound_test

import (
	"testing"

	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/outbound/outstore/outstoretest"
	"github.com/catchbox/catchbox/internal/store"
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
	clock *outstoretest.Clock
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
