package outbound_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/outbound"
	"github.com/catchbox/catchbox/internal/outbound/destinations"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/problem/problemtest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// The operations called as Go, with no HTTP in between: what the dashboard,
// and later IMAP and the checks, rely on. Each test runs on both stores.

// owner is the principal of the organisation default (namespace default),
// stranger that of organisation other (namespace elsewhere).
func (e *apiEnv) owner() tenant.Principal {
	return tenant.Principal{Org: e.org, KeyID: "owner-key", Orgs: []tenant.Org{e.org}}
}

func (e *apiEnv) stranger() tenant.Principal {
	return tenant.Principal{Org: e.other, KeyID: "stranger-key", Orgs: []tenant.Org{e.other}}
}

// wantFieldNames checks the fields a refusal that is not Invalid names
// (recipient_not_verified names each refused recipient).
func wantFieldNames(t *testing.T, pe *problem.Error, fields ...string) {
	t.Helper()
	var got []string
	for _, f := range pe.Fields {
		got = append(got, f.Field)
	}
	if !slices.Equal(got, fields) {
		t.Fatalf("%s names fields %q, want %q", pe.Code, got, fields)
	}
}

// count is how many rows the query counts.
func (e *apiEnv) count(query string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	return n
}

func ptr[T any](v T) *T { return &v }

// Send stores the email with its delivery job and answers the summary; a
// request with invalid fields names each and stores nothing; the namespace
// of another organisation is not found; the sending rules that need the
// namespace refuse a foreign sender and an unverified recipient.
func TestSendOperation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newServiceEnv(t, db, nil)
		ctx := context.Background()
		out := e.svc.Outbound
		e.verify(e.org.ID, "partner@example.com")

		sent, err := out.Send(ctx, e.owner(), outbound.SendRequest{Namespace: " default ",
			From: &outbound.AddressInput{Email: ptr("app@default.localhost"), Name: "App"},
			To:   []string{"Jane <jane@default.localhost>", "partner@example.com"}, Subject: "Hello", Text: "Hi"})
		if err != nil {
			t.Fatalf("send: %v", err)
		}
		if sent.Type != outstore.TypeNew || sent.Status != outstore.StatusQueued || sent.RecipientCount != 2 ||
			sent.From != (outstore.Address{Email: "app@default.localhost", Name: "App"}) || sent.OrgID != e.org.ID || sent.Subject != "Hello" {
			t.Errorf("sent %+v", sent)
		}
		d := e.detail(sent.ID)
		if len(d.Recipients) != 2 || !d.Recipients[0].Internal || d.Recipients[1].Internal || d.Recipients[0].Name != "Jane" {
			t.Errorf("recipients %+v", d.Recipients)
		}
		if n := e.count("SELECT COUNT(*) FROM jobs WHERE kind = ?", outbound.DeliveryKind); n != 1 {
			t.Errorf("%d delivery jobs, want 1", n)
		}

		_, err = out.Send(ctx, e.owner(), outbound.SendRequest{To: []string{"john"}, Text: "x",
			Attachments: []outbound.AttachmentInput{{Filename: "a.txt", ContentType: "text/plain"}}})
		problemtest.WantFields(t, err, "invalid_parameter", "namespace", "to[0]", "subject", "attachments[0].content_base64")
		// A Go caller's strings are not made UTF-8 by a JSON decoder: text that
		// is not is refused as invalid, never stored.
		_, err = out.Send(ctx, e.owner(), outbound.SendRequest{Namespace: "default", To: []string{"jane@default.localhost", "j\xffe@default.localhost"},
			Subject: "caf\xe9", Text: "t", Attachments: []outbound.AttachmentInput{{Filename: "a.txt", ContentType: "text/plain; name=\"\xff\"", ContentBase64: ptr("")}}})
		problemtest.WantFields(t, err, "invalid_parameter", "to[1]", "subject", "attachments[0].content_type")

		ok := outbound.SendRequest{Namespace: "default", To: []string{"jane@default.localhost"}, Subject: "s", Text: "t"}
		_, err = out.Send(ctx, e.stranger(), ok)
		problemtest.Want(t, err, problem.NotFound, "not_found")
		foreign := ok
		foreign.Namespace = "elsewhere"
		_, err = out.Send(ctx, e.owner(), foreign)
		problemtest.Want(t, err, problem.NotFound, "not_found")

		spoofed := ok
		spoofed.From = &outbound.AddressInput{Email: ptr("app@elsewhere.localhost")}
		_, err = out.Send(ctx, e.owner(), spoofed)
		wantFieldNames(t, problemtest.Want(t, err, problem.Forbidden, "sender_not_in_namespace"), "from.email")

		unverified := ok
		unverified.Cc = []string{"stranger@example.com"}
		_, err = out.Send(ctx, e.owner(), unverified)
		wantFieldNames(t, problemtest.Want(t, err, problem.Forbidden, "recipient_not_verified"), "cc[0]")

		if n := e.count("SELECT COUNT(*) FROM outbound_emails"); n != 1 {
			t.Errorf("%d outbound emails stored, want only the accepted one", n)
		}
	})
}

