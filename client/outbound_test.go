package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/client"
	"github.com/catchbox/catchbox/client/internal/testserver"
)

// TestOutbound sends, replies to and forwards mail within a namespace and reads
// back what the server recorded: the summary, the list, the detail with its
// recipients, an attachment's bytes, and a cancellation.
func TestOutbound(t *testing.T) {
	eachServer(t, func(t *testing.T, s *testserver.Server, c *client.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		name := uniqueNamespace(t)
		if _, err := c.SaveNamespace(ctx, name, client.SettingsRequest{}); err != nil {
			t.Fatal(err)
		}
		domain := name + ".localhost"
		csv := []byte("clause,text\n1,be nice\n")
		sent, err := c.Send(ctx, name, client.SendRequest{
			From:        &client.OutboundAddress{Email: "app@" + domain, Name: "App"},
			To:          []string{"Jane <jane@" + domain + ">"},
			Subject:     "Your receipt",
			Text:        "Thanks. Code 551234.",
			Attachments: []client.OutboundAttachment{{Filename: "receipt.csv", ContentType: "text/csv", Content: csv}},
		})
		if err != nil || sent.ID == "" || sent.Type != "new" || sent.Status != "queued" || sent.From.Email != "app@"+domain ||
			sent.RecipientCount != 1 || sent.AttachmentCount != 1 || sent.QueuedAt.IsZero() || sent.Final() {
			t.Fatalf("Send = %+v, %v", sent, err)
		}

		detail, err := c.OutboundEmail(ctx, sent.ID)
		if err != nil || detail.Text != "Thanks. Code 551234." || len(detail.Recipients) != 1 ||
			detail.Recipients[0].Email != "jane@"+domain || detail.Recipients[0].Name != "Jane" || detail.Recipients[0].Type != "to" ||
			len(detail.Attachments) != 1 || detail.DeliverySummary == nil {
			t.Fatalf("OutboundEmail = %+v, %v", detail, err)
		}
		content, err := c.OutboundAttachment(ctx, sent.ID, detail.Attachments[0].ID)
		if err != nil || !bytes.Equal(content.Content, csv) || content.Filename != "receipt.csv" || content.Size != int64(len(csv)) {
			t.Fatalf("OutboundAttachment = %+v, %v", content, err)
		}

		page, err := c.OutboundEmails(ctx, client.OutboundQuery{Limit: 100, Type: "new"})
		if err != nil || page.Options.Limit != 100 || page.Options.Type != "new" || !containsOutbound(page.Data, sent.ID) {
			t.Fatalf("OutboundEmails = %+v, %v", page, err)
		}

		// Reply and forward need a received email.
		sendMail(t, s.SMTP, "support@"+domain, "me@"+domain, "Order 42", signUpBody) // a reply goes back to support@, in the namespace
		got, err := c.WaitForEmail(ctx, name, client.Filter{Subject: "Order 42"})
		if err != nil {
			t.Fatal(err)
		}
		reply, err := c.Reply(ctx, got.ID, client.ReplyRequest{From: &client.OutboundAddress{Email: "me@" + domain}, Text: "Thanks!"})
		if err != nil || reply.Type != "reply" || reply.Subject != "Re: Order 42" || reply.RecipientCount != 1 {
			t.Fatalf("Reply = %+v, %v", reply, err)
		}
		fwd, err := c.Forward(ctx, got.ID, client.ForwardRequest{To: []string{"team@" + domain}, Text: "FYI"})
		if err != nil || fwd.Type != "forward" || fwd.Subject != "Fwd: Order 42" || fwd.AttachmentCount != 1 {
			t.Fatalf("Forward = %+v, %v", fwd, err)
		}

		// A send that breaks a rule is an *Error naming the field.
		_, err = c.Send(ctx, name, client.SendRequest{To: []string{"jane@" + domain}, Subject: strings.Repeat("s", 999), Text: "x"})
		var apiErr *client.Error
		if !asError(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || len(apiErr.Errors) == 0 || apiErr.Errors[0].Field != "subject" {
			t.Errorf("Send with a 999-character subject = %v", err)
		}
		if _, err := c.OutboundEmail(ctx, "00000000-0000-4000-8000-000000000000"); client.ErrorCode(err) != "not_found" {
			t.Errorf("OutboundEmail of no email = %v; want not_found", err)
		}
	})
}

// TestWaitForOutboundEndsWithTheEmail waits for an outbound email to become
// final: a cancelled one, whose recipients were never attempted.
func TestWaitForOutboundEndsWithTheEmail(t *testing.T) {
	eachServer(t, func(t *testing.T, s *testserver.Server, c *client.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		name := uniqueNamespace(t)
		if _, err := c.SaveNamespace(ctx, name, client.SettingsRequest{}); err != nil {
			t.Fatal(err)
		}
		sent, err := c.Send(ctx, name, client.SendRequest{To: []string{"a@" + name + ".localhost", "b@" + name + ".localhost"},
			Subject: "Hello", HTML: "<p>Hello</p>"})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		var final client.OutboundEmail
		go func() {
			var err error
			final, err = c.WaitForOutbound(ctx, sent.ID, 20*time.Millisecond)
			done <- err
		}()
		cancelled, err := c.CancelOutbound(ctx, sent.ID)
		if err != nil {
			// Delivered before the cancel could stop it: nothing to cancel.
			t.Logf("CancelOutbound = %v", err)
		} else if len(cancelled.Recipients) != 2 {
			t.Errorf("CancelOutbound = %+v", cancelled)
		}
		if err := <-done; err != nil || !final.Final() || final.ID != sent.ID || final.Events == nil {
			t.Fatalf("WaitForOutbound = %+v, %v", final, err)
		}

		short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
		defer stop()
		other, err := c.Send(ctx, name, client.SendRequest{To: []string{"c@" + name + ".localhost"}, Subject: "Hi", Text: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		if e, err := c.WaitForOutbound(short, other.ID, 10*time.Millisecond); err == nil && !e.Final() {
			t.Errorf("WaitForOutbound returned a queued email without an error")
		}
	})
}

// TestDeliverabilityReport asks for a report of a received email and waits for
// it. The server's DNS lookups are refused (testserver), so the DNS-based
// sections report lookup failures; the content section reads the message.
func TestDeliverabilityReport(t *testing.T) {
	eachServer(t, func(t *testing.T, s *testserver.Server, c *client.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		name := uniqueNamespace(t)
		if _, err := c.SaveNamespace(ctx, name, client.SettingsRequest{}); err != nil {
			t.Fatal(err)
		}
		sendMail(t, s.SMTP, "news@shop.example", "me@"+name+".localhost", "Deals", signUpBody)
		e, err := c.WaitForEmail(ctx, name, client.Filter{Subject: "Deals"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.DeliverabilityReport(ctx, e.ID); client.ErrorCode(err) != "not_found" {
			t.Errorf("DeliverabilityReport before any request = %v; want not_found", err)
		}
		r, err := c.WaitForDeliverabilityReport(ctx, e.ID, 50*time.Millisecond)
		if err != nil || r.Status != "completed" || r.Report == nil || r.AnalysisVersion == "" {
			t.Fatalf("WaitForDeliverabilityReport = %+v, %v", r, err)
		}
		rep := r.Report
		if rep.Source.EmailID != e.ID || rep.Source.Namespace != name || rep.OverallStatus == "" ||
			rep.SPF.Status == "" || rep.DKIM.Status == "" || rep.DMARC.Status == "" || rep.DNS.Status == "" {
			t.Errorf("report = %+v", rep)
		}
		if !rep.Content.HasText || !rep.Content.HasHTML || rep.Content.AttachmentCount != 1 || rep.Content.LinkCount == 0 {
			t.Errorf("content section = %+v", rep.Content)
		}
		if len(rep.DKIM.Signatures) != 0 || rep.SPF.Sender != "news@shop.example" {
			t.Errorf("spf %+v, dkim %+v", rep.SPF, rep.DKIM)
		}
	})
}

// TestTooManyRequestsIsRetried runs a server that allows one API key two
// requests a second: a burst of requests all succeed, each 429 sent again
// after its Retry-After, and a client told not to retry sees the 429.
func TestTooManyRequestsIsRetried(t *testing.T) {
	s, err := testserver.Start(binary, "", hold, "CATCHBOX_RATE_LIMIT_KEY=2", "CATCHBOX_RATE_LIMIT_KEY_BURST=2")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	patient, err := client.New(s.URL, testserver.Key, client.WithRetries(10))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if err := patient.CheckKey(ctx); err != nil {
			t.Fatalf("request %d with retries: %v", i, err)
		}
	}

	impatient, err := client.New(s.URL, testserver.Key, client.WithRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	var last error
	for range 4 {
		if last = impatient.CheckKey(ctx); last != nil {
			break
		}
	}
	var apiErr *client.Error
	if !asError(last, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("four requests at once without retries: %v; want a 429", last)
	}

	// A deadline shorter than the Retry-After returns the 429 at once.
	short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	defer stop()
	for range 4 {
		if last = patient.CheckKey(short); last != nil {
			break
		}
	}
	if !asError(last, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a retry that would outlast the deadline: %v; want the 429", last)
	}
}

func containsOutbound(all []client.OutboundEmail, id string) bool {
	for _, e := range all {
		if e.ID == id {
			return true
		}
	}
	return false
}

func asError(err error, target **client.Error) bool { return errors.As(err, target) }

// TestDeleteEmails deletes one email, then clears the inbox.
func TestDeleteEmails(t *testing.T) {
	eachServer(t, func(t *testing.T, s *testserver.Server, c *client.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		name := uniqueNamespace(t)
		if _, err := c.SaveNamespace(ctx, name, client.SettingsRequest{}); err != nil {
			t.Fatal(err)
		}
		for _, subject := range []string{"one", "two", "three"} {
			sendMail(t, s.SMTP, "app@shop.example", "me@"+name+".localhost", subject, signUpBody)
		}
		one, err := c.WaitForEmail(ctx, name, client.Filter{Subject: "one"})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.DeleteEmail(ctx, one.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Email(ctx, one.ID); client.ErrorCode(err) != "not_found" {
			t.Errorf("Email after DeleteEmail = %v; want not_found", err)
		}
		if err := c.DeleteEmail(ctx, one.ID); client.ErrorCode(err) != "not_found" {
			t.Errorf("second DeleteEmail = %v; want not_found", err)
		}
		if page, err := c.SearchEmails(ctx, name, client.SearchQuery{}); err != nil || page.TotalCount != 2 {
			t.Fatalf("after one deletion: %d emails, %v", page.TotalCount, err)
		}
		if err := c.ClearInbox(ctx, name); err != nil {
			t.Fatal(err)
		}
		if page, err := c.SearchEmails(ctx, name, client.SearchQuery{}); err != nil || page.TotalCount != 0 {
			t.Fatalf("after ClearInbox: %d emails, %v", page.TotalCount, err)
		}
	})
}
