package imapd

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-message/mail"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// SEARCH and UID SEARCH over headers, text, dates, flags, sizes and UID
// ranges, with NOT and OR.
func TestSearch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		h.send("a@alpha.localhost", message("a@alpha.localhost", "Welcome aboard", "your code is 111"))
		h.send("b@alpha.localhost", message("b@alpha.localhost", "Password reset", "click the reset link"))
		h.send("c@alpha.localhost", message("c@alpha.localhost", "Weekly digest", "nothing to see"))
		c := h.login("alpha", nil)
		c.Store(imap.SeqSetNum(3), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagFlagged}, Silent: true}, nil).Close()
		today := time.Now().UTC().Truncate(24 * time.Hour)
		for _, tc := range []struct {
			name     string
			criteria imap.SearchCriteria
			want     []uint32
		}{
			{"subject", imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Subject", Value: "RESET"}}}, []uint32{2}},
			{"to", imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "To", Value: "c@alpha"}}}, []uint32{3}},
			{"body", imap.SearchCriteria{Body: []string{"code is"}}, []uint32{1}},
			{"text", imap.SearchCriteria{Text: []string{"digest"}}, []uint32{3}},
			{"since today", imap.SearchCriteria{Since: today}, []uint32{1, 2, 3}},
			{"before today", imap.SearchCriteria{Before: today}, nil},
			{"sent before", imap.SearchCriteria{SentBefore: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)}, []uint32{1, 2, 3}},
			{"flagged", imap.SearchCriteria{Flag: []imap.Flag{imap.FlagFlagged}}, []uint32{3}},
			{"unflagged", imap.SearchCriteria{NotFlag: []imap.Flag{imap.FlagFlagged}}, []uint32{1, 2}},
			{"uid range", imap.SearchCriteria{UID: []imap.UIDSet{{{Start: 2, Stop: 0}}}}, []uint32{2, 3}},
			{"larger", imap.SearchCriteria{Larger: 10}, []uint32{1, 2, 3}},
			{"not", imap.SearchCriteria{Not: []imap.SearchCriteria{{Body: []string{"reset"}}}}, []uint32{1, 3}},
			{"or", imap.SearchCriteria{Or: [][2]imap.SearchCriteria{{{Body: []string{"111"}}, {Flag: []imap.Flag{imap.FlagFlagged}}}}}, []uint32{1, 3}},
		} {
			data, err := c.UIDSearch(&tc.criteria, nil).Wait()
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			var got []uint32
			for _, u := range data.AllUIDs() {
				got = append(got, uint32(u))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: UIDs %v, want %v", tc.name, got, tc.want)
			}
		}
		seq, err := c.Search(&imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Subject", Value: "weekly"}}}, nil).Wait()
		if err != nil || !slices.Equal(seq.AllSeqNums(), []uint32{3}) {
			t.Fatalf("SEARCH: %v %v", seq.AllSeqNums(), err)
		}
	})
}

// A namespace that does not capture raw email serves a rebuild: the same
// subject, addresses, text and attachment bytes, and a size that is the
// rebuild's.
func TestRebuildWithoutRawSource(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		off := false
		if _, err := h.tenants.UpsertNamespace(context.Background(), h.ns["beta"].OrgID, "beta", tenant.Settings{CaptureRawEmail: &off}); err != nil {
			t.Fatal(err)
		}
		h.send("r@beta.localhost", richMessage("r@beta.localhost"))
		c := h.login("beta", nil)
		body := &imap.FetchItemBodySection{Peek: true}
		msgs, err := c.Fetch(imap.SeqSetNum(1), &imap.FetchOptions{RFC822Size: true, Envelope: true, BodySection: []*imap.FetchItemBodySection{body}}).Collect()
		if err != nil {
			t.Fatal(err)
		}
		src := msgs[0].FindBodySection(body)
		if msgs[0].RFC822Size != int64(len(src)) || msgs[0].Envelope.Subject != "Grüße and a reset link" {
			t.Fatalf("size %d of %d bytes, envelope %+v", msgs[0].RFC822Size, len(src), msgs[0].Envelope)
		}
		mr, err := mail.CreateReader(bytes.NewReader(src))
		if err != nil {
			t.Fatalf("read the rebuild: %v\n%s", err, src)
		}
		if s, _ := mr.Header.Subject(); s != "Grüße and a reset link" {
			t.Fatalf("subject %q", s)
		}
		var text, attachment []byte
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			b := new(bytes.Buffer)
			b.ReadFrom(p.Body)
			switch p.Header.(type) {
			case *mail.InlineHeader:
				text = b.Bytes()
			case *mail.AttachmentHeader:
				attachment = b.Bytes()
			}
		}
		if !bytes.Contains(text, []byte("Your code is 123456.")) || !bytes.Equal(attachment, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}) {
			t.Fatalf("text %q, attachment %v\n%s", text, attachment, src)
		}
	})
}

// UIDs and UIDVALIDITY are the store's: a second listener on the same store
// (another replica, or the same after a restart) sees the same, and new mail
// gets higher UIDs whichever listener looks first.
func TestUIDsAcrossListeners(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		h.send("u@alpha.localhost", message("u@alpha.localhost", "one", "1"))
		h.send("u@alpha.localhost", message("u@alpha.localhost", "two", "2"))
		_, first := h.loginSelect("alpha", nil)
		firstAddr := h.imapAddr
		h.serve(Config{}) // a second listener over the same store
		h.send("u@alpha.localhost", message("u@alpha.localhost", "three", "3"))
		c, second := h.loginSelect("alpha", nil)
		if second.UIDValidity != first.UIDValidity || second.NumMessages != 3 || second.UIDNext != 4 {
			t.Fatalf("first %+v, second %+v", first, second)
		}
		msgs, err := c.Fetch(imap.SeqSet{{Start: 1, Stop: 0}}, &imap.FetchOptions{UID: true, Envelope: true}).Collect()
		if err != nil || len(msgs) != 3 || msgs[2].UID != 3 || msgs[2].Envelope.Subject != "three" {
			t.Fatalf("fetch: %+v %v", msgs, err)
		}
		h.imapAddr = firstAddr
		old, again := h.loginSelect("alpha", nil)
		if again.UIDNext != 4 || again.NumMessages != 3 {
			t.Fatalf("the first listener sees %+v", again)
		}
		old.Logout().Wait()
	})
}
