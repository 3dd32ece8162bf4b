package outbound

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/jobs"
	"github.com/catchbox/catchbox/internal/outbound/compose"
	"github.com/catchbox/catchbox/internal/outbound/destinations"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/routing"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Service holds the operations on outbound email: each action a user takes
// (send, reply, forward, cancel; add, verify and remove a destination; remove
// a suppression) is one method taking the principal acting and a typed
// request, and returning a typed result or a *problem.Error, whose invalid
// fields are named as the API names them. The HTTP handlers (http.go,
// destinations_http.go, suppression.go) and the dashboard's pages call them
// and only translate; internal/server builds the Service.
type Service struct {
	Store *outstore.Store
	DB    *store.DB
	// Jobs is the queue the delivery job goes to, in the transaction that
	// creates the email.
	Jobs     *jobs.Queue
	Tenants  *tenant.Service
	Searcher *inbox.Searcher
	// Routes says which namespace an address belongs to, by the rule the
	// SMTP listener applies (internal/routing); its domain is the mail
	// domain of senders and Message-IDs.
	Routes *routing.Rule
	// Destinations are the organisations' verified destinations: the
	// external addresses a message may go to.
	Destinations *destinations.Store
	// Verifier mails and checks the verification links of destinations.
	Verifier *destinations.Verifier
}

// DefaultSenderLocal is the local part of the sender of a message whose
// request has no from (the seed's sending rule 3).
const DefaultSenderLocal = "outbound-delivery"

// AddressInput is the seed's OutboundEmailAddress in a request (from,
// reply_to). Email nil is absent ("is required"); "" is an empty address.
type AddressInput struct {
	Email *string `json:"email"`
	Name  string  `json:"name"`
}

// AttachmentInput is the seed's OutboundEmailAttachment in a request.
// ContentBase64 nil is absent ("is required"); "" is empty content. An empty
// Disposition is attachment, or inline for a part with a ContentID.
type AttachmentInput struct {
	Filename      string  `json:"filename"`
	ContentType   string  `json:"content_type"`
	ContentBase64 *string `json:"content_base64"`
	ContentID     string  `json:"content_id"`
	Disposition   string  `json:"disposition"`
}

// SendRequest is a new email from a namespace: the body of POST
// /api/emails/send, as the API names its fields, and the namespace of its
// query. From nil is the namespace's default sender (DefaultSenderLocal);
// To, Cc and Bcc are addresses, each bare or with a display name
// ("Jane <jane@example.com>"). The structs of requests are flat, not
// embedded, so that a field of the wrong type is named as the client wrote it.
type SendRequest struct {
	Namespace   string            `json:"-"`
	From        *AddressInput     `json:"from"`
	ReplyTo     *AddressInput     `json:"reply_to"`
	To          []string          `json:"to"`
	Cc          []string          `json:"cc"`
	Bcc         []string          `json:"bcc"`
	Subject     string            `json:"subject"`
	HTML        string            `json:"html"`
	Text        string            `json:"text"`
	Attachments []AttachmentInput `json:"attachments"`
}

// ReplyRequest is a reply to the inbound email EmailID: the body of POST
// /api/emails/{emailId}/reply. It has no to, whose recipient comes from the
// email replied to (its Reply-To, else its From), and no reply_to; an empty
// Subject is the original's with "Re: ".
type ReplyRequest struct {
	EmailID     string            `json:"-"`
	From        *AddressInput     `json:"from"`
	Cc          []string          `json:"cc"`
	Bcc         []string          `json:"bcc"`
	Subject     string            `json:"subject"`
	HTML        string            `json:"html"`
	Text        string            `json:"text"`
	Attachments []AttachmentInput `json:"attachments"`
}

