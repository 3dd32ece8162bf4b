package outbound

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/jobs"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/outbound/relay"
	"github.com/catchbox/catchbox/internal/routing"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Delivery. A delivery job (DeliveryKind) makes attempts at one outbound
// email until none of its recipients is left to try. An attempt takes the
// recipients still open that were never handed over (a recipient that is
// sent or delivered is never tried again, even when a later report calls it
// delayed) and splits them:
//
//   - internal ones, addresses of a namespace of this server that the
//     sending organisation may read (its own, or one shared with it), are
//     stored into that namespace's inbox by the ingest path SMTP uses
//     (inbox.Ingester.DeliverInTx): delivered, provider internal;
//   - the others go to the relay (CATCHBOX_RELAY_URL), one SMTP transaction
//     with one RCPT per recipient, each with its own reply (package relay): 250 is
//     sent, 4xx deferred, 5xx bounced; a failure to connect, to start TLS or
//     to authenticate defers every one of them. Without a relay they fail at
//     once.
//
// Everything an attempt learnt is recorded in one transaction with the
// attempt's outcome (jobs.Job.Finish): the internal deliveries' emails, and
// the events (RecordEvent) that move the recipients. A deferred recipient
// is tried again after a backoff, until MaxAge has passed since the email
// was created; the attempt after that expires it. docs/flow.md ("Delivery")
// describes the window in which a relay's 250 can be followed by a second
// sending: a crash between that reply and the commit.

// Deliverer delivers outbound emails: the handler of DeliveryKind jobs.
type Deliverer struct {
	Store    *outstore.Store
	DB       *store.DB
	Routes   *routing.Rule
	Key      *secret.Key
	Ingester *inbox.Ingester
	// Relay hands mail to external recipients; nil when none is configured.
	Relay *relay.Client
	// MaxAge is how long after its creation an email is retried for a
	// deferred recipient (CATCHBOX_OUTBOUND_MAX_AGE).
	MaxAge time.Duration
	// RetryBase is the delay before the first retry, doubled at each further
	// one up to RetryMax; each is drawn between half and all of its value.
	RetryBase, RetryMax time.Duration
	// Now is the clock (time.Now): the one of the job queue, so that a
	// retry's time and the expiry are read on the same clock.
	Now func() time.Time
}

// Defaults of a Deliverer's retries.
const (
	DefaultMaxAge    = 24 * time.Hour
	DefaultRetryBase = time.Minute
	DefaultRetryMax  = time.Hour
)

// DeliveryLimits are the job queue's limits of DeliveryKind: the attempts
// are bounded by MaxAge rather than by their number, which is set high enough
// never to end a job earlier (a retry an hour apart at most over a day, and
// more if MaxAge is set longer).
var DeliveryLimits = jobs.Limits{Workers: 4, MaxAttempts: 10000, Timeout: 10 * time.Minute,
	Backoff: 30 * time.Second, MaxBackoff: 30 * time.Minute}

// Failure reasons of recipients and emails that could not be delivered.
const (
	reasonNoRelay        = "no relay is configured (CATCHBOX_RELAY_URL): mail to an external recipient cannot be delivered"
	reasonExpiredMessage = "the message's content expired before it could be delivered"
	reasonNoNamespace    = "the recipient's namespace no longer exists"
)

func (d *Deliverer) now() time.Time {
	if d.Now == nil {
		return time.Now()
	}
	return d.Now()
}

