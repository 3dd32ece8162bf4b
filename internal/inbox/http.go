package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/notify/notifyhttp"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// DownloadLinkTTL is how long a signed download link is valid (never past the
// email's own expiry).
const DownloadLinkTTL = time.Hour

const attachmentPurpose = "attachment-download"

// API serves the inbound endpoints of the seed.
type API struct {
	Tenants   *tenant.Service
	Searcher  *Searcher
	Notifier  notify.Notifier
	Key       *secret.Key
	PublicURL func() string // base URL of download links, no trailing slash
	WaitHold  time.Duration
	// Degraded, when set, is asked every notify.RecheckInterval while a search is held;
	// when it reports true (cross-replica wake-ups may be lost) the search is
	// re-run without waiting for a wake-up.
	Degraded func() bool
	Now      func() time.Time
}

func (a *API) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// MaxTimestamp is the largest from_timestamp and to_timestamp, in seconds
// (2^40, the year 36812).
const MaxTimestamp = 1 << 40

type searchOptions struct {
	Limit            int64       `json:"limit"`
	Offset           int64       `json:"offset"`
	FromTimestamp    json.Number `json:"from_timestamp,omitempty"`
	ToTimestamp      json.Number `json:"to_timestamp,omitempty"`
	ToAddrPrefix     *string     `json:"to_addr_prefix,omitempty"`
	FromAddrIncludes *string     `json:"from_addr_includes,omitempty"`
	SubjectIncludes  *string     `json:"subject_includes,omitempty"`
	Wait             *bool       `json:"wait,omitempty"`
}

type searchResponse struct {
	TotalCount int           `json:"total_count"`
	Options    searchOptions `json:"options"`
	Data       []Email       `json:"data"`
}

// ParseSearch reads and validates the inbox search query string. Every bad
// parameter is reported at once.
func ParseSearch(r *http.Request) (Query, searchOptions, bool, error) {
	qp := httpx.NewQuery(r)
	var q Query
	var opt searchOptions
	opt.Limit = qp.Int("limit", DefaultLimit, 1, MaxLimit)
	opt.Offset = qp.Int("offset", 0, 0, -1)
	q.Limit, q.Offset = int(opt.Limit), int(opt.Offset)
	if from, _ := qp.OptSeconds("from_timestamp", MaxTimestamp); from != nil {
		q.FromTimestamp, opt.FromTimestamp = from, httpx.Seconds(*from)
	}
	if to, whole := qp.OptSeconds("to_timestamp", MaxTimestamp); to != nil {
		opt.ToTimestamp = httpx.Seconds(*to)
		if whole {
			// A whole second includes all of it, so the received_timestamp of
			// an email (whole seconds) finds that email.
			*to += 999
		}
		q.ToTimestamp = to
	}
	str := func(name string, dst *string, echo **string) {
		if v, ok := qp.String(name, MaxFilterRunes); ok && v != "" {
			*dst = v
			*echo = &v
		}
	}
	str("to_addr_prefix", &q.ToAddrPrefix, &opt.ToAddrPrefix)
	str("from_addr_includes", &q.FromAddrIncludes, &opt.FromAddrIncludes)
	str("subject_includes", &q.SubjectIncludes, &opt.SubjectIncludes)
	wait, present := qp.Bool("wait")
	if present {
		opt.Wait = &wait
	}
	return q, opt, wait, qp.Err()
}

// SearchInboxHandler answers GET /api/emails/{namespace}/inbox. With wait=true and
// no match, the request is held until a matching email is committed (answered at
// once) or the hold ends (307 to the identical URL; the client repeats).
func (a *API) SearchInboxHandler(w http.ResponseWriter, r *http.Request) error {
	ns, err := a.Tenants.NamespaceParam(r)
	if err != nil {
		return err
	}
	q, opt, wait, err := ParseSearch(r)
	if err != nil {
		return err
	}
	q.NamespaceID = ns.ID
	search := func(ctx context.Context) (searchResponse, bool, error) {
		res, err := a.Searcher.Search(ctx, q)
		return searchResponse{TotalCount: res.Total, Options: opt, Data: res.Emails}, res.Total > 0, err
	}
	return notifyhttp.Answer(w, r, wait, a.Notifier, q.want(), notify.Policy{Hold: a.WaitHold, Degraded: a.Degraded}, search)
}

// LatestEmailHandler answers GET /api/emails/{namespace}/latest; 404 when empty.
func (a *API) LatestEmailHandler(w http.ResponseWriter, r *http.Request) error {
	ns, err := a.Tenants.NamespaceParam(r)
	if err != nil {
		return err
	}
	e, err := a.Searcher.Latest(r.Context(), ns.ID)
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Errorf(http.StatusNotFound, "no_emails", "namespace %s has no emails", ns.Name)
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": e})
	return nil
}

