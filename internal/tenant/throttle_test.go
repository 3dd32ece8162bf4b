package tenant_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

const signinPassword = "correct horse battery"

// signinService is the users' service on db with one user, alice. The hash
// gate is the service's, with no deadline on its queue: under the race
// detector a hash takes ten times as long, and a burst's last attempts would
// otherwise give up.
func signinService(t *testing.T, db *store.DB) *tenant.Service {
	t.Helper()
	t.Cleanup(tenant.UseHashGate(tenant.HashSlots, 256, time.Hour))
	ctx := context.Background()
	svc := tenant.NewService(db, secret.New([]byte("tenant-test-secret-0123456789abcdef")), 720*time.Hour)
	org, err := svc.CreateOrg(ctx, "acme", tenant.DefaultTOTPDeviceLimit, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateUser(ctx, "alice@example.com", signinPassword, org.ID); err != nil {
		t.Fatal(err)
	}
	return svc
}

// newSessions is a replica's sessions: its client address is the request's
// remote host, as with no proxy in front, and its clock stands still, so
// that no budget refills while a test runs.
func newSessions(svc *tenant.Service) *tenant.Sessions {
	ss := tenant.NewSessions(svc, false, nil)
	now := time.Date(2026, 11, 22, 3, 23, 50, 0, time.UTC)
	ss.SetClock(func() time.Time { return now })
	ss.ClientAddr = func(r *http.Request) string {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		return host
	}
	return ss
}

// signIn makes one sign-in attempt from addr.
func signIn(ss *tenant.Sessions, addr, email, password string) error {
	r := httptest.NewRequest(http.MethodPost, "/signin", nil)
	r.RemoteAddr = net.JoinHostPort(addr, "40000")
	_, err := ss.SignIn(httptest.NewRecorder(), r, email, password)
	return err
}

// newGate holds the replicas' sign-in attempts just before their password is
// checked.
func newGate(t *testing.T, replicas ...*tenant.Sessions) *testkit.Gate {
	g := testkit.NewGate(t)
	for _, ss := range replicas {
		ss.SetHooks(g.Arrive, g.Hold)
	}
	return g
}

// burst makes n attempts at once, spread over the replicas, holds them at the
// gate until every one has arrived and limit are waiting to be checked, then
// lets them through, and counts how they ended.
func burst(t *testing.T, g *testkit.Gate, replicas []*tenant.Sessions, n, limit int, attempt func(ss *tenant.Sessions, i int) error) (failed, throttled int) {
	t.Helper()
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func(i int) { errs <- attempt(replicas[i%len(replicas)], i) }(i)
	}
	g.Await(t, "every attempt to arrive and the first to be checked", func(c testkit.GateCounts) bool {
		return c.Arrived == n && c.Held >= limit
	})
	g.Open()
	for i := 0; i < n; i++ {
		err := <-errs
		var th *tenant.ErrThrottled
		switch {
		case errors.Is(err, tenant.ErrBadPassword):
			failed++
		case errors.As(err, &th):
			throttled++
		default:
			t.Fatalf("attempt: %v", err)
		}
	}
	return failed, throttled
}

// Forty wrong passwords for one account from one address, all arrived before
// any is checked, have 5 passwords checked (the account and address's
// budget); sixty over unknown accounts from another address have 20 checked
// (the address's budget). The others are refused unchecked.
func TestParallelSignInNeverExceedsLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := signinService(t, db)
		ss := []*tenant.Sessions{newSessions(svc)}
		g := newGate(t, ss...)
		failed, throttled := burst(t, g, ss, 40, 5, func(ss *tenant.Sessions, i int) error {
			return signIn(ss, "192.0.2.1", "alice@example.com", fmt.Sprint("guess ", i))
		})
		if failed != 5 || throttled != 35 || g.Held() != 5 {
			t.Fatalf("%d wrong, %d refused, %d checked; want 5, 35, 5", failed, throttled, g.Held())
		}

		g = newGate(t, ss...)
		failed, throttled = burst(t, g, ss, 60, 20, func(ss *tenant.Sessions, i int) error {
			return signIn(ss, "192.0.2.2", fmt.Sprintf("nobody-%d@example.com", i), "any password")
		})
		if failed != 20 || throttled != 40 || g.Held() != 20 {
			t.Fatalf("%d wrong, %d refused, %d checked; want 20, 40, 20", failed, throttled, g.Held())
		}
	})
}

