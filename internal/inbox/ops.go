package inbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// The operations a user takes on received mail: clear an inbox, delete an
// email, share one. Each takes the principal acting and a typed request and
// returns a typed result or a *problem.Error; the HTTP API and the dashboard
// call them and only translate. A namespace another organisation shares with
// the principal's may be read, not changed (namespace_read_only).

// ClearRequest names the inbox (namespace) to empty.
type ClearRequest struct {
	Namespace string
}

// Cleared is an inbox emptied: its namespace, and how many emails went.
type Cleared struct {
	Namespace tenant.Namespace
	Deleted   int
}

// ClearInbox deletes every email of a namespace the principal's organisation
// owns, with their attachments and raw sources.
func (a *API) ClearInbox(ctx context.Context, p tenant.Principal, req ClearRequest) (Cleared, error) {
	ns, err := a.Tenants.OwnNamespace(ctx, p, req.Namespace)
	if err != nil {
		return Cleared{}, err
	}
	n, err := a.Searcher.ClearNamespace(ctx, ns.ID)
	if err != nil {
		return Cleared{}, err
	}
	return Cleared{Namespace: ns, Deleted: n}, nil
}

// DeleteRequest names the email to delete.
type DeleteRequest struct {
	EmailID string
}

// Deleted is an email deleted, and the namespace it was in.
type Deleted struct {
	EmailID   string
	Namespace tenant.Namespace
}

// DeleteEmail deletes one email of a namespace the principal's organisation
// owns, with its attachments and raw source. An email it cannot see, or one
// gone already, is not found.
func (a *API) DeleteEmail(ctx context.Context, p tenant.Principal, req DeleteRequest) (Deleted, error) {
	e, ns, err := a.visibleEmailFor(ctx, p, req.EmailID)
	if err != nil {
		return Deleted{}, err
	}
	if ns.OrgID != p.Org.ID {
		return Deleted{}, tenant.ReadOnly(ns)
	}
	err = a.Searcher.DeleteEmail(ctx, e.ID)
	if errors.Is(err, store.ErrNotFound) {
		return Deleted{}, problem.NotFoundf("email")
	}
	if err != nil {
		return Deleted{}, err
	}
	return Deleted{EmailID: e.ID, Namespace: ns}, nil
}

// ShareRequest asks for a link to an email that any API key can read.
type ShareRequest struct {
	EmailID string
	// ExpiresIn is how long the link lives, in seconds: a whole number from
	// 1 to MaxShareTTL's; nil is DefaultShareTTL. The link never outlives
	// the email either way.
	ExpiresIn *float64
}

// Share is a share link: the encodedEmailId, the URL that reads the email
// with it, and when it stops working.
type Share struct {
	EmailID        string
	EncodedEmailID string
	URL            string
	ExpiresAt      time.Time
}

// ShareEmail makes a share link to an email the principal's organisation may
// read (one shared with it too). Nothing is stored: the link is signed, and
// deleting the email ends it.
func (a *API) ShareEmail(ctx context.Context, p tenant.Principal, req ShareRequest) (Share, error) {
	ttl := DefaultShareTTL
	if req.ExpiresIn != nil {
		v := *req.ExpiresIn
		if v != math.Trunc(v) || v < 1 || v > MaxShareTTL.Seconds() {
			return Share{}, problem.Field("expires_in", fmt.Sprintf("must be a whole number of seconds between 1 and %d", int64(MaxShareTTL.Seconds())))
		}
		ttl = time.Duration(v) * time.Second
	}
	e, _, err := a.visibleEmailFor(ctx, p, req.EmailID)
	if err != nil {
		return Share{}, err
	}
	exp := a.now().Add(ttl).Truncate(time.Second)
	if end := time.UnixMilli(e.ExpiresMs).Truncate(time.Second); exp.After(end) {
		exp = end
	}
	tok, err := a.ShareToken(e.ID, exp)
	if err != nil {
		return Share{}, err
	}
	return Share{EmailID: e.ID, EncodedEmailID: tok, URL: a.PublicURL() + "/api/share/email/" + url.PathEscape(tok), ExpiresAt: exp}, nil
}

// visibleEmailFor loads an email the principal's organisation may read, and
// its namespace: any other is not found, never revealed.
func (a *API) visibleEmailFor(ctx context.Context, p tenant.Principal, id string) (StoredEmail, tenant.Namespace, error) {
	notFound := problem.NotFoundf("email")
	if _, err := uuid.Parse(id); err != nil || p.Org.ID == "" {
		return StoredEmail{}, tenant.Namespace{}, notFound
	}
	e, err := a.Searcher.ByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return StoredEmail{}, tenant.Namespace{}, notFound
	}
	if err != nil {
		return StoredEmail{}, tenant.Namespace{}, err
	}
	ns, err := a.Tenants.NamespaceByID(ctx, e.NamespaceID)
	if err != nil || !ns.VisibleTo(p.Org.ID) {
		return StoredEmail{}, tenant.Namespace{}, notFound
	}
	return e, ns, nil
}
