package inbox

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/store"
)

// rawPurpose is the signing purpose of raw-source download links; a link signed
// for an attachment never verifies as one for a raw source, and the other way.
const rawPurpose = "raw-source-download"

// rawSourceView is the body of GET .../deliverability-report/raw-source (contract
// section 5). ExpiresAt is when DownloadURL stops working.
type rawSourceView struct {
	DownloadURL string `json:"download_url"`
	ExpiresAt   string `json:"expires_at"`
	Size        int64  `json:"size"`
	ContentType string `json:"content_type"`
}

// signedLink returns a download link to path for id under purpose, valid for
// DownloadLinkTTL and never past expiresMs (the email's expiry), and its expiry.
func (a *API) signedLink(purpose, path, id string, expiresMs int64) (string, time.Time) {
	link := a.now().Add(DownloadLinkTTL).Truncate(time.Second)
	if end := time.UnixMilli(expiresMs).Truncate(time.Second); link.After(end) {
		link = end
	}
	v := url.Values{}
	v.Set("expires", strconv.FormatInt(link.Unix(), 10))
	v.Set("signature", a.Key.Sign(purpose, id, link))
	return a.PublicURL() + path + url.PathEscape(id) + "?" + v.Encode(), link
}

// RawLink is the signed download link of an email's raw source, as the
// raw-source endpoint answers it (the dashboard's download button).
func (a *API) RawLink(e StoredEmail) string {
	link, _ := a.signedLink(rawPurpose, "/download/raw/", e.ID, e.ExpiresMs)
	return link
}

// verifyLink checks a signed link's expires and signature query parameters.
func (a *API) verifyLink(r *http.Request, purpose, id string) error {
	exp, err := strconv.ParseInt(r.URL.Query().Get("expires"), 10, 64)
	if err != nil || !a.Key.Verify(purpose, id, time.Unix(exp, 0), r.URL.Query().Get("signature"), a.now()) {
		return httpx.Errorf(http.StatusNotFound, "link_invalid", "this download link is invalid or has expired; request a new one from the API")
	}
	return nil
}

// RawSourceHandler answers GET /api/emails/{namespace}/{emailId}/deliverability-report/raw-source.
// received_timestamp must be given (400) and equal the email's (404, as for an
// email that does not exist); an email whose namespace did not capture raw email
// is 409 raw_not_captured.
func (a *API) RawSourceHandler(w http.ResponseWriter, r *http.Request) error {
	ns, err := a.Tenants.NamespaceParam(r)
	if err != nil {
		return err
	}
	qp := httpx.NewQuery(r)
	ts := qp.OptInt("received_timestamp", 0, 1<<40)
	if err := qp.Err(); err != nil {
		return err
	}
	if ts == nil {
		return httpx.Invalid("received_timestamp", "is required")
	}
	e, _, err := a.visibleEmail(r, chi.URLParam(r, "emailId"))
	if err != nil {
		return err
	}
	if e.NamespaceID != ns.ID || e.ReceivedTimestamp != *ts {
		return httpx.NotFound("email")
	}
	size, err := a.Searcher.RawSize(r.Context(), e.ID)
	if errors.Is(err, ErrRawNotCaptured) {
		return httpx.Errorf(http.StatusConflict, "raw_not_captured",
			"the raw source of this email was not kept: namespace %s had capture_raw_email off when it arrived", ns.Name)
	}
	if err != nil {
		return err
	}
	link, exp := a.signedLink(rawPurpose, "/download/raw/", e.ID, e.ExpiresMs)
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": rawSourceView{
		DownloadURL: link, ExpiresAt: httpx.Time(exp), Size: size, ContentType: "message/rfc822"}})
	return nil
}

// DownloadRawHandler serves the exact bytes received through a signed link (no API
// key): message/rfc822, as the download <id>.eml.
func (a *API) DownloadRawHandler(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if err := a.verifyLink(r, rawPurpose, id); err != nil {
		return err
	}
	if _, err := uuid.Parse(id); err != nil {
		return httpx.NotFound("email")
	}
	if _, err := a.Searcher.ByID(r.Context(), id); errors.Is(err, store.ErrNotFound) {
		return httpx.NotFound("email")
	} else if err != nil {
		return err
	}
	raw, err := a.Searcher.RawMessage(r.Context(), id)
	if errors.Is(err, ErrRawNotCaptured) {
		return httpx.NotFound("raw source")
	}
	if err != nil {
		return err
	}
	ServeDownload(w, "message/rfc822", id+".eml", raw)
	return nil
}