// On PostgreSQL the budgets are the service's, not a replica's: the same
// bursts spread over two replicas still have 5 and 20 passwords checked.
func TestSignInLimitSharedByReplicas(t *testing.T) {
	db := storetest.Open(t, store.Postgres)
	svc := signinService(t, db)
	replicas := []*tenant.Sessions{newSessions(svc), newSessions(svc)}
	g := newGate(t, replicas...)
	failed, _ := burst(t, g, replicas, 40, 5, func(ss *tenant.Sessions, i int) error {
		return signIn(ss, "192.0.2.1", "alice@example.com", fmt.Sprint("guess ", i))
	})
	if failed != 5 || g.Held() != 5 {
		t.Fatalf("%d wrong, %d checked over two replicas; want 5", failed, g.Held())
	}
	g = newGate(t, replicas...)
	failed, _ = burst(t, g, replicas, 60, 20, func(ss *tenant.Sessions, i int) error {
		return signIn(ss, "192.0.2.2", fmt.Sprintf("nobody-%d@example.com", i), "any password")
	})
	if failed != 20 || g.Held() != 20 {
		t.Fatalf("%d wrong, %d checked over two replicas; want 20", failed, g.Held())
	}
	// A right password from a third address, on either replica, signs in
	// and costs nothing.
	for _, ss := range replicas {
		ss.SetHooks(nil, nil)
		if err := signIn(ss, "192.0.2.3", "alice@example.com", signinPassword); err != nil {
			t.Fatalf("right password from another address: %v", err)
		}
	}
}

// However many passwords are checked at once, no more than two hashes run
// at a time; past the gate's queue, or its wait, the attempt is ErrBusy,
// unchecked and uncharged.
func TestHashesBounded(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	svc := signinService(t, db)
	var wg sync.WaitGroup
	for i := 0; i < 24; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if _, err := svc.CheckUser(context.Background(), "alice@example.com", fmt.Sprint("wrong ", i)); !errors.Is(err, tenant.ErrBadPassword) {
				t.Errorf("check %d: %v", i, err)
			}
		}(i)
	}
	wg.Wait()
	if p := tenant.HashPeak(); p != tenant.HashSlots {
		t.Fatalf("%d hashes ran at once, want %d", p, tenant.HashSlots)
	}

	ss := newSessions(svc)
	// With the one slot held, one attempt waits in the queue; the queue being
	// full, the next is refused at once; the first goes on once the slot is
	// free.
	restore := tenant.UseHashGate(1, 1, time.Hour)
	release := tenant.HoldHashSlot()
	queued := make(chan error, 1)
	go func() { queued <- signIn(ss, "192.0.2.9", "alice@example.com", signinPassword) }()
	testkit.Await(t, "an attempt to wait for the slot", func() (int, bool) { n := tenant.HashWaiting(); return n, n == 1 })
	if err := signIn(ss, "192.0.2.9", "alice@example.com", "wrong"); !errors.Is(err, tenant.ErrBusy) {
		t.Fatalf("attempt with the queue full: %v, want ErrBusy", err)
	}
	release()
	if err := <-queued; err != nil {
		t.Fatalf("queued attempt with the right password: %v", err)
	}
	restore()

	// An attempt that waits longer than the gate's wait gives up.
	restore = tenant.UseHashGate(1, 1, 50*time.Millisecond)
	release = tenant.HoldHashSlot()
	if err := signIn(ss, "192.0.2.9", "alice@example.com", "wrong"); !errors.Is(err, tenant.ErrBusy) {
		t.Fatalf("attempt past the wait: %v, want ErrBusy", err)
	}
	release()
	restore()

	// A busy refusal spends nothing: the account and address's five
	// attempts are all still there.
	for i := 0; i < 5; i++ {
		if err := signIn(ss, "192.0.2.9", "alice@example.com", "wrong"); !errors.Is(err, tenant.ErrBadPassword) {
			t.Fatalf("attempt %d after busy refusals: %v", i, err)
		}
	}
	var th *tenant.ErrThrottled
	if err := signIn(ss, "192.0.2.9", "alice@example.com", "wrong"); !errors.As(err, &th) {
		t.Fatalf("sixth attempt: %v, want throttled", err)
	}
}
