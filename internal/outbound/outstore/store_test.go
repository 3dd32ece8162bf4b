package outstore_test

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// TestCreateAndGet stores an email with every field and reads it back in the
// detail form; another organisation cannot see it.
func TestCreateAndGet(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		in := message(e.org, "Ré: the report", to("alice@team.localhost", true),
			outstore.NewRecipient{Type: outstore.Cc, Email: "bob@example.com", Name: "Bob"},
			outstore.NewRecipient{Type: outstore.Bcc, Email: "carol@example.org"})
		in.Type = outstore.TypeReply
		in.From = outstore.Address{Email: "me@team.localhost", Name: "Me Myself"}
		in.ReplyTo = &outstore.Address{Email: "replies@team.localhost", Name: "Replies"}
		in.HTML, in.Text = "<p>Hello</p>", "Hello"
		in.SourceEmailID = outstore.NewID()
		in.Attachments = []outstore.NewAttachment{
			{Filename: "report.pdf", ContentType: "application/pdf", Disposition: outstore.DispositionAttachment, Data: []byte("%PDF-1.7")},
			{Filename: "logo.png", ContentType: "image/png", ContentID: "logo@x", Disposition: outstore.DispositionInline, Data: []byte{0x89, 'P', 'N', 'G'}},
		}
		created := e.create(in)
		if created.ID != in.ID || created.Status != outstore.StatusQueued || !created.QueuedAt.Equal(start) ||
			!created.HasExternal || created.RecipientCount != 3 || created.AttachmentCount != 2 ||
			len(created.ReturnPathToken) != 26 {
			t.Fatalf("created %+v", created)
		}

		d := e.get(in.ID)
		if !reflect.DeepEqual(d.Email, created) {
			t.Errorf("get returned\n%+v\nwant what create returned\n%+v", d.Email, created)
		}
		if d.HTML != in.HTML || d.Text != in.Text || d.SourceEmailID != in.SourceEmailID || d.Type != outstore.TypeReply ||
			*d.ReplyTo != *in.ReplyTo || d.From != in.From || d.Subject != in.Subject || d.MessageID != in.MessageID {
			t.Errorf("detail %+v does not hold what was created", d)
		}
		var got []string
		for _, r := range d.Recipients {
			got = append(got, string(r.Type)+" "+r.Email+" "+r.Name+" "+string(r.Status)+" "+map[bool]string{true: "internal", false: "external"}[r.Internal])
		}
		want := []string{"to alice@team.localhost  queued internal", "cc bob@example.com Bob queued external", "bcc carol@example.org  queued external"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("recipients %q, want %q", got, want)
		}
		if len(d.Attachments) != 2 || d.Attachments[0].Filename != "report.pdf" || d.Attachments[0].Size != 8 ||
			d.Attachments[1].ContentID != "logo@x" || d.Attachments[1].Disposition != outstore.DispositionInline ||
			!d.Attachments[0].ContentExpiresAt.Equal(start.Add(outstore.DefaultContentTTL)) || !d.Attachments[0].ContentExpiredAt.IsZero() {
			t.Errorf("attachments %+v", d.Attachments)
		}
		if len(d.Events) != 1 || d.Events[0].Type != outstore.EventQueued || len(d.Events[0].Recipients) != 3 ||
			!d.Events[0].OccurredAt.Equal(start) {
			t.Errorf("events %+v, want one queued event of the three recipients", d.Events)
		}

		if _, err := e.s.Get(ctx, e.other, in.ID); !errors.Is(err, outstore.ErrNotFound) {
			t.Errorf("another organisation's get: %v, want ErrNotFound", err)
		}
		if _, err := e.s.Get(ctx, e.org, outstore.NewID()); !errors.Is(err, outstore.ErrNotFound) {
			t.Errorf("get of an unknown id: %v, want ErrNotFound", err)
		}
		if b, err := e.s.ByID(ctx, in.ID); err != nil || b.OrgID != e.org {
			t.Errorf("ByID: %v %v", b.OrgID, err)
		}
		src, err := e.s.Source(ctx, in.ID)
		if err != nil || !bytes.Equal(src, in.Source) {
			t.Errorf("Source: %q %v", src, err)
		}
		a, data, err := e.s.AttachmentContent(ctx, e.org, in.ID, d.Attachments[1].ID)
		if err != nil || !bytes.Equal(data, in.Attachments[1].Data) || a.Filename != "logo.png" {
			t.Errorf("attachment content: %+v %q %v", a, data, err)
		}
		if _, _, err := e.s.AttachmentContent(ctx, e.other, in.ID, d.Attachments[1].ID); !errors.Is(err, outstore.ErrNotFound) {
			t.Errorf("another organisation's attachment: %v, want ErrNotFound", err)
		}
	})
}