// Deliver is the handler of a DeliveryKind job: one attempt at the email the
// payload names.
func (d *Deliverer) Deliver(ctx context.Context, job *jobs.Job) error {
	var p DeliveryPayload
	if err := json.Unmarshal(job.Payload, &p); err != nil || p.OutboundID == "" {
		return jobs.Permanent(fmt.Errorf("delivery payload %q: %v", job.Payload, err))
	}
	e, err := d.Store.ByID(ctx, p.OutboundID)
	if errors.Is(err, outstore.ErrNotFound) {
		return jobs.Permanent(fmt.Errorf("outbound email %s: %w", p.OutboundID, err))
	}
	if err != nil {
		return err
	}
	todo := toTry(e.Recipients)
	if len(todo) == 0 {
		return job.Finish(ctx, nil, nil)
	}
	a := d.plan(ctx, e, todo)
	if len(a.external) > 0 && d.Relay != nil {
		// The relay's conversation takes a while: show the message sending
		// meanwhile. Not made durable on its own: lost in a crash, it is
		// made again by the next attempt, and the results' commit (Finish)
		// is durable and implies it.
		err = d.DB.InTxUnsynced(ctx, func(tx *store.Tx) error {
			_, err := d.Store.MarkSending(ctx, tx, e.ID)
			return err
		})
		if err != nil {
			return err
		}
	}
	now := d.now()
	deadline := e.CreatedAt.Add(d.maxAge())
	source, err := d.Store.Source(ctx, e.ID)
	switch {
	case errors.Is(err, outstore.ErrContentExpired):
		a.failAll(reasonExpiredMessage, "content_expired")
	case err != nil:
		return err
	case len(a.external) == 0:
	case !now.Before(deadline):
		a.expire(d.maxAge())
	case d.Relay == nil:
		a.failExternal(reasonNoRelay, "no_relay")
	default:
		a.relayed(d.Relay.Send(ctx, d.Routes.ReturnPath(d.Key, e.ID), addresses(a.external), source))
	}
	var outcome error
	if a.deferred > 0 {
		retry := now.Add(d.retryDelay(job.Attempt))
		if retry.After(deadline) {
			retry = deadline // the attempt that expires what is still deferred
		}
		outcome = jobs.RetryAt(retry, fmt.Errorf("%d recipient(s) deferred", a.deferred))
	}
	return job.Finish(ctx, outcome, func(ctx context.Context, tx *store.Tx) error {
		return d.record(ctx, tx, e, a, source)
	})
}

// toTry are the recipients an attempt is for: open, and never handed over.
func toTry(rs []outstore.Recipient) []outstore.Recipient {
	var out []outstore.Recipient
	for _, r := range rs {
		if !r.Status.Final() && r.At[outstore.DeliverySent].IsZero() && r.At[outstore.DeliveryDelivered].IsZero() {
			out = append(out, r)
		}
	}
	return out
}

func (d *Deliverer) maxAge() time.Duration {
	if d.MaxAge <= 0 {
		return DefaultMaxAge
	}
	return d.MaxAge
}

// retryDelay is the delay after the attempt before the next: RetryBase
// doubled per earlier attempt, capped at RetryMax, drawn between half and all
// of it so that emails deferred together do not come back together.
func (d *Deliverer) retryDelay(attempt int) time.Duration {
	base, limit := d.RetryBase, d.RetryMax
	if base <= 0 {
		base = DefaultRetryBase
	}
	if limit <= 0 {
		limit = DefaultRetryMax
	}
	delay := base
	for i := 1; i < attempt && delay < limit; i++ {
		delay *= 2
	}
	delay = min(delay, limit)
	return delay/2 + rand.N(delay/2+1)
}

// attempt is what one attempt found out, to record with its outcome.
type attempt struct {
	internal map[string]*target // by namespace id
	external []outstore.Recipient
	events   []outstore.NewEvent
	deferred int // recipients left deferred: the job is retried
}

// target is one namespace that internal recipients are delivered into.
type target struct {
	ns         tenant.Namespace
	recipients []outstore.Recipient
}

// plan sorts the recipients of the attempt into internal ones, by namespace,
// and external ones; an internal address whose namespace is gone fails.
func (d *Deliverer) plan(ctx context.Context, e outstore.Detail, todo []outstore.Recipient) *attempt {
	a := &attempt{internal: map[string]*target{}}
	for _, r := range todo {
		_, ns, err := d.Routes.Route(ctx, r.Email)
		switch {
		case err == nil && ns.VisibleTo(e.OrgID):
			t := a.internal[ns.ID]
			if t == nil {
				t = &target{ns: ns}
				a.internal[ns.ID] = t
			}
			t.recipients = append(t.recipients, r)
		case r.Internal:
			// Addressed to the sending namespace when the email was
			// created, and no longer routed to it.
			a.events = append(a.events, outstore.NewEvent{Type: outstore.EventFailed, Subtype: "no_namespace",
				Provider: outstore.ProviderInternal, FailureReason: reasonNoNamespace,
				Recipients: []outstore.NewEventRecipient{{RecipientID: r.ID, Attempted: true, Action: "failed",
					DiagnosticCode: "x-catchbox; " + reasonNoNamespace}}})
		default:
			a.external = append(a.external, r)
		}
	}
	return a
}

func addresses(rs []outstore.Recipient) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Email
	}
	return out
}

// failAll fails every recipient of the attempt.
func (a *attempt) failAll(reason, subtype string) {
	var rs []outstore.Recipient
	for _, t := range a.internal {
		rs = append(rs, t.recipients...)
	}
	a.internal = map[string]*target{}
	a.external = append(a.external, rs...)
	a.failExternal(reason, subtype)
}