// Reply and Forward make their email from an inbound one the organisation
// can read: threaded to it and to its sender, or forwarded with its subject;
// a request with invalid fields names them; an email of another organisation,
// or a malformed id, is not found.
func TestReplyAndForwardOperations(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newServiceEnv(t, db, nil)
		ctx := context.Background()
		out := e.svc.Outbound
		id := e.deliver("default", fromTeammate, "john@default.localhost")

		reply, err := out.Reply(ctx, e.owner(), outbound.ReplyRequest{EmailID: id, Text: "Thanks"})
		if err != nil {
			t.Fatalf("reply: %v", err)
		}
		d := e.detail(reply.ID)
		if d.Type != outstore.TypeReply || d.Subject != "Re: Quarterly numbers" || d.SourceEmailID != id ||
			len(d.Recipients) != 1 || d.Recipients[0].Email != "alice@default.localhost" {
			t.Errorf("reply %+v, recipients %+v", d.Email, d.Recipients)
		}
		_, err = out.Reply(ctx, e.owner(), outbound.ReplyRequest{EmailID: id, Cc: []string{"x@"}})
		problemtest.WantFields(t, err, "invalid_parameter", "cc[0]", "html")

		fwd, err := out.Forward(ctx, e.owner(), outbound.ForwardRequest{EmailID: id, To: []string{"mary@default.localhost"}})
		if err != nil {
			t.Fatalf("forward: %v", err)
		}
		d = e.detail(fwd.ID)
		if d.Type != outstore.TypeForward || d.Subject != "Fwd: Quarterly numbers" || d.SourceEmailID != id ||
			len(d.Recipients) != 1 || d.Recipients[0].Email != "mary@default.localhost" {
			t.Errorf("forward %+v, recipients %+v", d.Email, d.Recipients)
		}
		_, err = out.Forward(ctx, e.owner(), outbound.ForwardRequest{EmailID: id, Subject: "a\nb"})
		problemtest.WantFields(t, err, "invalid_parameter", "to", "subject")

		_, err = out.Reply(ctx, e.stranger(), outbound.ReplyRequest{EmailID: id, Text: "x"})
		problemtest.Want(t, err, problem.NotFound, "not_found")
		_, err = out.Forward(ctx, e.stranger(), outbound.ForwardRequest{EmailID: id, To: []string{"bob@elsewhere.localhost"}})
		problemtest.Want(t, err, problem.NotFound, "not_found")
		foreign := e.deliver("elsewhere", inElsewhere, "carol@elsewhere.localhost")
		_, err = out.Reply(ctx, e.owner(), outbound.ReplyRequest{EmailID: foreign, Text: "x"})
		problemtest.Want(t, err, problem.NotFound, "not_found")
		_, err = out.Forward(ctx, e.owner(), outbound.ForwardRequest{EmailID: "not-a-uuid", To: []string{"mary@default.localhost"}})
		problemtest.Want(t, err, problem.NotFound, "not_found")

		if n := e.count("SELECT COUNT(*) FROM outbound_emails"); n != 2 {
			t.Errorf("%d outbound emails stored, want the reply and the forward", n)
		}
	})
}