// TestContentExpires: after the content TTL the attachment bytes and the
// built message are gone (ErrContentExpired) and the metadata stays.
func TestContentExpires(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		in := message(e.org, "files", addrs(1)...)
		in.Attachments = []outstore.NewAttachment{{Filename: "a.txt", ContentType: "text/plain",
			Disposition: outstore.DispositionAttachment, Data: []byte("abc")}}
		e.create(in)
		attID := e.get(in.ID).Attachments[0].ID

		e.clock.Add(outstore.DefaultContentTTL - time.Millisecond)
		if n, m, err := e.s.ExpireContent(ctx); err != nil || n != 0 || m != 0 {
			t.Fatalf("expire before the TTL: %d %d %v", n, m, err)
		}
		if _, _, err := e.s.AttachmentContent(ctx, e.org, in.ID, attID); err != nil {
			t.Fatalf("content a millisecond before expiry: %v", err)
		}
		e.clock.Add(time.Millisecond)
		a, _, err := e.s.AttachmentContent(ctx, e.org, in.ID, attID)
		if !errors.Is(err, outstore.ErrContentExpired) || a.Filename != "a.txt" {
			t.Errorf("content at expiry, not yet deleted: %+v %v, want the metadata and ErrContentExpired", a, err)
		}
		if _, err := e.s.Source(ctx, in.ID); !errors.Is(err, outstore.ErrContentExpired) {
			t.Errorf("source at expiry: %v, want ErrContentExpired", err)
		}
		if n, m, err := e.s.ExpireContent(ctx); err != nil || n != 1 || m != 1 {
			t.Fatalf("expire: %d attachments, %d messages, %v; want 1, 1", n, m, err)
		}
		e.clock.Add(-time.Hour) // the bytes are gone whatever the clock says
		a, _, err = e.s.AttachmentContent(ctx, e.org, in.ID, attID)
		if !errors.Is(err, outstore.ErrContentExpired) || a.Size != 3 || !a.ContentExpiredAt.Equal(start.Add(outstore.DefaultContentTTL)) {
			t.Errorf("content after deletion: %+v %v", a, err)
		}
		if got := e.get(in.ID).Attachments[0]; got.ContentExpiredAt.IsZero() {
			t.Errorf("detail attachment %+v has no content_expired_at", got)
		}
	})
}

