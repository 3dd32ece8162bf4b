// Package servertest builds catchbox serve for tests the way catchbox serve
// builds it (server.New), on a store from storetest, and serves its HTTP API on
// a loopback port. A test that reaches the API through it reaches every route,
// middleware and setting the binary has.
package servertest

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/store"
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
