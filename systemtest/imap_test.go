package systemtest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// TestIMAPIdleAcrossReplicas runs two replicas on one PostgreSQL schema: an
// IMAP client on replica B idles while mail lands through replica A's SMTP,
// and is told EXISTS; it reads the message with the UID and UIDVALIDITY a
// client of A sees; an email deleted through A's API reaches it as EXPUNGE.
func TestIMAPIdleAcrossReplicas(t *testing.T) {
	skipShort(t)
	dbURL := storetest.URL(t, store.Postgres) // skips without a PostgreSQL server
	env := func() map[string]string {
		return map[string]string{
			"CATCHBOX_DATA_DIR":     t.TempDir(),
			"CATCHBOX_DATABASE_URL": dbURL,
			"CATCHBOX_SECRET_KEY":   sharedSecret,
		}
	}
	a := spawnServer(t, "replica A", env())
	b := spawnServer(t, "replica B", env())
	a.waitReady()
	b.waitReady()
	if a.IMAP == "" || b.IMAP == "" {
		t.Fatalf("no IMAP listener in the ready lines: %q, %q", a.IMAP, b.IMAP)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var settings struct {
		Data struct {
			Username string `json:"username"`
			Password string `json:"password"`
		} `json:"data"`
	}
	if err := apiGet(ctx, a.HTTP, "/api/smtp/"+namespace, nil, &settings); err != nil {
		t.Fatal(err)
	}

	exists := make(chan uint32, 16)
	expunged := make(chan uint32, 16)
	c, err := imapclient.DialInsecure(b.IMAP, &imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
		Mailbox: func(d *imapclient.UnilateralDataMailbox) {
			if d.NumMessages != nil {
				exists <- *d.NumMessages
			}
		},
		Expunge: func(seq uint32) { expunged <- seq },
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(settings.Data.Username, settings.Data.Password).Wait(); err != nil {
		t.Fatalf("login on B: %v", err)
	}
	onB, err := c.Select("INBOX", nil).Wait()
	if err != nil {
		t.Fatal(err)
	}
	idle, err := c.Idle()
	if err != nil {
		t.Fatal(err)
	}
	m := newMessage("imap-idle", false)
	sent := time.Now()
	sendOne(t, a.SMTP, m)
	select {
	case n := <-exists:
		t.Logf("from the 250 on A to EXISTS on B: %v (reported, not asserted)", time.Since(sent))
		if n != onB.NumMessages+1 {
			t.Fatalf("EXISTS %d, want %d", n, onB.NumMessages+1)
		}
	case <-ctx.Done():
		t.Fatal("no EXISTS on B for mail sent through A")
	}
	if err := idle.Close(); err != nil {
		t.Fatal(err)
	}
	if err := idle.Wait(); err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Fetch(imap.SeqSetNum(onB.NumMessages+1), &imap.FetchOptions{UID: true, Envelope: true}).Collect()
	if err != nil || len(msgs) != 1 || msgs[0].Envelope.Subject != m.Subject {
		t.Fatalf("fetch on B: %+v %v", msgs, err)
	}

	// A client of A sees the same UIDVALIDITY and UID.
	ca, err := imapclient.DialInsecure(a.IMAP, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	if err := ca.Login(settings.Data.Username, settings.Data.Password).Wait(); err != nil {
		t.Fatal(err)
	}
	onA, err := ca.Select("INBOX", nil).Wait()
	if err != nil || onA.UIDValidity != onB.UIDValidity || onA.UIDNext != imap.UID(msgs[0].UID)+1 {
		t.Fatalf("on A %+v (%v), on B %+v and UID %d", onA, err, onB, msgs[0].UID)
	}
	ca.Logout().Wait()

	// Deleted through A's API: EXPUNGE on B.
	e, err := findMessage(ctx, a.HTTP, m)
	if err != nil {
		t.Fatal(err)
	}
	idle, err = c.Idle()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, a.HTTP+"/api/emails/"+e.ID, nil)
	req.Header.Set("X-Api-Key", testAPIKey)
	res, err := httpClient.Do(req)
	if err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE on A: %v %v", res, err)
	}
	res.Body.Close()
	deleted := time.Now()
	select {
	case <-expunged:
		t.Logf("from the DELETE on A to EXPUNGE on B: %v (reported, not asserted)", time.Since(deleted))
	case <-ctx.Done():
		t.Fatal("no EXPUNGE on B for an email deleted through A")
	}
	idle.Close()
	idle.Wait()
	c.Logout().Wait()
}