// TestList pages and filters an organisation's emails, newest first, and
// shows no other organisation's.
func TestList(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		var ids []string // oldest first
		for i, typ := range []outstore.Type{outstore.TypeNew, outstore.TypeReply, outstore.TypeForward, outstore.TypeNew, outstore.TypeNew} {
			in := message(e.org, "m"+string(rune('0'+i)), addrs(2)...)
			in.Type = typ
			ids = append(ids, e.create(in).ID)
			e.clock.Add(time.Second)
		}
		e.create(message(e.other, "theirs", addrs(1)...))
		// The second email is sent to both recipients; the fourth fails.
		d := e.get(ids[1])
		if _, err := e.record(ids[1], outstore.NewEvent{Type: outstore.EventSent, Recipients: []outstore.NewEventRecipient{
			{RecipientID: d.Recipients[0].ID, Attempted: true}, {RecipientID: d.Recipients[1].ID, Attempted: true}}}); err != nil {
			t.Fatal(err)
		}
		d = e.get(ids[3])
		if _, err := e.record(ids[3], outstore.NewEvent{Type: outstore.EventFailed, Recipients: []outstore.NewEventRecipient{
			{RecipientID: d.Recipients[0].ID}, {RecipientID: d.Recipients[1].ID}}}); err != nil {
			t.Fatal(err)
		}

		cases := []struct {
			f     outstore.Filter
			want  []string
			total int
		}{
			{outstore.Filter{}, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, 5},
			{outstore.Filter{Limit: 2}, []string{ids[4], ids[3]}, 5},
			{outstore.Filter{Limit: 2, Offset: 2}, []string{ids[2], ids[1]}, 5},
			{outstore.Filter{Limit: 2, Offset: 4}, []string{ids[0]}, 5},
			{outstore.Filter{Offset: 5}, nil, 5},
			{outstore.Filter{Type: outstore.TypeNew}, []string{ids[4], ids[3], ids[0]}, 3},
			{outstore.Filter{Type: outstore.TypeNew, Limit: 1, Offset: 1}, []string{ids[3]}, 3},
			{outstore.Filter{Status: outstore.StatusQueued}, []string{ids[4], ids[2], ids[0]}, 3},
			{outstore.Filter{Status: outstore.StatusSent}, []string{ids[1]}, 1},
			{outstore.Filter{Status: outstore.StatusFailed, Type: outstore.TypeNew}, []string{ids[3]}, 1},
			{outstore.Filter{Status: outstore.StatusFailed, Type: outstore.TypeReply}, nil, 0},
			{outstore.Filter{Status: outstore.StatusSending}, nil, 0},
		}
		for _, c := range cases {
			items, total, err := e.s.List(ctx, e.org, c.f)
			if err != nil {
				t.Fatalf("list %+v: %v", c.f, err)
			}
			var got []string
			for _, it := range items {
				got = append(got, it.ID)
				if len(it.Recipients) != 2 || it.Recipients[0].Email != "user0@example.com" {
					t.Errorf("list item %s has recipients %+v", it.ID, it.Recipients)
				}
				if it.OrgID != e.org {
					t.Errorf("list of %s shows %s's email %s", e.org, it.OrgID, it.ID)
				}
			}
			if !reflect.DeepEqual(got, c.want) || total != c.total {
				t.Errorf("list %+v: %v (total %d), want %v (total %d)", c.f, got, total, c.want, c.total)
			}
		}
		if items, total, err := e.s.List(ctx, e.other, outstore.Filter{}); err != nil || total != 1 || len(items) != 1 || items[0].Subject != "theirs" {
			t.Errorf("the other organisation's list: %d items, total %d, %v", len(items), total, err)
		}
	})
}

// TestUsage counts messages with an external recipient per organisation and
// calendar month; a message to the sending namespace alone is not counted.
func TestUsage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		e.create(message(e.org, "external", addrs(1)...))
		e.create(message(e.org, "mixed", to("a@team.localhost", true), to("b@example.com", false)))
		e.create(message(e.org, "internal only", to("a@team.localhost", true), to("c@team.localhost", true)))
		e.create(message(e.other, "theirs", addrs(1)...))
		e.clock.Add(9 * 24 * time.Hour) // December
		e.create(message(e.org, "next month", addrs(1)...))

		for _, c := range []struct {
			org  string
			at   time.Time
			want int64
		}{
			{e.org, start, 2}, {e.other, start, 1}, {e.org, e.clock.Now(), 1}, {e.org, start.AddDate(0, -1, 0), 0},
		} {
			n, err := e.s.Usage(ctx, c.org, c.at)
			if err != nil || n != c.want {
				t.Errorf("usage of %s in %s: %d %v, want %d", c.org, c.at.Format("2006-01"), n, err, c.want)
			}
		}
	})
}
