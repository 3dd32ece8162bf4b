package imapd

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/metrics"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// A message sent over SMTP is read over IMAP byte for byte, with its UID,
// flags, size, envelope and structure; BODY.PEEK leaves it unseen, BODY[]
// sets \Seen, which a new session sees too.
func TestFetchWhatSMTPStored(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		raw := message("someone@alpha.localhost", "Hello IMAP", "line one\r\nline two")
		h.send("someone@alpha.localhost", raw)

		c, mbox := h.loginSelect("alpha", nil)
		if mbox.NumMessages != 1 || mbox.UIDValidity == 0 {
			t.Fatalf("selected %+v", mbox)
		}
		peek := &imap.FetchItemBodySection{Peek: true}
		msgs, err := c.Fetch(imap.SeqSetNum(1), &imap.FetchOptions{UID: true, Flags: true, RFC822Size: true, Envelope: true,
			BodyStructure: &imap.FetchItemBodyStructure{}, InternalDate: true, BodySection: []*imap.FetchItemBodySection{peek}}).Collect()
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		m := msgs[0]
		if got := m.FindBodySection(peek); !bytes.Equal(got, []byte(raw)) {
			t.Fatalf("BODY.PEEK[]:\n%q\nwant\n%q", got, raw)
		}
		if m.UID != 1 || len(m.Flags) != 0 || m.RFC822Size != int64(len(raw)) || m.Envelope.Subject != "Hello IMAP" {
			t.Fatalf("fetched uid %d flags %v size %d envelope %+v", m.UID, m.Flags, m.RFC822Size, m.Envelope)
		}
		if m.BodyStructure.MediaType() != "text/plain" || m.InternalDate.IsZero() {
			t.Fatalf("structure %s, internal date %v", m.BodyStructure.MediaType(), m.InternalDate)
		}

		body := &imap.FetchItemBodySection{}
		msgs, err = c.Fetch(imap.UIDSetNum(1), &imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{body}}).Collect()
		if err != nil {
			t.Fatalf("fetch BODY[]: %v", err)
		}
		if len(msgs[0].Flags) != 1 || msgs[0].Flags[0] != imap.FlagSeen {
			t.Fatalf("BODY[] flags %v, want \\Seen", msgs[0].Flags)
		}
		// A partial fetch and a header section.
		part := &imap.FetchItemBodySection{Peek: true, Specifier: imap.PartSpecifierText, Partial: &imap.SectionPartial{Offset: 5, Size: 3}}
		msgs, err = c.Fetch(imap.SeqSetNum(1), &imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{part}}).Collect()
		if err != nil || string(msgs[0].FindBodySection(part)) != "one" {
			t.Fatalf("partial: %q %v", msgs[0].FindBodySection(part), err)
		}

		other, again := h.loginSelect("alpha", nil)
		msgs, err = other.Fetch(imap.SeqSetNum(1), &imap.FetchOptions{UID: true, Flags: true}).Collect()
		if err != nil || msgs[0].UID != 1 || len(msgs[0].Flags) != 1 {
			t.Fatalf("second session: %+v %v", msgs, err)
		}
		if again.UIDValidity != mbox.UIDValidity {
			t.Fatalf("UIDVALIDITY %d then %d", mbox.UIDValidity, again.UIDValidity)
		}
		if n := counter(t, "catchbox_mailbox_commands_total", map[string]string{"protocol": "imap", "command": "FETCH", "result": "ok"}); n < 4 {
			t.Fatalf("catchbox_mailbox_commands_total of FETCH: %v, want at least the 4 above", n)
		}
	})
}

// counter is the value of a counter of the metrics registry with labels.
func counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue metric
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// An idling client is told of new mail (EXISTS) as it is stored, and of a
// deletion through the API (EXPUNGE).
func TestIdleSeesArrivalsAndDeletions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		h.send("a@alpha.localhost", message("a@alpha.localhost", "first", "1"))
		exists := make(chan uint32, 16)
		expunged := make(chan uint32, 16)
		c := h.login("alpha", &imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Mailbox: func(d *imapclient.UnilateralDataMailbox) {
				if d.NumMessages != nil {
					exists <- *d.NumMessages
				}
			},
			Expunge: func(seq uint32) { expunged <- seq },
		}})
		idle, err := c.Idle()
		if err != nil {
			t.Fatalf("idle: %v", err)
		}
		h.send("b@alpha.localhost", message("b@alpha.localhost", "second", "2"))
		if n := <-exists; n != 2 {
			t.Fatalf("EXISTS %d, want 2", n)
		}
		first, err := h.searcher.Search(context.Background(), inbox.Query{NamespaceID: h.ns["alpha"].ID, Limit: 10})
		if err != nil || first.Total != 2 {
			t.Fatalf("search: %+v %v", first, err)
		}
		oldest := first.Emails[1]
		if err := h.searcher.DeleteEmail(context.Background(), oldest.ID); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if seq := <-expunged; seq != 1 {
			t.Fatalf("EXPUNGE %d, want 1", seq)
		}
		if err := idle.Close(); err != nil {
			t.Fatalf("idle done: %v", err)
		}
		if err := idle.Wait(); err != nil {
			t.Fatalf("idle: %v", err)
		}
		if c.Mailbox().NumMessages != 1 {
			t.Fatalf("%d messages after the deletion", c.Mailbox().NumMessages)
		}
	})
}

