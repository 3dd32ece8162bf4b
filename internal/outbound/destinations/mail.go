package destinations

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"github.com/catchbox/catchbox/internal/jobs"
	"github.com/catchbox/catchbox/internal/outbound/relay"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/tenant"
)

// VerifyKind is the job kind (internal/jobs) that mails a destination its
// verification link through the relay.
const VerifyKind = "destination.verify"

// verifyPayload is a destination.verify job's payload, as JSON.
type verifyPayload struct {
	DestinationID string `json:"destination_id"`
}

// VerifyPath is where a verification link points: VerifyPath + id, with the
// expires and signature query parameters of a signed link.
const VerifyPath = "/verify/destinations/"

// verifyPurpose separates the signatures of verification links from every
// other signed link's.
const verifyPurpose = "destination-verify"

// Verifier mails verification links (the destination.verify job) and checks
// them when followed.
type Verifier struct {
	Store *Store
	Key   *secret.Key
	// PublicURL is the base of links (CATCHBOX_PUBLIC_URL).
	PublicURL func() string
	// MailDomain is the domain of the verification mail's sender and
	// Message-ID.
	MailDomain string
	// Relay is the relay of CATCHBOX_RELAY_URL, the one outbound delivery
	// uses; nil sends nothing, and the job fails at once with a clear error.
	Relay *relay.Client
	// Now is the clock of link expiry; nil is time.Now.
	Now func() time.Time
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// Link returns destination id's verification link, valid for
// VerificationLinkTTL.
func (v *Verifier) Link(id string) string {
	expires := v.now().Add(VerificationLinkTTL).Truncate(time.Second)
	q := url.Values{}
	q.Set("expires", strconv.FormatInt(expires.Unix(), 10))
	q.Set("signature", v.Key.Sign(verifyPurpose, id, expires))
	return v.PublicURL() + VerifyPath + url.PathEscape(id) + "?" + q.Encode()
}

// CheckLink reports whether expires and signature are those of a valid
// verification link of destination id.
func (v *Verifier) CheckLink(id, expires, signature string) bool {
	exp, err := strconv.ParseInt(expires, 10, 64)
	return err == nil && v.Key.Verify(verifyPurpose, id, time.Unix(exp, 0), signature, v.now())
}

// Handle runs a VerifyKind job: it mails the destination its link,
// unless it was removed or verified meanwhile. Without a relay the job fails
// for good (jobs.Permanent): nothing could send it.
func (v *Verifier) Handle(ctx context.Context, job *jobs.Job) error {
	var p verifyPayload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return jobs.Permanent(fmt.Errorf("destination.verify payload: %w", err))
	}
	d, err := v.Store.ByID(ctx, "", p.DestinationID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if d.Verified() {
		return nil
	}
	if v.Relay == nil {
		slog.Warn("A destination's verification mail cannot be sent: no relay is configured (CATCHBOX_RELAY_URL)", "destination_id", d.ID)
		return jobs.Permanent(errors.New("no relay configured (CATCHBOX_RELAY_URL): verification mail not sent"))
	}
	from := "no-reply@" + v.MailDomain
	rep := v.Relay.Send(ctx, from, []string{d.Address}, v.message(from, d)).Replies[0]
	switch rep.Outcome {
	case relay.Sent:
	case relay.Bounced:
		return jobs.Permanent(fmt.Errorf("the relay refused the verification mail of destination %s: %s %s", d.ID, rep.Code, rep.Text))
	default:
		return fmt.Errorf("send the verification mail of destination %s: %s %s", d.ID, rep.Code, rep.Text)
	}
	slog.Info("Destination verification mail sent", "destination_id", d.ID)
	return nil
}

// message is the verification mail to d: plain text, the link on a line of
// its own.
func (v *Verifier) message(from string, d Destination) []byte {
	var b bytes.Buffer
	now := v.now()
	fmt.Fprintf(&b, "From: Catchbox <%s>\r\n", from)
	fmt.Fprintf(&b, "To: <%s>\r\n", d.Address)
	fmt.Fprintf(&b, "Subject: Verify %s as a Catchbox destination\r\n", d.Address)
	fmt.Fprintf(&b, "Date: %s\r\n", now.Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: <%s@%s>\r\n", tenant.NewID(), v.MailDomain)
	b.WriteString("Auto-Submitted: auto-generated\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n")
	b.WriteString("Content-Transfer-Encoding: 8bit\r\n\r\n")
	fmt.Fprintf(&b, "A Catchbox organisation asked to send test mail to %s.\r\n\r\n", d.Address)
	b.WriteString("To allow it, follow this link within 24 hours:\r\n\r\n")
	b.WriteString(v.Link(d.ID) + "\r\n\r\n")
	b.WriteString("If you did not expect this, ignore this message: nothing is sent to you unless the link is followed.\r\n")
	return b.Bytes()
}
