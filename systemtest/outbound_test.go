package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/outbound/relaytest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// TestOutboundDeliveryRestart stops the server while outbound deliveries are
// under way (the relay holds each RCPT a while, so that attempts are in the
// middle of their SMTP transaction), starts it again on the same store, and
// checks that every message reached every recipient: each external one
// through the relay, each internal one into the inbox, exactly once.
//
// Stopped with SIGTERM, the server finishes its running attempts and records
// them before it exits: nothing at all is sent twice. Killed with SIGKILL,
// its leases run out and the restarted server takes the jobs over; a
// message the relay accepted in the last moments before the kill, whose 250
// the killed server never committed, is sent again (the at-least-once window
// of docs/flow.md, "Delivery"): a second copy is allowed only for a message
// whose first was accepted from the killed server, within its last two
// seconds. Internal
// deliveries commit with their state and are never duplicated.
func TestOutboundDeliveryRestart(t *testing.T) {
	skipShort(t)
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			t.Run(fmt.Sprintf("%s/%s", d, strings.ToLower(sig.String())), func(t *testing.T) {
				testOutboundRestart(t, d, sig)
			})
		}
	}
}

func testOutboundRestart(t *testing.T, d store.Dialect, sig syscall.Signal) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	relay := startTestRelay(t)
	relay.RcptDelay(150 * time.Millisecond)
	dbURL := storetest.URL(t, d) // skips the PostgreSQL run without a server
	env := map[string]string{
		"CATCHBOX_DATA_DIR":     t.TempDir(),
		"CATCHBOX_DATABASE_URL": dbURL,
		"CATCHBOX_SECRET_KEY":   sharedSecret,
		"CATCHBOX_RELAY_URL":    relay.URL(),
	}
	first := startServer(t, "catchbox (before the stop)", env)
	const n = 30
	label := fmt.Sprintf("restart-%s-%d", d, sig)
	ms := outboundMessages(label, n)
	verifyDestinations(t, ctx, dbURL, ms)
	ids := make([]string, n)
	for i, m := range ms {
		ids[i] = postSend(t, ctx, first.HTTP, m)
	}
	testkit.AwaitWithin(t, 2*time.Minute, "5 messages at the relay before the stop", func() (int, bool) {
		n := len(relay.Received())
		return n, n >= 5
	})
	stopAt := time.Now()
	first.signal(sig)
	before := len(relay.Received())
	t.Logf("stopped with %s after the relay accepted %d of %d messages", sig, before, n)
	relay.RcptDelay(0)

	// The relay stamps a message when it has read it, which can trail the
	// killed server's last write: a copy stamped after the signal but before
	// the restart still came from the killed server.
	restartAt := time.Now()
	second := startServer(t, "catchbox (after the restart)", env)
	waitOutboundSent(t, ctx, second.HTTP, ids)
	checkDeliveredOnce(t, ctx, second.HTTP, relay, ms, func(first relaytest.Message) bool {
		return sig == syscall.SIGKILL && first.At.After(stopAt.Add(-2*time.Second)) && first.At.Before(restartAt)
	})
}

// TestOutboundReplicas runs two replicas on one PostgreSQL schema and sends
// through both: they share the delivery queue, and every message reaches
// every recipient exactly once.
func TestOutboundReplicas(t *testing.T) {
	skipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dbURL := storetest.URL(t, store.Postgres) // skips without a PostgreSQL server
	relay := startTestRelay(t)
	relay.RcptDelay(20 * time.Millisecond)
	env := func() map[string]string {
		return map[string]string{
			"CATCHBOX_DATA_DIR":     t.TempDir(),
			"CATCHBOX_DATABASE_URL": dbURL,
			"CATCHBOX_SECRET_KEY":   sharedSecret,
			"CATCHBOX_RELAY_URL":    relay.URL(),
		}
	}
	a := spawnServer(t, "replica A", env())
	b := spawnServer(t, "replica B", env())
	a.waitReady()
	b.waitReady()
	const n = 40
	ms := outboundMessages("replicas", n)
	verifyDestinations(t, ctx, dbURL, ms)
	ids := make([]string, n)
	for i, m := range ms {
		base := a.HTTP
		if i%2 == 1 {
			base = b.HTTP
		}
		ids[i] = postSend(t, ctx, base, m)
	}
	waitOutboundSent(t, ctx, a.HTTP, ids)
	checkDeliveredOnce(t, ctx, b.HTTP, relay, ms, nil)
}

// outboundMessage is one send of the tests: to an external address and to
// one of the default namespace, with a subject naming it.
type outboundMessage struct {
	Subject, External, Internal string
}

