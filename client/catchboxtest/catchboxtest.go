// Package catchboxtest gives Go tests a Catchbox inbox of their own: Inbox
// creates a fresh namespace for one test, and its waits fail the test, with a
// clear message, when nothing arrives in time.
//
// The server is the one named by CATCHBOX_URL (default http://127.0.0.1:8025),
// with the key in CATCHBOX_API_KEY; addresses are built with the server's mail
// domain, CATCHBOX_MAIL_DOMAIN (default localhost), as catchbox serve reads it.
// A test run with neither server nor key fails at once and says so.
//
//	func TestSignUp(t *testing.T) {
//		inbox := catchboxtest.Inbox(t)
//		signUp(t, inbox.Address("alice"))
//		mail := inbox.WaitForEmail(client.Filter{To: inbox.Address("alice")})
//		follow(t, mail.Links[0].Href)
//	}
package catchboxtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/client"
)

// DefaultTimeout is how long a wait of Inbox or SMS lasts unless the Namespace
// says otherwise or the test's deadline comes first.
const DefaultTimeout = 60 * time.Second

// DefaultRetention is the retention of the namespaces Inbox creates: long
// enough for any test, short enough that the test's mail does not stay.
const DefaultRetention = time.Hour

// Client returns a client of the server in CATCHBOX_URL with the key in
// CATCHBOX_API_KEY, and fails the test when there is none.
func Client(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.NewFromEnv()
	if err != nil {
		t.Fatalf("catchboxtest: %v; start catchbox serve and set CATCHBOX_URL and CATCHBOX_API_KEY", err)
	}
	return c
}

// Namespace is a namespace created for one test.
type Namespace struct {
	Name   string         // the namespace's name
	Domain string         // the domain its mail goes to: <Name>.<mail domain>
	Client *client.Client // the client it was created with
	// Timeout bounds each wait; the test's deadline, when sooner, bounds it
	// too. DefaultTimeout unless changed.
	Timeout time.Duration

	t testing.TB
}

// Option configures Inbox.
type Option func(*options)

type options struct {
	client    *client.Client
	retention time.Duration
}

// WithClient makes Inbox use c rather than a client from the environment.
func WithClient(c *client.Client) Option { return func(o *options) { o.client = c } }

// WithRetention sets how long the namespace keeps each email (at least a
// minute); DefaultRetention otherwise.
func WithRetention(d time.Duration) Option { return func(o *options) { o.retention = d } }

// Inbox creates a namespace for the test, named after it and unique
// ("t-testsignup-5f2a9c1d"), so that nothing another test or an earlier run
// sent can match its waits. The namespace keeps its mail for
// DefaultRetention; when the test ends its mail is deleted and its settings
// are changed to keep anything that still arrives for a minute at most. (The
// API has no way to delete a namespace, so the empty namespace itself stays.)
func Inbox(t testing.TB, opts ...Option) *Namespace {
	t.Helper()
	o := options{retention: DefaultRetention}
	for _, opt := range opts {
		opt(&o)
	}
	if o.client == nil {
		o.client = Client(t)
	}
	name := namespaceName(t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	retention := int(max(o.retention, time.Minute) / time.Second)
	if _, err := o.client.SaveNamespace(ctx, name, client.SettingsRequest{RetentionTime: &retention}); err != nil {
		t.Fatalf("catchboxtest: create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		o.client.SaveNamespace(ctx, name, client.SettingsRequest{RetentionTime: client.Ptr(60), QuotaLimit: client.Ptr(1)})
		if err := o.client.ClearInbox(ctx, name); err != nil {
			t.Logf("catchboxtest: clear namespace %s: %v", name, err)
		}
	})
	domain := os.Getenv("CATCHBOX_MAIL_DOMAIN")
	if domain == "" {
		domain = "localhost"
	}
	return &Namespace{Name: name, Domain: name + "." + domain, Client: o.client, Timeout: DefaultTimeout, t: t}
}

// namespaceName makes a DNS label from a test name and eight random hex digits.
func namespaceName(test string) string {
	var b strings.Builder
	b.WriteString("t-")
	dash := true
	for _, r := range strings.ToLower(test) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	name := strings.TrimRight(b.String(), "-")
	var rnd [4]byte
	rand.Read(rnd[:])
	return name + "-" + hex.EncodeToString(rnd[:])
}

// Address returns the address local@<namespace>.<mail domain>.
func (n *Namespace) Address(local string) string { return local + "@" + n.Domain }

// WaitForEmail returns the newest email of the namespace that matches f,
// waiting for it up to Timeout, and fails the test if none arrives.
func (n *Namespace) WaitForEmail(f client.Filter) client.Email {
	n.t.Helper()
	ctx, cancel := waitContext(n.t, n.Timeout)
	defer cancel()
	e, err := n.Client.WaitForEmail(ctx, n.Name, f)
	if err != nil {
		n.t.Fatalf("catchboxtest: no email matching %+v in namespace %s within %s: %v", f, n.Name, n.Timeout, err)
	}
	return e
}

// SMTP returns the namespace's SMTP submission settings.
func (n *Namespace) SMTP() client.SMTPSettings {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := n.Client.SMTPSettings(ctx, n.Name)
	if err != nil {
		n.t.Fatalf("catchboxtest: SMTP settings of %s: %v", n.Name, err)
	}
	return s
}

// WaitForSMS returns the newest message of the SMS number phone that matches
// f, waiting for it up to timeout (DefaultTimeout when 0), and fails the test
// if none arrives.
func WaitForSMS(t testing.TB, c *client.Client, phone string, f client.SMSFilter, timeout time.Duration) client.SMSMessage {
	t.Helper()
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := waitContext(t, timeout)
	defer cancel()
	m, err := c.WaitForSMS(ctx, phone, f)
	if err != nil {
		t.Fatalf("catchboxtest: no SMS matching %+v on %s within %s: %v", f, phone, timeout, err)
	}
	return m
}

// waitContext ends after timeout, or just before the test's deadline when that
// is sooner, so that the wait fails with its own message rather than the test
// binary's panic.
func waitContext(t testing.TB, timeout time.Duration) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(timeout)
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := d.Deadline(); ok && end.Add(-time.Second).Before(deadline) {
			deadline = end.Add(-time.Second)
		}
	}
	return context.WithDeadline(context.Background(), deadline)
}
