package client_test

import (
	"fmt"
	"net/smtp"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/client"
	"github.com/catchbox/catchbox/client/internal/testserver"
)

// servers are the catchbox servers the tests run against: one on SQLite, and
// one on PostgreSQL when CATCHBOX_TEST_POSTGRES_URL is set. Their wait hold is
// short, so that a test's wait spans several of them.
var servers []*testserver.Server

// binary is the catchbox binary the servers run, for tests that start a
// server of their own.
var binary string

// hold is the servers' CATCHBOX_WAIT_HOLD.
const hold = 200 * time.Millisecond

// TestMain builds the catchbox binary of the repository around this module and
// starts the servers. The examples read CATCHBOX_URL and CATCHBOX_API_KEY, as a
// user's tests would: they are set to the SQLite server. Outside the
// repository, with no server to build, the tests are skipped.
func TestMain(m *testing.M) {
	testserver.Main(m, "client tests", func(bin string) (func(bool), error) {
		binary = bin
		stop := func(failed bool) {
			for _, s := range servers {
				if failed {
					fmt.Fprintf(os.Stderr, "log of the %s server:\n%s\n", s.Name, s.Logs())
				}
				s.Stop()
			}
		}
		stores := []string{""}
		if pg := os.Getenv("CATCHBOX_TEST_POSTGRES_URL"); pg != "" {
			stores = append(stores, pg)
		}
		for _, pg := range stores {
			s, err := testserver.Start(bin, pg, hold)
			if err != nil {
				stop(false)
				return nil, err
			}
			servers = append(servers, s)
		}
		os.Setenv("CATCHBOX_URL", servers[0].URL)
		os.Setenv("CATCHBOX_API_KEY", testserver.Key)
		os.Setenv("CATCHBOX_MAIL_DOMAIN", "localhost")
		return stop, nil
	})
}

// eachServer runs fn once per server, as subtests named after their stores.
func eachServer(t *testing.T, fn func(t *testing.T, s *testserver.Server, c *client.Client)) {
	for _, s := range servers {
		t.Run(s.Name, func(t *testing.T) {
			c, err := client.New(s.URL, testserver.Key)
			if err != nil {
				t.Fatal(err)
			}
			fn(t, s, c)
		})
	}
}

// sendMail sends a message over SMTP to the server, as a service under test
// would; body is the MIME body with its Content-Type header first.
func sendMail(t testing.TB, smtpAddr, from, to, subject, body string) {
	t.Helper()
	msg := "From: " + from + "\r\nTo: " + to + "\r\nSubject: " + subject + "\r\nMIME-Version: 1.0\r\n" +
		strings.ReplaceAll(body, "\n", "\r\n")
	if err := smtp.SendMail(smtpAddr, nil, from, []string{to}, []byte(msg)); err != nil {
		t.Fatalf("send mail to %s: %v", to, err)
	}
}

// uniqueNamespace returns a namespace name no other test uses.
func uniqueNamespace(t testing.TB) string {
	return fmt.Sprintf("c-%d", time.Now().UnixNano())
}