// Cancel cancels the recipients no attempt has reached, once: a second
// cancel is a conflict; another organisation's email is not found, and is
// left as it was.
func TestCancelOperation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newServiceEnv(t, db, nil)
		ctx := context.Background()
		out := e.svc.Outbound
		sent, err := out.Send(ctx, e.owner(), outbound.SendRequest{Namespace: "default",
			To: []string{"jane@default.localhost", "joe@default.localhost"}, Subject: "Later", Text: "t"})
		if err != nil {
			t.Fatal(err)
		}

		_, err = out.Cancel(ctx, e.stranger(), outbound.CancelRequest{ID: sent.ID})
		problemtest.Want(t, err, problem.NotFound, "not_found")
		if d := e.detail(sent.ID); d.Recipients[0].Status != outstore.DeliveryQueued {
			t.Fatalf("after a refused cancel: %s", d.Recipients[0].Status)
		}
		_, err = out.Cancel(ctx, e.owner(), outbound.CancelRequest{ID: "42"})
		problemtest.Want(t, err, problem.NotFound, "not_found")

		d, err := out.Cancel(ctx, e.owner(), outbound.CancelRequest{ID: sent.ID})
		if err != nil {
			t.Fatalf("cancel: %v", err)
		}
		for _, r := range d.Recipients {
			if r.Status != outstore.DeliveryCancelled {
				t.Errorf("recipient %s is %s, want cancelled", r.Email, r.Status)
			}
		}
		if d.Status != outstore.StatusFailed {
			t.Errorf("email status %s, want failed", d.Status)
		}
		_, err = out.Cancel(ctx, e.owner(), outbound.CancelRequest{ID: sent.ID})
		problemtest.Want(t, err, problem.Conflict, "not_cancellable")
	})
}

