package inbox

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Share links (contract section 5): an encodedEmailId names one email and carries
// its own expiry, signed with the server key, so nothing is stored to create or
// revoke one; deleting the email ends every link to it.
const (
	sharePurpose = "share-email"
	// DefaultShareTTL is how long a share link lives when expires_in is not given.
	DefaultShareTTL = 7 * 24 * time.Hour
	// MaxShareTTL bounds expires_in; a link never outlives its email either way.
	MaxShareTTL = 365 * 24 * time.Hour
)

// shareToken layout, base64url without padding (59 characters): the email id's
// 16 bytes, the expiry as 8 bytes of big-endian Unix seconds, and the 20-byte
// HMAC-SHA256 (secret.Key.Sign) over both.
const (
	shareIDLen    = 16
	shareExpLen   = 8
	shareMACLen   = 20
	shareTokenLen = shareIDLen + shareExpLen + shareMACLen
)

// ShareToken returns the encodedEmailId of emailID, valid until expires.
func (a *API) ShareToken(emailID string, expires time.Time) (string, error) {
	id, err := uuid.Parse(emailID)
	if err != nil {
		return "", fmt.Errorf("share token: %w", err)
	}
	mac, err := base64.RawURLEncoding.DecodeString(a.Key.Sign(sharePurpose, id.String(), expires))
	if err != nil || len(mac) != shareMACLen {
		return "", errors.New("share token: unexpected signature length")
	}
	b := make([]byte, 0, shareTokenLen)
	b = append(b, id[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(expires.Unix()))
	b = append(b, mac...)
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// parseShareToken returns the email id an unexpired, untampered token names.
func (a *API) parseShareToken(tok string) (string, bool) {
	if base64.RawURLEncoding.DecodedLen(len(tok)) != shareTokenLen {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) != shareTokenLen {
		return "", false
	}
	id, err := uuid.FromBytes(b[:shareIDLen])
	if err != nil {
		return "", false
	}
	exp := binary.BigEndian.Uint64(b[shareIDLen : shareIDLen+shareExpLen])
	if exp >= 1<<62 {
		return "", false
	}
	sig := base64.RawURLEncoding.EncodeToString(b[shareIDLen+shareExpLen:])
	if !a.Key.Verify(sharePurpose, id.String(), time.Unix(int64(exp), 0), sig, a.now()) {
		return "", false
	}
	return id.String(), true
}

type shareView struct {
	EncodedEmailID string `json:"encoded_email_id"`
	URL            string `json:"url"`
	ExpiresAt      string `json:"expires_at"`
}

// CreateShareHandler answers POST /api/emails/{emailId}/share (ShareEmail): 201
// with a link to the email that any API key can read. expires_in (seconds,
// optional) defaults to DefaultShareTTL; the link never outlives the email.
func (a *API) CreateShareHandler(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		ExpiresIn *float64 `json:"expires_in"`
	}
	if err := httpx.DecodeJSON(r, &body); err != nil {
		return err
	}
	sh, err := a.ShareEmail(r.Context(), tenant.PrincipalFrom(r.Context()), ShareRequest{EmailID: chi.URLParam(r, "emailId"), ExpiresIn: body.ExpiresIn})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, map[string]any{"data": shareView{
		EncodedEmailID: sh.EncodedEmailID, URL: sh.URL, ExpiresAt: httpx.Time(sh.ExpiresAt)}})
	return nil
}

// sharedEmail resolves an encodedEmailId to its email: a tampered or expired
// token, or a deleted or expired email, is 404. Any organisation may read it.
func (a *API) sharedEmail(r *http.Request) (StoredEmail, error) {
	id, ok := a.parseShareToken(chi.URLParam(r, "encodedEmailId"))
	if !ok {
		return StoredEmail{}, httpx.Errorf(http.StatusNotFound, "share_not_found", "this share link is invalid or has expired")
	}
	e, err := a.Searcher.ByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return StoredEmail{}, httpx.Errorf(http.StatusNotFound, "share_not_found", "the shared email no longer exists")
	}
	return e, err
}

// GetSharedEmailHandler answers GET /api/share/email/{encodedEmailId}.
func (a *API) GetSharedEmailHandler(w http.ResponseWriter, r *http.Request) error {
	e, err := a.sharedEmail(r)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": e.Email})
	return nil
}

// GetSharedAttachmentHandler answers
// GET /api/share/email/{encodedEmailId}/attachment/{attachmentId}: an attachment
// of the shared email, with its signed download link.
func (a *API) GetSharedAttachmentHandler(w http.ResponseWriter, r *http.Request) error {
	e, err := a.sharedEmail(r)
	if err != nil {
		return err
	}
	attID := chi.URLParam(r, "attachmentId")
	if _, err := uuid.Parse(attID); err != nil {
		return httpx.NotFound("attachment")
	}
	att, err := a.Searcher.Attachment(r.Context(), attID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && att.EmailID != e.ID) {
		return httpx.NotFound("attachment")
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": a.attachmentView(att)})
	return nil
}