// failExternal fails the external recipients at once, without an attempt.
func (a *attempt) failExternal(reason, subtype string) {
	if len(a.external) == 0 {
		return
	}
	ev := outstore.NewEvent{Type: outstore.EventFailed, Subtype: subtype, FailureReason: reason}
	for _, r := range a.external {
		ev.Recipients = append(ev.Recipients, outstore.NewEventRecipient{RecipientID: r.ID, Action: "failed",
			DiagnosticCode: "x-catchbox; " + reason})
	}
	a.events = append(a.events, ev)
}

// expire ends the external recipients still deferred once the email's
// MaxAge has passed.
func (a *attempt) expire(maxAge time.Duration) {
	reason := fmt.Sprintf("not accepted by the relay within %s of its creation (CATCHBOX_OUTBOUND_MAX_AGE)", maxAge)
	ev := outstore.NewEvent{Type: outstore.EventExpired, Subtype: "max_age", Provider: outstore.ProviderSMTP, FailureReason: reason}
	for _, r := range a.external {
		ev.Recipients = append(ev.Recipients, outstore.NewEventRecipient{RecipientID: r.ID, Action: "failed",
			SMTPCode: r.LastSMTPCode, EnhancedStatusCode: r.LastEnhancedStatusCode,
			SMTPResponse: r.LastSMTPResponse, DiagnosticCode: "x-catchbox; " + reason})
	}
	a.events = append(a.events, ev)
}

// relayed turns the relay's replies into events: one per outcome, each
// recipient with its own reply.
func (a *attempt) relayed(res relay.Result) {
	byType := map[outstore.EventType]*outstore.NewEvent{}
	var order []outstore.EventType
	for i, r := range a.external {
		rep := res.Replies[i]
		typ := relayEvents[rep.Outcome]
		ev := byType[typ]
		if ev == nil {
			ev = &outstore.NewEvent{Type: typ, Subtype: rep.Subtype, Provider: outstore.ProviderSMTP}
			if typ == outstore.EventSent {
				ev.ProviderMessageID = res.QueueID
			}
			byType[typ] = ev
			order = append(order, typ)
		}
		er := outstore.NewEventRecipient{RecipientID: r.ID, Attempted: true, SMTPCode: rep.Code,
			EnhancedStatusCode: rep.Enhanced, SMTPResponse: rep.Text, Action: rep.Action}
		if rep.Code != "" {
			er.DiagnosticCode = "smtp; " + strings.TrimSpace(rep.Code+" "+rep.Enhanced+" "+rep.Text)
		} else {
			er.DiagnosticCode = "x-catchbox; " + rep.Text
		}
		if typ == outstore.EventBounced {
			er.BounceType, er.BounceClassification = "hard", bounceClassification(rep)
		}
		if typ == outstore.EventDeferred {
			a.deferred++
		}
		ev.Recipients = append(ev.Recipients, er)
	}
	for _, t := range order {
		a.events = append(a.events, *byType[t])
	}
}

// relayEvents is the event of each outcome of a relay's reply.
var relayEvents = map[relay.Outcome]outstore.EventType{relay.Sent: outstore.EventSent, relay.Deferred: outstore.EventDeferred, relay.Bounced: outstore.EventBounced}

// bounceClassification is a coarse reading of a permanent reply's enhanced
// status code (RFC 3463 section 3: its subject, the middle number).
func bounceClassification(rep relay.Reply) string {
	switch {
	case strings.HasPrefix(rep.Enhanced, "5.1."):
		return "invalid_recipient"
	case strings.HasPrefix(rep.Enhanced, "5.2."):
		return "mailbox"
	case strings.HasPrefix(rep.Enhanced, "5.7."):
		return "policy"
	case strings.HasPrefix(rep.Enhanced, "5.3."), strings.HasPrefix(rep.Enhanced, "5.4."):
		return "system"
	}
	return "undetermined"
}

// record writes the attempt in tx, the one that records its outcome: the
// internal recipients still open (a cancel may have ended some meanwhile)
// are stored into their namespaces and delivered, and every event applied.
func (d *Deliverer) record(ctx context.Context, tx *store.Tx, e outstore.Detail, a *attempt, source []byte) error {
	if len(a.internal) > 0 {
		// The email's row is locked first, as RecordEvent and Cancel lock it:
		// a cancel commits before this reads the recipients, or after the
		// deliveries are recorded.
		if err := tx.LockRow(ctx, "SELECT id FROM outbound_emails WHERE id = ?", e.ID); err != nil {
			return fmt.Errorf("lock outbound email %s: %w", e.ID, err)
		}
		current, err := d.Store.Recipients(ctx, tx, e.ID)
		if err != nil {
			return err
		}
		open := map[string]bool{}
		for _, r := range toTry(current) {
			open[r.ID] = true
		}
		ids := make([]string, 0, len(a.internal))
		for id := range a.internal {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			if err := d.deliverInternal(ctx, tx, e, a.internal[id], open, source); err != nil {
				return err
			}
		}
	}
	for _, ev := range a.events {
		recorded, err := d.Store.RecordEvent(ctx, tx, e.ID, ev)
		if err != nil {
			return err
		}
		if err := suppressHardBounces(ctx, tx, d.Store, e, ev, recorded.ID); err != nil {
			return err
		}
	}
	return nil
}