// AddDestination checks the address, stores it pending with its verification
// mail queued (or answers a verified one as it is), and counts the hour's
// mails; VerifyDestination takes only a valid link; RemoveDestination
// removes the organisation's own only.
func TestDestinationOperations(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newServiceEnv(t, db, nil)
		ctx := context.Background()
		out := e.svc.Outbound

		_, err := out.AddDestination(ctx, e.owner(), outbound.AddDestinationRequest{})
		problemtest.WantFields(t, err, "invalid_parameter", "email")
		_, err = out.AddDestination(ctx, e.owner(), outbound.AddDestinationRequest{Email: ptr("Jane <jane@example.com>")})
		problemtest.WantFields(t, err, "invalid_parameter", "email")

		added, err := out.AddDestination(ctx, e.owner(), outbound.AddDestinationRequest{Email: ptr("Partner@Example.com")})
		if err != nil {
			t.Fatalf("add: %v", err)
		}
		if !added.Queued || added.Destination.Verified() || added.Destination.Address != "partner@example.com" || added.Destination.OrgID != e.org.ID {
			t.Errorf("added %+v", added)
		}
		if n := e.count("SELECT COUNT(*) FROM jobs WHERE kind = ?", destinations.VerifyKind); n != 1 {
			t.Errorf("%d verification jobs, want 1", n)
		}
		e.verify(e.org.ID, "known@example.com")
		again, err := out.AddDestination(ctx, e.owner(), outbound.AddDestinationRequest{Email: ptr("known@example.com")})
		if err != nil || again.Queued || !again.Destination.Verified() {
			t.Errorf("add a verified destination: %+v %v", again, err)
		}

		link, err := url.Parse(out.Verifier.Link(added.Destination.ID))
		if err != nil {
			t.Fatal(err)
		}
		valid := outbound.VerifyDestinationRequest{ID: added.Destination.ID, Expires: link.Query().Get("expires"),
			Signature: link.Query().Get("signature")}
		tampered := valid
		tampered.Signature = "x" + valid.Signature[1:]
		_, err = out.VerifyDestination(ctx, tampered)
		problemtest.Want(t, err, problem.NotFound, "link_invalid")
		d, err := out.VerifyDestination(ctx, valid)
		if err != nil || !d.Verified() || d.ID != added.Destination.ID {
			t.Fatalf("verify: %+v %v", d, err)
		}

		err = out.RemoveDestination(ctx, e.stranger(), outbound.RemoveDestinationRequest{ID: d.ID})
		problemtest.Want(t, err, problem.NotFound, "not_found")
		if err := out.RemoveDestination(ctx, e.owner(), outbound.RemoveDestinationRequest{ID: d.ID}); err != nil {
			t.Fatalf("remove: %v", err)
		}
		err = out.RemoveDestination(ctx, e.owner(), outbound.RemoveDestinationRequest{ID: d.ID})
		problemtest.Want(t, err, problem.NotFound, "not_found")
		_, err = out.VerifyDestination(ctx, valid)
		problemtest.Want(t, err, problem.NotFound, "link_invalid")

		// The hour's allowance: one mail is counted already.
		for i := range destinations.MaxVerificationMailsPerHour - 1 {
			if _, err := out.AddDestination(ctx, e.owner(), outbound.AddDestinationRequest{Email: ptr(fmt.Sprintf("user%d@example.com", i))}); err != nil {
				t.Fatalf("add %d: %v", i, err)
			}
		}
		e.later(10 * time.Minute)
		_, err = out.AddDestination(ctx, e.owner(), outbound.AddDestinationRequest{Email: ptr("one-more@example.com")})
		if pe := problemtest.Want(t, err, problem.TooMany, "verification_rate_limited"); pe.RetryAfter != 50*time.Minute {
			t.Errorf("retry after %v, want 50m", pe.RetryAfter)
		}
		if _, err := out.AddDestination(ctx, e.stranger(), outbound.AddDestinationRequest{Email: ptr("one-more@example.com")}); err != nil {
			t.Errorf("the other organisation's allowance: %v", err)
		}
	})
}

// RemoveSuppression removes the organisation's own suppression of an
// address, whatever its case; another organisation's is not found and stays.
func TestRemoveSuppressionOperation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newServiceEnv(t, db, nil)
		ctx := context.Background()
		out := e.svc.Outbound
		if _, err := db.Exec(ctx, "INSERT INTO suppressions (org_id, address, reason, created_at) VALUES (?, ?, ?, ?)",
			e.org.ID, "bounced@example.com", "bounced", start.UnixMilli()); err != nil {
			t.Fatal(err)
		}

		err := out.RemoveSuppression(ctx, e.stranger(), outbound.RemoveSuppressionRequest{Address: "bounced@example.com"})
		problemtest.Want(t, err, problem.NotFound, "not_found")
		if n := e.count("SELECT COUNT(*) FROM suppressions"); n != 1 {
			t.Fatalf("%d suppressions after a refused removal", n)
		}
		err = out.RemoveSuppression(ctx, e.owner(), outbound.RemoveSuppressionRequest{})
		problemtest.Want(t, err, problem.NotFound, "not_found")
		if err := out.RemoveSuppression(ctx, e.owner(), outbound.RemoveSuppressionRequest{Address: "Bounced@Example.com"}); err != nil {
			t.Fatalf("remove: %v", err)
		}
		if n := e.count("SELECT COUNT(*) FROM suppressions"); n != 0 {
			t.Errorf("%d suppressions after the removal", n)
		}
		err = out.RemoveSuppression(ctx, e.owner(), outbound.RemoveSuppressionRequest{Address: "bounced@example.com"})
		problemtest.Want(t, err, problem.NotFound, "not_found")
	})
}
