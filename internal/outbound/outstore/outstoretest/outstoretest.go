// Package outstoretest holds what the tests of the outbound store and of the
// operations over it share: the tests' first instant, two organisations to
// send from, and new emails to store.
package outstoretest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// Start is the tests' first instant, on a millisecond boundary as stored.
var Start = time.Date(2026, 11, 22, 3, 23, 50, 123_000_000, time.UTC)

// NewClock returns a clock stopped at Start.
func NewClock() *testkit.Clock { return testkit.NewClock(Start) }

// Orgs creates two organisations in db, "acme" (the one the tests send from)
// and "globex" (another one), and returns their ids.
func Orgs(t *testing.T, db *store.DB) (org, other string) {
	t.Helper()
	tenants := tenant.NewService(db, nil, time.Hour)
	for _, p := range []struct {
		name string
		id   *string
	}{{"acme", &org}, {"globex", &other}} {
		o, err := tenants.CreateOrg(context.Background(), p.name, 100, true)
		if err != nil {
			t.Fatalf("create organisation: %v", err)
		}
		*p.id = o.ID
	}
	return org, other
}

// Message returns a new email of org to the recipients.
func Message(org, subject string, rcpts ...outstore.NewRecipient) outstore.NewEmail {
	id := outstore.NewID()
	return outstore.NewEmail{ID: id, OrgID: org, NamespaceID: "ns-" + org, Type: outstore.TypeNew,
		From:    outstore.Address{Email: "outbound-delivery@team.localhost"},
		Subject: subject, Text: "Hello", MessageID: "<" + id + "@localhost>", Recipients: rcpts,
		Source: []byte("Message-ID: <" + id + "@localhost>\r\nSubject: " + subject + "\r\n\r\nHello\r\n")}
}

// To is a "to" recipient, internal (in a namespace of Catchbox) or not.
func To(addr string, internal bool) outstore.NewRecipient {
	return outstore.NewRecipient{Type: outstore.To, Email: addr, Internal: internal}
}

// Addrs returns n external recipients.
func Addrs(n int) []outstore.NewRecipient {
	var rs []outstore.NewRecipient
	for i := range n {
		rs = append(rs, To(fmt.Sprintf("user%d@example.com", i), false))
	}
	return rs
}