// ForwardRequest forwards the inbound email EmailID, after the optional HTML
// and Text, with its attachments: the body of POST
// /api/emails/{emailId}/forward. It has no reply_to; an empty Subject is the
// original's with "Fwd: ".
type ForwardRequest struct {
	EmailID     string            `json:"-"`
	From        *AddressInput     `json:"from"`
	To          []string          `json:"to"`
	Cc          []string          `json:"cc"`
	Bcc         []string          `json:"bcc"`
	Subject     string            `json:"subject"`
	HTML        string            `json:"html"`
	Text        string            `json:"text"`
	Attachments []AttachmentInput `json:"attachments"`
}

// CancelRequest names the outbound email whose undelivered recipients are
// cancelled.
type CancelRequest struct {
	ID string
}

// outgoing is a checked request: what to make an outbound email of.
type outgoing struct {
	draft
	Type   outstore.Type
	Source string // the inbound email replied to or forwarded
	// InReplyTo and References thread a reply (RFC 5322 section 3.6.4).
	InReplyTo, References []string
}

// Send makes a new email from the namespace, a namespace the principal's
// organisation owns or has been shared, and stores it with its delivery job:
// the summary form once both are committed. Every invalid field is reported
// at once; then the namespace is looked up (not found when the organisation
// cannot see it); then the sending rules that need it are applied (create).
func (s *Service) Send(ctx context.Context, p tenant.Principal, req SendRequest) (outstore.Email, error) {
	var c checker
	name := strings.TrimSpace(req.Namespace)
	switch {
	case !utf8.ValidString(req.Namespace) || strings.ContainsRune(req.Namespace, 0):
		c.fail("namespace", "must be UTF-8 text without NUL characters")
	case utf8.RuneCountInString(req.Namespace) > MaxNamespace:
		c.fail("namespace", "must be at most %d characters", MaxNamespace)
	case name == "":
		c.fail("namespace", "is required")
	}
	d := c.check(input{From: req.From, ReplyTo: req.ReplyTo, To: req.To, Cc: req.Cc, Bcc: req.Bcc, Subject: req.Subject,
		HTML: req.HTML, Text: req.Text, Attachments: req.Attachments}, newRules, nil)
	if err := c.fields.Err(); err != nil {
		return outstore.Email{}, err
	}
	ns, err := s.Tenants.VisibleNamespace(ctx, p.Org.ID, name)
	if errors.Is(err, tenant.ErrNotFound) {
		return outstore.Email{}, problem.NotFoundf("namespace " + quote(req.Namespace))
	}
	if err != nil {
		return outstore.Email{}, err
	}
	return s.create(ctx, p.Org.ID, ns, outgoing{draft: d, Type: outstore.TypeNew})
}

// Reply makes a reply from the inbound email's namespace to its Reply-To or
// From, threaded to it (In-Reply-To, References), and stores it with its
// delivery job. An email the principal's organisation cannot read is not
// found; one with no address to reply to is a conflict (no_reply_address).
func (s *Service) Reply(ctx context.Context, p tenant.Principal, req ReplyRequest) (outstore.Email, error) {
	src, ns, err := s.sourceEmail(ctx, p, req.EmailID)
	if err != nil {
		return outstore.Email{}, err
	}
	derived := fromComposed(compose.ReplyRecipients(src.Email))
	if len(derived) == 0 {
		return outstore.Email{}, problem.Errorf(problem.Conflict, "no_reply_address", "the email has no Reply-To or From address to reply to")
	}
	var c checker
	d := c.check(input{From: req.From, Cc: req.Cc, Bcc: req.Bcc, Subject: req.Subject, HTML: req.HTML, Text: req.Text,
		Attachments: req.Attachments}, replyRules, derived)
	if err := c.fields.Err(); err != nil {
		return outstore.Email{}, err
	}
	if strings.TrimSpace(d.Subject) == "" {
		d.Subject = compose.ReplySubject(src.Subject)
	}
	o := outgoing{draft: d, Type: outstore.TypeReply, Source: src.ID}
	o.InReplyTo, o.References = compose.Threading(src.Headers)
	return s.create(ctx, p.Org.ID, ns, o)
}

