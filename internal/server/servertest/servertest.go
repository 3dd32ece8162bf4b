// Package servertest builds catchbox serve for tests the way catchbox serve
// builds it (server.New), on a store from storetest, and serves its HTTP API on
// a loopback port. A test that reaches the API through it reaches every route,
// middleware and setting the binary has. It is the one harness of the tests
// that need the service: StartJobs runs its job queue for the test, Org adds
// the other organisation a test checks access against.
package servertest

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// Config returns the defaults of catchbox serve (config.Defaults) with a data
// directory of the test's own, a fixed secret key, and the IMAP and POP3
// listeners on 127.0.0.1:0, so nothing is written outside the test's temporary
// directory and a test that serves takes no fixed port.
func Config(t testing.TB) config.Serve {
	t.Helper()
	cfg := config.Defaults()
	cfg.IMAPAddr, cfg.POP3Addr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.SecretKey = "servertest-secret-key-0123456789"
	return cfg
}

// New builds the service on db, closed when t ends. A test changes its parts
// (clocks, loggers) before it serves the first request.
func New(t testing.TB, db *store.DB, cfg config.Serve) *server.Service {
	t.Helper()
	s, err := server.New(context.Background(), cfg, db)
	if err != nil {
		t.Fatalf("build the service: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close the service: %v", err)
		}
	})
	return s
}

// Serve serves the service's HTTP API on 127.0.0.1 until t ends, and makes its
// URL the base of the links the API hands out.
func Serve(t testing.TB, s *server.Service) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(s.Handler)
	t.Cleanup(srv.Close)
	s.Advertise(srv.Listener.Addr(), nil)
	return srv
}

// StartJobs runs the service's job queue (webhooks, outbound delivery,
// reports, link checks) until t ends; then the jobs under way are given
// testkit.Patience to finish, and one that does not is logged.
func StartJobs(t testing.TB, s *server.Service) {
	t.Helper()
	if err := s.Jobs.Start(context.Background()); err != nil {
		t.Fatalf("start the job queue: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
		defer cancel()
		if err := s.Jobs.Stop(ctx); err != nil {
			t.Logf("stop the job queue: %v", err)
		}
	})
}

// Org creates an organisation of the service beside the first one (enabled,
// the default device limit) and an API key of it, for the tests that check
// what one organisation may not see of another's.
func Org(t testing.TB, s *server.Service, name string) (tenant.Org, string) {
	t.Helper()
	ctx := context.Background()
	org, err := s.Tenants.CreateOrg(ctx, name, tenant.DefaultTOTPDeviceLimit, true)
	if err != nil {
		t.Fatalf("create organisation %s: %v", name, err)
	}
	_, key, err := s.Tenants.CreateKey(ctx, org.ID, "", "")
	if err != nil {
		t.Fatalf("create a key of %s: %v", name, err)
	}
	return org, key
}
