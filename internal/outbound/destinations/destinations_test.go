package destinations_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/jobs"
	"github.com/catchbox/catchbox/internal/outbound/destinations"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// The store on both stores: a requested destination is pending until
// verified, an operator's is verified at once, each organisation sees its
// own, and the verification mails of an hour are counted per organisation.
func TestStore(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		tenants := tenant.NewService(db, nil, time.Hour)
		var orgs [2]string
		for i, name := range []string{"acme", "globex"} {
			o, err := tenants.CreateOrg(ctx, name, 100, true)
			if err != nil {
				t.Fatal(err)
			}
			orgs[i] = o.ID
		}
		now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
		s := destinations.NewStore(db)
		s.Now = func() time.Time { return now }
		q := jobs.New(db, nil, jobs.Options{})
		q.Register(destinations.VerifyKind, func(context.Context, *jobs.Job) error { return nil }, jobs.Limits{})

		d, queued, err := s.Request(ctx, q, orgs[0], "Partner@Example.com")
		if err != nil || !queued || d.Verified() || d.Address != "partner@example.com" {
			t.Fatalf("request: %+v %v %v", d, queued, err)
		}
		if ok, err := s.Verified(ctx, orgs[0], "partner@example.com"); ok || err != nil {
			t.Fatalf("pending destination verified: %v %v", ok, err)
		}
		if _, err := s.ByID(ctx, orgs[1], d.ID); !errors.Is(err, destinations.ErrNotFound) {
			t.Fatalf("another organisation's destination: %v", err)
		}
		if v, err := s.Verify(ctx, d.ID); err != nil || !v.Verified() || !v.VerifiedAt.Equal(now) {
			t.Fatalf("verify: %+v %v", v, err)
		}
		if ok, err := s.Verified(ctx, orgs[0], "PARTNER@example.com"); !ok || err != nil {
			t.Fatalf("verified destination, other case: %v %v", ok, err)
		}
		if ok, _ := s.Verified(ctx, orgs[1], "partner@example.com"); ok {
			t.Fatal("verified for the other organisation")
		}
		if _, queued, err := s.Request(ctx, q, orgs[0], "partner@example.com"); queued || err != nil {
			t.Fatalf("request of a verified destination: %v %v", queued, err)
		}
		op, created, err := s.AddVerified(ctx, orgs[0], "ops@example.com")
		if err != nil || !created || !op.Verified() {
			t.Fatalf("add verified: %+v %v %v", op, created, err)
		}
		if list, err := s.List(ctx, orgs[0]); err != nil || len(list) != 2 || list[0].ID != d.ID || list[1].ID != op.ID {
			t.Fatalf("list: %+v %v", list, err)
		}
		if err := s.Remove(ctx, orgs[1], d.ID); !errors.Is(err, destinations.ErrNotFound) {
			t.Fatalf("remove another organisation's: %v", err)
		}
		if err := s.Remove(ctx, orgs[0], d.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.RemoveAddress(ctx, orgs[0], "OPS@example.com"); err != nil {
			t.Fatal(err)
		}
		if list, _ := s.List(ctx, orgs[0]); len(list) != 0 {
			t.Fatalf("after removals: %+v", list)
		}

		// One mail was counted at the first request, 20 minutes ago.
		now = now.Add(20 * time.Minute)
		for i := range destinations.MaxVerificationMailsPerHour - 1 {
			if _, _, err := s.Request(ctx, q, orgs[0], fmt.Sprintf("user%d@example.com", i)); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
		}
		_, _, err = s.Request(ctx, q, orgs[0], "one-more@example.com")
		var rate *destinations.RateError
		if !errors.As(err, &rate) || rate.Retry != 40*time.Minute || !rate.RetryAt.Equal(now.Add(40*time.Minute)) {
			t.Fatalf("past the hour's allowance: %v", err)
		}
		if _, _, err := s.Request(ctx, q, orgs[1], "one-more@example.com"); err != nil {
			t.Fatalf("the other organisation's allowance: %v", err)
		}
	})
}
