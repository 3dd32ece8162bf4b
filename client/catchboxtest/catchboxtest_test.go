package catchboxtest_test

import (
	"context"
	"fmt"
	"net/smtp"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/client"
	"github.com/catchbox/catchbox/client/catchboxtest"
	"github.com/catchbox/catchbox/client/internal/testserver"
)

var server *testserver.Server

// TestMain starts a catchbox server built from the repository around the
// module and points CATCHBOX_URL and CATCHBOX_API_KEY at it, as a user's CI
// would.
func TestMain(m *testing.M) {
	testserver.Main(m, "catchboxtest tests", func(bin string) (func(bool), error) {
		var err error
		if server, err = testserver.Start(bin, "", 200*time.Millisecond); err != nil {
			return nil, err
		}
		os.Setenv("CATCHBOX_URL", server.URL)
		os.Setenv("CATCHBOX_API_KEY", testserver.Key)
		os.Unsetenv("CATCHBOX_MAIL_DOMAIN")
		return func(bool) { server.Stop() }, nil
	})
}

func send(t *testing.T, to, subject, body string) {
	t.Helper()
	msg := "From: app@example.com\r\nTo: " + to + "\r\nSubject: " + subject + "\r\nContent-Type: text/plain\r\n\r\n" + body + "\r\n"
	if err := smtp.SendMail(server.SMTP, nil, "app@example.com", []string{to}, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

func TestInbox(t *testing.T) {
	inbox := catchboxtest.Inbox(t)
	if !regexp.MustCompile(`^t-testinbox-[0-9a-f]{8}$`).MatchString(inbox.Name) {
		t.Errorf("name %q", inbox.Name)
	}
	if inbox.Address("alice") != "alice@"+inbox.Name+".localhost" {
		t.Errorf("address %q", inbox.Address("alice"))
	}
	if s := inbox.SMTP(); s.Username != inbox.Name {
		t.Errorf("SMTP %+v", s)
	}
	send(t, inbox.Address("alice"), "Reset your password", "Follow https://app.example/reset?t=1 to reset it.")
	mail := inbox.WaitForEmail(client.Filter{To: inbox.Address("alice")})
	if mail.Subject != "Reset your password" || len(mail.Links) != 1 || mail.Links[0].Href != "https://app.example/reset?t=1" {
		t.Errorf("mail %+v", mail)
	}
	// The namespace is the test's alone: another test's inbox is another namespace.
	t.Run("sub test / with odd name", func(t *testing.T) {
		sub := catchboxtest.Inbox(t, catchboxtest.WithRetention(2*time.Minute))
		if sub.Name == inbox.Name || !regexp.MustCompile(`^t-testinbox-sub-test-with-odd-name-[0-9a-f]{8}$`).MatchString(sub.Name) {
			t.Errorf("sub-test namespace %q", sub.Name)
		}
		ns, err := sub.Client.Namespaces(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range ns {
			if n.Namespace == sub.Name && n.Settings.RetentionTime != 120 {
				t.Errorf("retention %d", n.Settings.RetentionTime)
			}
		}
	})
}

// recorder is a testing.TB whose Fatalf is recorded, for testing that a wait
// that times out fails its test.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed string
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.failed = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Helper() {}

func TestWaitFailsTheTest(t *testing.T) {
	r := &recorder{TB: t}
	inbox := catchboxtest.Inbox(r)
	inbox.Timeout = time.Second
	done := make(chan struct{})
	go func() {
		defer close(done)
		inbox.WaitForEmail(client.Filter{Subject: "never sent"})
		r.failed = "WaitForEmail returned"
	}()
	<-done
	if !strings.Contains(r.failed, "no email matching") || !strings.Contains(r.failed, inbox.Name) {
		t.Errorf("Fatalf message %q", r.failed)
	}
}

// TestInboxIsEmptiedAtCleanup runs a subtest that receives mail in its inbox,
// and checks after the subtest ended that the mail is gone.
func TestInboxIsEmptiedAtCleanup(t *testing.T) {
	var name string
	t.Run("receiver", func(t *testing.T) {
		ns := catchboxtest.Inbox(t)
		name = ns.Name
		send(t, "a@"+ns.Domain, "kept until cleanup", "hello")
		ns.WaitForEmail(client.Filter{Subject: "kept until cleanup"})
	})
	c, err := client.NewFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.SearchEmails(context.Background(), name, client.SearchQuery{})
	if err != nil || page.TotalCount != 0 {
		t.Fatalf("after the test's cleanup its namespace holds %d emails (%v); want none", page.TotalCount, err)
	}
}