// visibleEmail loads an email the request's organisation may read, or 404
// (visibleEmailFor).
func (a *API) visibleEmail(r *http.Request, id string) (StoredEmail, tenant.Namespace, error) {
	return a.visibleEmailFor(r.Context(), tenant.PrincipalFrom(r.Context()), id)
}

// GetEmailHandler answers GET /api/emails/{emailId}.
func (a *API) GetEmailHandler(w http.ResponseWriter, r *http.Request) error {
	e, _, err := a.visibleEmail(r, chi.URLParam(r, "emailId"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": e.Email})
	return nil
}

// attachmentView is the seed's Attachment with a signed download link valid for
// DownloadLinkTTL and never past the email's expiry.
func (a *API) attachmentView(att StoredAttachment) Attachment {
	link, _ := a.signedLink(attachmentPurpose, "/download/attachments/", att.ID, att.ExpiresMs)
	exp := httpx.Time(time.UnixMilli(att.ExpiresMs))
	return Attachment{
		ID: att.ID, Filename: att.Filename, ContentType: att.ContentType, Size: att.Size, ContentID: att.ContentID,
		ExpiresAt: &exp, DownloadURL: link,
	}
}

// ListAttachmentsHandler answers GET /api/emails/{emailId}/attachments.
func (a *API) ListAttachmentsHandler(w http.ResponseWriter, r *http.Request) error {
	e, _, err := a.visibleEmail(r, chi.URLParam(r, "emailId"))
	if err != nil {
		return err
	}
	atts, err := a.Searcher.Attachments(r.Context(), e.ID)
	if err != nil {
		return err
	}
	data := make([]Attachment, 0, len(atts))
	for _, att := range atts {
		data = append(data, a.attachmentView(att))
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": data})
	return nil
}

// GetAttachmentHandler answers GET /api/attachments/{id}.
func (a *API) GetAttachmentHandler(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if _, err := uuid.Parse(id); err != nil {
		return httpx.NotFound("attachment")
	}
	att, err := a.Searcher.Attachment(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return httpx.NotFound("attachment")
	}
	if err != nil {
		return err
	}
	ns, err := a.Tenants.NamespaceByID(r.Context(), att.NamespaceID)
	if err != nil || !ns.VisibleTo(tenant.OrgFrom(r.Context()).ID) {
		return httpx.NotFound("attachment")
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": a.attachmentView(att)})
	return nil
}

// DownloadAttachmentHandler serves an attachment's bytes through a signed link. A
// tampered or expired link is 404, like a missing attachment. The bytes are served
// as a download that browsers will not render or sniff.
func (a *API) DownloadAttachmentHandler(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if err := a.verifyLink(r, attachmentPurpose, id); err != nil {
		return err
	}
	att, err := a.Searcher.Attachment(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return httpx.NotFound("attachment")
	}
	if err != nil {
		return err
	}
	data, err := a.Searcher.AttachmentData(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return httpx.NotFound("attachment")
	}
	if err != nil {
		return err
	}
	ServeDownload(w, att.ContentType, att.Filename, data)
	return nil
}

// ServeDownload writes bytes as an attachment download with the contract's
// protective headers: the stored content type, never sniffed, never rendered as a
// page (Content-Security-Policy: sandbox), offered under filename.
func ServeDownload(w http.ResponseWriter, contentType, filename string, data []byte) {
	if _, _, err := mime.ParseMediaType(contentType); err != nil || contentType == "" {
		contentType = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Set("Content-Disposition", contentDisposition(filename))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	h.Set("Cache-Control", "private, no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(data)
}

// contentDisposition is `attachment; filename="name"` (RFC 6266). A name that is
// not printable ASCII is also given as filename* in UTF-8 (RFC 8187), after an
// ASCII stand-in for clients that read only filename.
func contentDisposition(name string) string {
	ascii := true
	for _, r := range name {
		if r < 0x20 || r > 0x7e {
			ascii = false
			break
		}
	}
	quote := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	if ascii {
		return `attachment; filename="` + quote.Replace(name) + `"`
	}
	fallback := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '_'
		}
		return r
	}, name)
	ext := mime.FormatMediaType("attachment", map[string]string{"filename": name})
	if ext == "" {
		return `attachment; filename="` + quote.Replace(fallback) + `"`
	}
	return `attachment; filename="` + quote.Replace(fallback) + `"; ` + strings.TrimPrefix(ext, "attachment; ")
}