// STORE \Deleted then EXPUNGE deletes the email as the API's DELETE does;
// \Deleted alone deletes nothing.
func TestExpungeDeletes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		for _, s := range []string{"one", "two", "three"} {
			h.send("x@alpha.localhost", message("x@alpha.localhost", s, s))
		}
		c := h.login("alpha", nil)
		if err := c.Store(imap.SeqSetNum(2), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagDeleted}, Silent: true}, nil).Close(); err != nil {
			t.Fatalf("store: %v", err)
		}
		count := func() int {
			n, err := h.searcher.Count(context.Background(), h.ns["alpha"].ID)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := count(); n != 3 {
			t.Fatalf("%d emails after STORE \\Deleted, want 3", n)
		}
		data, err := c.Expunge().Collect()
		if err != nil || len(data) != 1 || data[0] != 2 {
			t.Fatalf("expunge: %v %v", data, err)
		}
		if n := count(); n != 2 {
			t.Fatalf("%d emails after EXPUNGE, want 2", n)
		}
		msgs, err := c.Fetch(imap.SeqSet{{Start: 1, Stop: 0}}, &imap.FetchOptions{UID: true, Envelope: true}).Collect()
		if err != nil || len(msgs) != 2 || msgs[0].UID != 1 || msgs[1].UID != 3 || msgs[1].Envelope.Subject != "three" {
			t.Fatalf("after expunge: %+v %v", msgs, err)
		}
		// UID EXPUNGE only expunges the UIDs named.
		c.Store(imap.UIDSetNum(1, 3), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagDeleted}, Silent: true}, nil).Close()
		if _, err := c.UIDExpunge(imap.UIDSetNum(3)).Collect(); err != nil {
			t.Fatalf("uid expunge: %v", err)
		}
		if n := count(); n != 1 {
			t.Fatalf("%d emails after UID EXPUNGE, want 1", n)
		}
		var imapErr *imap.Error
		if _, err := c.Select("Archive", nil).Wait(); !errors.As(err, &imapErr) {
			t.Fatalf("select Archive: %v", err)
		}
	})
}

// A quota deletion (the oldest email pushed out by a new one) reaches an
// idle client as EXPUNGE, with the new message's EXISTS.
func TestQuotaDeletionToIdleClient(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		quota := 2
		if _, err := h.tenants.UpsertNamespace(context.Background(), h.ns["beta"].OrgID, "beta", tenant.Settings{QuotaLimit: &quota}); err != nil {
			t.Fatal(err)
		}
		h.send("q@beta.localhost", message("q@beta.localhost", "first", "1"))
		h.send("q@beta.localhost", message("q@beta.localhost", "second", "2"))
		expunged := make(chan uint32, 4)
		exists := make(chan uint32, 4)
		c := h.login("beta", &imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Expunge: func(seq uint32) { expunged <- seq },
			Mailbox: func(d *imapclient.UnilateralDataMailbox) {
				if d.NumMessages != nil {
					exists <- *d.NumMessages
				}
			},
		}})
		idle, err := c.Idle()
		if err != nil {
			t.Fatal(err)
		}
		h.send("q@beta.localhost", message("q@beta.localhost", "third", "3"))
		if seq := <-expunged; seq != 1 {
			t.Fatalf("EXPUNGE %d, want 1 (the oldest)", seq)
		}
		if n := <-exists; n != 2 {
			t.Fatalf("EXISTS %d, want 2", n)
		}
		idle.Close()
		idle.Wait()
		msgs, err := c.Fetch(imap.SeqSet{{Start: 1, Stop: 0}}, &imap.FetchOptions{UID: true, Envelope: true}).Collect()
		if err != nil || len(msgs) != 2 || msgs[0].Envelope.Subject != "second" || msgs[1].Envelope.Subject != "third" || msgs[1].UID != 3 {
			t.Fatalf("after the quota: %+v %v", msgs, err)
		}
	})
}