// Forward forwards the inbound email from its namespace: the request's
// bodies, then the original's under a forwarded-message header, and the
// original's attachments before the request's (at most MaxAttachments in
// all). An email the principal's organisation cannot read is not found.
func (s *Service) Forward(ctx context.Context, p tenant.Principal, req ForwardRequest) (outstore.Email, error) {
	src, ns, err := s.sourceEmail(ctx, p, req.EmailID)
	if err != nil {
		return outstore.Email{}, err
	}
	var c checker
	d := c.check(input{From: req.From, To: req.To, Cc: req.Cc, Bcc: req.Bcc, Subject: req.Subject, HTML: req.HTML,
		Text: req.Text, Attachments: req.Attachments}, forwardRules, nil)
	carried, err := s.originalAttachments(ctx, src.ID)
	if err != nil {
		return outstore.Email{}, err
	}
	if n := len(carried) + len(req.Attachments); len(carried) > 0 && len(req.Attachments) <= MaxAttachments && n > MaxAttachments {
		c.fail("attachments", "with the %d attachments of the forwarded email makes %d: at most %d in total", len(carried), n, MaxAttachments)
	}
	for i, at := range req.Attachments {
		for _, o := range carried {
			if o.ContentID != "" && strings.EqualFold(contentID(at.ContentID), o.ContentID) {
				c.fail(fmt.Sprintf("attachments[%d].content_id", i), "names %s, the Content-ID of an attachment of the forwarded email", quote(o.ContentID))
			}
		}
	}
	if err := c.fields.Err(); err != nil {
		return outstore.Email{}, err
	}
	if strings.TrimSpace(d.Subject) == "" {
		d.Subject = compose.ForwardSubject(src.Subject)
	}
	d.HTML, d.Text = compose.ForwardBodies(d.HTML, d.Text, src.Email)
	d.Attachments = append(carried, d.Attachments...)
	return s.create(ctx, p.Org.ID, ns, outgoing{draft: d, Type: outstore.TypeForward, Source: src.ID})
}

// Cancel cancels the delivery of the organisation's outbound email to every
// recipient no attempt has reached yet (Store.Cancel), and returns the detail
// form. Another organisation's email, or a malformed id, is not found; an
// email with no such recipient left is a conflict (not_cancellable).
func (s *Service) Cancel(ctx context.Context, p tenant.Principal, req CancelRequest) (outstore.Detail, error) {
	if _, err := uuid.Parse(req.ID); err != nil {
		return outstore.Detail{}, problem.NotFoundf("outbound email")
	}
	d, err := s.Store.Cancel(ctx, p.Org.ID, strings.ToLower(req.ID))
	switch {
	case errors.Is(err, outstore.ErrNotFound):
		return outstore.Detail{}, problem.NotFoundf("outbound email")
	case errors.Is(err, outstore.ErrNotCancellable):
		return outstore.Detail{}, problem.Errorf(problem.Conflict, "not_cancellable",
			"no recipient can be cancelled: each has a final status or has had a delivery attempt")
	case err != nil:
		return outstore.Detail{}, err
	}
	return d, nil
}

// sourceEmail loads the inbound email replied to or forwarded, and its
// namespace, if the principal's organisation may read it: not found
// otherwise, as if it did not exist.
func (s *Service) sourceEmail(ctx context.Context, p tenant.Principal, id string) (inbox.StoredEmail, tenant.Namespace, error) {
	if _, err := uuid.Parse(id); err != nil {
		return inbox.StoredEmail{}, tenant.Namespace{}, problem.NotFoundf("email")
	}
	e, err := s.Searcher.ByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return inbox.StoredEmail{}, tenant.Namespace{}, problem.NotFoundf("email")
	}
	if err != nil {
		return inbox.StoredEmail{}, tenant.Namespace{}, err
	}
	ns, err := s.Tenants.NamespaceByID(ctx, e.NamespaceID)
	if errors.Is(err, tenant.ErrNotFound) || err == nil && !ns.VisibleTo(p.Org.ID) {
		return inbox.StoredEmail{}, tenant.Namespace{}, problem.NotFoundf("email")
	}
	if err != nil {
		return inbox.StoredEmail{}, tenant.Namespace{}, err
	}
	return e, ns, nil
}