func outboundMessages(label string, n int) []outboundMessage {
	out := make([]outboundMessage, n)
	for i := range out {
		tok := fmt.Sprintf("%s-%d-%d", label, time.Now().UnixNano()%1e6, i)
		out[i] = outboundMessage{Subject: "Outbound " + tok, External: "ext-" + tok + "@example.com",
			Internal: "in-" + tok + "@" + namespace + "." + mailDomain}
	}
	return out
}

func startTestRelay(t *testing.T) *relaytest.Server {
	t.Helper()
	r, err := relaytest.Start("catchbox", "relay-secret")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// signal sends sig to the server and waits for it to exit.
func (s *server) signal(sig syscall.Signal) {
	s.cmd.Process.Signal(sig)
	testkit.Receive(s.t, fmt.Sprintf("%s to exit after %s", s.name, sig), s.exited)
}

// verifyDestinations makes the external addresses verified destinations of
// the default organisation, as the destinations table holds them.
func verifyDestinations(t *testing.T, ctx context.Context, dbURL string, ms []outboundMessage) {
	t.Helper()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var org string
	if err := db.QueryRow(ctx, "SELECT id FROM orgs WHERE name = ?", tenant.DefaultName).Scan(&org); err != nil {
		t.Fatal(err)
	}
	err = db.InTx(ctx, func(tx *store.Tx) error {
		for _, m := range ms {
			now := time.Now().UnixMilli()
			if _, err := tx.Exec(ctx, `INSERT INTO destinations (id, org_id, address, verified_at, created_at, updated_at)
				VALUES (?, ?, ?, ?, ?, ?)`, tenant.NewID(), org, m.External, now, now, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// postSend sends m from the default namespace and returns the outbound id.
func postSend(t *testing.T, ctx context.Context, base string, m outboundMessage) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"to": []string{m.External, m.Internal}, "subject": m.Subject, "text": "hello"})
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/emails/send?namespace="+namespace, bytes.NewReader(body))
	req.Header.Set("X-Api-Key", testAPIKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("send %s: %d %s", m.Subject, res.StatusCode, data)
	}
	var s struct {
		ID string `json:"id"`
	}
	json.Unmarshal(data, &s)
	return s.ID
}

// outboundState is what the tests read of an outbound email.
type outboundState struct {
	Status     string `json:"status"`
	Recipients []struct {
		Email          string `json:"email"`
		DeliveryStatus string `json:"delivery_status"`
	} `json:"recipients"`
}

// waitOutboundSent waits for every email to be sent, every recipient of it
// sent or delivered.
func waitOutboundSent(t *testing.T, ctx context.Context, base string, ids []string) {
	t.Helper()
	for _, id := range ids {
		st := testkit.AwaitWithin(t, 3*time.Minute, "outbound email "+id+" sent or failed", func() (outboundState, bool) {
			var st outboundState
			err := apiGet(ctx, base, "/api/emails/outbound/"+id, nil, &st)
			return st, err == nil && (st.Status == "sent" || st.Status == "failed")
		})
		if st.Status != "sent" {
			t.Fatalf("outbound email %s: %+v", id, st)
		}
		for _, r := range st.Recipients {
			if r.DeliveryStatus != "sent" && r.DeliveryStatus != "delivered" {
				t.Fatalf("outbound email %s: recipient %s %s", id, r.Email, r.DeliveryStatus)
			}
		}
	}
}

// checkDeliveredOnce checks that the relay received each message for its
// external recipient once (a second copy only where allowed says so of the
// first) and that the namespace holds each internal copy once.
func checkDeliveredOnce(t *testing.T, ctx context.Context, base string, relay *relaytest.Server, ms []outboundMessage, allowed func(first relaytest.Message) bool) {
	t.Helper()
	copies := map[string][]relaytest.Message{}
	for _, m := range relay.Received() {
		for _, to := range m.To {
			copies[to] = append(copies[to], m)
		}
	}
	dups := 0
	for _, m := range ms {
		got := copies[m.External]
		switch {
		case len(got) == 0:
			t.Errorf("%s: never reached the relay", m.External)
		case len(got) > 1:
			dups++
			if allowed == nil || !allowed(got[0]) {
				t.Errorf("%s: the relay received %d copies, the first at %s", m.External, len(got), got[0].At.Format(time.RFC3339Nano))
			}
		}
		r, err := search(ctx, base, url.Values{"to_addr_prefix": {m.Internal}})
		if err != nil {
			t.Fatal(err)
		}
		if r.TotalCount != 1 || len(r.Data) != 1 || r.Data[0].Subject != m.Subject {
			t.Errorf("%s: %d emails in the namespace, want one", m.Internal, r.TotalCount)
		}
	}
	t.Logf("%d messages, %d accepted by the relay, %d sent twice (in the window before a kill)", len(ms), len(relay.Received()), dups)
}