// suppressHardBounces suppresses, for the email's organisation, the address
// of each recipient a relay's 5xx bounced hard in ev (the event recorded as
// eventID), as a hard bounce reported later by a DSN does (RecordReport).
func suppressHardBounces(ctx context.Context, tx *store.Tx, st *outstore.Store, e outstore.Detail, ev outstore.NewEvent, eventID string) error {
	if ev.Type != outstore.EventBounced {
		return nil
	}
	for _, er := range ev.Recipients {
		if er.BounceType != "hard" {
			continue
		}
		for _, r := range e.Recipients {
			if r.ID == er.RecipientID {
				if err := st.Suppress(ctx, tx, e.OrgID, r.Email, outstore.SuppressedBounced, eventID); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// deliverInternal stores the message into the target's namespace, as one
// email for all its recipients still open, and records them delivered.
func (d *Deliverer) deliverInternal(ctx context.Context, tx *store.Tx, e outstore.Detail, t *target, open map[string]bool, source []byte) error {
	var rs []outstore.Recipient
	var addrs []string
	for _, r := range t.recipients {
		if open[r.ID] {
			rs = append(rs, r)
			addrs = append(addrs, r.Email)
		}
	}
	if len(rs) == 0 {
		return nil
	}
	id := internalEmailID(e, t.ns.ID)
	env := inbox.Envelope{Helo: d.Routes.Domain(), MailFrom: d.Routes.ReturnPath(d.Key, e.ID)}
	err := d.Ingester.DeliverInTx(ctx, tx, source, env, []inbox.Target{{Namespace: t.ns, Recipients: addrs}}, []string{id})
	if err != nil {
		return fmt.Errorf("deliver outbound email %s into namespace %s: %w", e.ID, t.ns.Name, err)
	}
	ev := outstore.NewEvent{Type: outstore.EventDelivered, Provider: outstore.ProviderInternal, ProviderMessageID: id}
	for _, r := range rs {
		ev.Recipients = append(ev.Recipients, outstore.NewEventRecipient{RecipientID: r.ID, Attempted: true,
			Action: "delivered", SMTPCode: "250", EnhancedStatusCode: "2.0.0",
			SMTPResponse: "delivered into namespace " + t.ns.Name})
	}
	_, err = d.Store.RecordEvent(ctx, tx, e.ID, ev)
	return err
}

// internalEmailID is the id of the inbox email an outbound email becomes in
// a namespace: the same for every attempt, so that storing it twice fails
// on the emails table's key rather than making a second copy. It has the
// layout of a UUID version 7 (the email's creation time, then bits of a hash
// of the two ids), as every id has.
func internalEmailID(e outstore.Detail, namespaceID string) string {
	h := sha256.Sum256([]byte("catchbox outbound delivery\x00" + e.ID + "\x00" + namespaceID))
	var u uuid.UUID
	ms := uint64(e.CreatedAt.UnixMilli())
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (40 - 8*i))
	}
	copy(u[6:], h[:10])
	u[6] = u[6]&0x0f | 0x70 // version 7
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	return u.String()
}

// DeliveryKind is the job kind (internal/jobs) that delivers an outbound email.
const DeliveryKind = "outbound.deliver"

// DeliveryPayload is a delivery job's payload, as JSON. The job reads
// everything else from the email's rows, where its attempts record their
// results.
type DeliveryPayload struct {
	OutboundID string `json:"outbound_id"`
}

// EnqueueDelivery adds the delivery job of the email to tx, the transaction
// that created it, and returns the job's id. The kind must be registered on q.
func EnqueueDelivery(ctx context.Context, q *jobs.Queue, tx *store.Tx, outboundID string) (int64, error) {
	payload, err := json.Marshal(DeliveryPayload{OutboundID: outboundID})
	if err != nil {
		return 0, fmt.Errorf("encode delivery payload: %w", err)
	}
	return q.Enqueue(ctx, tx, DeliveryKind, payload, jobs.EnqueueOptions{})
}