// originalAttachments are the attachments of a forwarded email with their
// bytes, in message order: parts with a Content-ID stay inline, so that the
// forwarded HTML still shows them.
func (s *Service) originalAttachments(ctx context.Context, emailID string) ([]outstore.NewAttachment, error) {
	atts, err := s.Searcher.Attachments(ctx, emailID)
	if err != nil {
		return nil, err
	}
	var out []outstore.NewAttachment
	for _, at := range atts {
		data, err := s.Searcher.AttachmentData(ctx, at.ID)
		if err != nil {
			return nil, fmt.Errorf("attachment %s of forwarded email %s: %w", at.ID, emailID, err)
		}
		na := outstore.NewAttachment{Filename: at.Filename, ContentType: at.ContentType, ContentID: at.ContentID,
			Disposition: outstore.DispositionAttachment, Data: data}
		if at.ContentID != "" {
			na.Disposition = outstore.DispositionInline
		}
		if _, err := mediaType(na.ContentType); err != nil {
			na.ContentType = "application/octet-stream"
		}
		out = append(out, na)
	}
	return out, nil
}

// create applies the rules that need the namespace (the sender belongs to
// it; every recipient is in it or a verified destination), builds the message
// and checks its size, then stores it with its delivery job in one
// transaction: the email exists exactly when its delivery does.
func (s *Service) create(ctx context.Context, orgID string, ns tenant.Namespace, o outgoing) (outstore.Email, error) {
	from := outstore.Address{Email: DefaultSenderLocal + "@" + ns.Name + "." + s.Routes.Domain()}
	if o.From != nil {
		if addr, err := s.Routes.Parse(o.From.Email); err != nil || addr.Namespace != ns.Name {
			return outstore.Email{}, &problem.Error{Kind: problem.Forbidden, Code: "sender_not_in_namespace",
				Message: fmt.Sprintf("the sender must be an address of namespace %s (<name>@%s.%s)", ns.Name, ns.Name, s.Routes.Domain()),
				Fields:  []problem.FieldError{{Field: "from.email", Detail: "is not an address of namespace " + ns.Name}}}
		}
		from = *o.From
	}
	rcpts, err := s.recipients(ctx, orgID, ns, o.draft)
	if err != nil {
		return outstore.Email{}, err
	}

	id := outstore.NewID()
	comp := compose.Message{MessageID: id + "@" + s.Routes.Domain(), Date: s.Store.Timestamp(), From: composed(from),
		To: composedList(o.To), Cc: composedList(o.Cc), Subject: o.Subject, InReplyTo: o.InReplyTo,
		References: o.References, HTML: o.HTML, Text: o.Text}
	if o.ReplyTo != nil {
		replyTo := composed(*o.ReplyTo)
		comp.ReplyTo = &replyTo
	}
	for _, a := range o.Attachments {
		comp.Attachments = append(comp.Attachments, compose.Attachment{Filename: a.Filename, ContentType: a.ContentType,
			ContentID: a.ContentID, Inline: a.Disposition == outstore.DispositionInline, Data: a.Data})
	}
	source, err := compose.Build(comp)
	if err != nil {
		return outstore.Email{}, fmt.Errorf("build outbound message: %w", err)
	}
	if len(source) > MaxMessageBytes {
		return outstore.Email{}, problem.Errorf(problem.TooLarge, "message_too_large",
			"the encoded message is %d bytes: at most %d (5 MiB)", len(source), MaxMessageBytes)
	}
	ne := outstore.NewEmail{ID: id, OrgID: orgID, NamespaceID: ns.ID, Type: o.Type, From: from, ReplyTo: o.ReplyTo,
		Subject: o.Subject, HTML: o.HTML, Text: o.Text, MessageID: "<" + comp.MessageID + ">",
		SourceEmailID: o.Source, Recipients: rcpts, Attachments: o.Attachments, Source: source}
	var e outstore.Email
	err = s.DB.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if e, err = s.Store.Create(ctx, tx, ne); err != nil {
			return err
		}
		_, err = EnqueueDelivery(ctx, s.Jobs, tx, e.ID)
		return err
	})
	return e, err
}

// composed is an address as compose writes it; composedList a list of them.
func composed(a outstore.Address) compose.Address {
	return compose.Address{Email: a.Email, Name: a.Name}
}

func composedList(as []outstore.Address) []compose.Address {
	var out []compose.Address
	for _, a := range as {
		out = append(out, composed(a))
	}
	return out
}

// fromComposed are compose's addresses as outbound's.
func fromComposed(as []compose.Address) []outstore.Address {
	var out []outstore.Address
	for _, a := range as {
		out = append(out, outstore.Address{Email: a.Email, Name: a.Name})
	}
	return out
}

// recipients classifies the draft's recipients (the seed's sending rule 1):
// an address of the sending namespace is internal, delivered into its inbox;
// any other must be a verified destination of the organisation, else the
// request is refused (recipient_not_verified), naming each such field. An
// external address the organisation has suppressed (a hard bounce, a
// complaint) is kept, to be recorded suppressed without an attempt.
func (s *Service) recipients(ctx context.Context, orgID string, ns tenant.Namespace, d draft) ([]outstore.NewRecipient, error) {
	var out []outstore.NewRecipient
	var refused []problem.FieldError
	derived := d.Derived
	for _, l := range []struct {
		t     outstore.RecipientType
		field string
		as    []outstore.Address
	}{{outstore.To, "to", d.To}, {outstore.Cc, "cc", d.Cc}, {outstore.Bcc, "bcc", d.Bcc}} {
		for i, addr := range l.as {
			field := fmt.Sprintf("%s[%d]", l.field, i-derived)
			if l.t == outstore.To && i < derived {
				field = "to" // the reply's recipient, from the email replied to
			}
			routed, err := s.Routes.Parse(addr.Email)
			internal := err == nil && routed.Namespace == ns.Name
			var suppressed string
			if !internal {
				ok, err := s.Destinations.Verified(ctx, orgID, addr.Email)
				if err != nil {
					return nil, err
				}
				if !ok {
					refused = append(refused, problem.FieldError{Field: field,
						Detail: fmt.Sprintf("names %s, which is neither an address of namespace %s nor a verified destination of the organisation", quote(addr.Email), ns.Name)})
				}
				if suppressed, err = s.Store.SuppressedReason(ctx, orgID, addr.Email); err != nil {
					return nil, err
				}
			}
			out = append(out, outstore.NewRecipient{Type: l.t, Email: addr.Email, Name: addr.Name, Internal: internal, Suppressed: suppressed})
		}
		if l.t == outstore.To {
			derived = 0
		}
	}
	if len(refused) > 0 {
		return nil, &problem.Error{Kind: problem.Forbidden, Code: "recipient_not_verified",
			Message: fmt.Sprintf("%d recipient(s) are not verified destinations: a message goes to addresses of namespace %s or to verified destinations", len(refused), ns.Name),
			Fields:  refused}
	}
	return out, nil
}

// AddDestinationRequest asks for an external address as a destination of
// the organisation: the body of POST /api/destinations. Email nil is absent
// ("is required"); it must be a bare address.
type AddDestinationRequest struct {
	Email *string `json:"email"`
}

// AddedDestination is the answer of AddDestination: the destination, and
// whether a verification mail was queued for it (false when it is verified
// already, and nothing is sent).
type AddedDestination struct {
	Destination destinations.Destination
	Queued      bool
}

// AddDestination asks for the address as a destination of the principal's
// organisation (destinations.Store.Request): a new or pending one is stored
// pending and its verification mail queued. Refused as Forbidden
// (destination_limit_reached) past destinations.MaxDestinations, and as
// TooMany (verification_rate_limited, with RetryAfter) past
// destinations.MaxVerificationMailsPerHour.
func (s *Service) AddDestination(ctx context.Context, p tenant.Principal, req AddDestinationRequest) (AddedDestination, error) {
	var c checker
	var addr outstore.Address
	if req.Email == nil {
		c.fail("email", "is required")
	} else if a, ok := c.mailbox("email", *req.Email); ok {
		if a.Name != "" || strings.Contains(*req.Email, "<") {
			c.fail("email", "must be a bare address, without a display name")
		}
		addr = a
	}
	if err := c.fields.Err(); err != nil {
		return AddedDestination{}, err
	}
	d, queued, err := s.Destinations.Request(ctx, s.Jobs, p.Org.ID, addr.Email)
	var rate *destinations.RateError
	switch {
	case errors.Is(err, destinations.ErrLimit):
		return AddedDestination{}, problem.Errorf(problem.Forbidden, "destination_limit_reached",
			"the organisation has %d destinations, the most it may have; remove one first", destinations.MaxDestinations)
	case errors.As(err, &rate):
		pe := problem.Errorf(problem.TooMany, "verification_rate_limited",
			"the organisation has sent %d verification mails in the last hour, the most it may", destinations.MaxVerificationMailsPerHour)
		pe.RetryAfter = rate.Retry
		return AddedDestination{}, pe
	case err != nil:
		return AddedDestination{}, err
	}
	return AddedDestination{Destination: d, Queued: queued}, nil
}

// RemoveDestinationRequest names the destination to remove.
type RemoveDestinationRequest struct {
	ID string
}

// RemoveDestination removes a destination of the principal's organisation:
// later sends to its address are refused again. Another organisation's, or
// a malformed id, is not found.
func (s *Service) RemoveDestination(ctx context.Context, p tenant.Principal, req RemoveDestinationRequest) error {
	if _, err := uuid.Parse(req.ID); err != nil {
		return problem.NotFoundf("destination")
	}
	err := s.Destinations.Remove(ctx, p.Org.ID, req.ID)
	if errors.Is(err, destinations.ErrNotFound) {
		return problem.NotFoundf("destination")
	}
	return err
}

// VerifyDestinationRequest is a followed verification link: the
// destination's id and the link's expires and signature.
type VerifyDestinationRequest struct {
	ID, Expires, Signature string
}

// VerifyDestination makes the destination of a valid verification link
// verified and returns it. It takes no principal: whoever follows the link
// sent to the address is the one it asks, and the signature is the
// credential. A tampered or expired link, or one of a removed destination,
// is not found (link_invalid).
func (s *Service) VerifyDestination(ctx context.Context, req VerifyDestinationRequest) (destinations.Destination, error) {
	invalid := problem.Errorf(problem.NotFound, "link_invalid",
		"this verification link is invalid or has expired; ask for the destination again to receive a new one")
	if _, err := uuid.Parse(req.ID); err != nil || !s.Verifier.CheckLink(req.ID, req.Expires, req.Signature) {
		return destinations.Destination{}, invalid
	}
	d, err := s.Destinations.Verify(ctx, req.ID)
	if errors.Is(err, destinations.ErrNotFound) {
		return destinations.Destination{}, invalid
	}
	return d, err
}

// RemoveSuppressionRequest names the suppressed address to remove.
type RemoveSuppressionRequest struct {
	Address string
}

// RemoveSuppression removes the address from the principal's organisation's
// suppressions: later sends go to it again. An address the organisation has
// not suppressed is not found.
func (s *Service) RemoveSuppression(ctx context.Context, p tenant.Principal, req RemoveSuppressionRequest) error {
	if req.Address == "" || len(req.Address) > routing.MaxAddressLength {
		return problem.NotFoundf("suppression")
	}
	err := s.Store.Unsuppress(ctx, p.Org.ID, req.Address)
	if errors.Is(err, outstore.ErrNotFound) {
		return problem.NotFoundf("suppression")
	}
	return err
}
