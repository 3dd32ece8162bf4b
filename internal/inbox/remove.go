package inbox

import (
	"context"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Deleting emails on request, beyond the seed: a test that wants to start from
// an empty inbox, and the dashboard's delete and clear buttons. Both go through
// deleteEmails, as the reaper and the quota do, so blobs, raw sources and the
// namespace's count go with the emails; the search copies in memory notice the
// changed count and load again (package index).

// DeleteEmail deletes one email; ErrNotFound when there is none of that id.
func (s *Searcher) DeleteEmail(ctx context.Context, id string) error {
	n, err := s.DeleteEmails(ctx, "", []string{id})
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}

// DeleteEmails deletes the emails of those ids that exist (of the namespace
// only, when namespaceID is not ""), as the API's DELETE does, and returns how
// many it deleted: IMAP's EXPUNGE and POP3's DELE are this call too. An id
// already gone (reaped, deleted by another client) is no error.
func (s *Searcher) DeleteEmails(ctx context.Context, namespaceID string, ids []string) (int, error) {
	total := 0
	err := eachChunk(ids, func(part []any) error {
		return s.db.InTx(ctx, func(tx *store.Tx) error {
			q, args := "SELECT seq, id FROM emails WHERE id IN "+store.Placeholders(len(part)), part
			if namespaceID != "" {
				q, args = q+" AND namespace_id = ?", append(part, namespaceID)
			}
			seqs, found, err := selectEmails(ctx, tx, q, args...)
			if err != nil {
				return fmt.Errorf("find emails to delete: %w", err)
			}
			total += len(found)
			return deleteEmails(ctx, tx, seqs, found)
		})
	})
	return total, err
}

// ClearNamespace deletes every email of the namespace, in batches of one
// transaction each so ingest is never stalled for long, and returns how many.
func (s *Searcher) ClearNamespace(ctx context.Context, namespaceID string) (int, error) {
	total := 0
	for {
		var n int
		err := s.db.InTx(ctx, func(tx *store.Tx) error {
			seqs, ids, err := selectEmails(ctx, tx, "SELECT seq, id FROM emails WHERE namespace_id = ? LIMIT ?", namespaceID, reapBatch)
			if err != nil {
				return err
			}
			n = len(ids)
			return deleteEmails(ctx, tx, seqs, ids)
		})
		if err != nil {
			return total, fmt.Errorf("clear namespace: %w", err)
		}
		total += n
		if n < reapBatch {
			return total, nil
		}
	}
}

// Count returns the namespace's unexpired emails (read from its counts, not
// counted row by row).
func (s *Searcher) Count(ctx context.Context, namespaceID string) (int, error) {
	res, err := s.Search(ctx, Query{NamespaceID: namespaceID})
	return res.Total, err
}

// DeleteEmailHandler answers DELETE /api/emails/{emailId} (DeleteEmail): 204
// once the email, its attachments and raw source are gone.
func (a *API) DeleteEmailHandler(w http.ResponseWriter, r *http.Request) error {
	_, err := a.DeleteEmail(r.Context(), tenant.PrincipalFrom(r.Context()), DeleteRequest{EmailID: chi.URLParam(r, "emailId")})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// ClearInboxHandler answers DELETE /api/emails/{namespace}/inbox (ClearInbox):
// 204 once every email of the namespace is gone.
func (a *API) ClearInboxHandler(w http.ResponseWriter, r *http.Request) error {
	_, err := a.ClearInbox(r.Context(), tenant.PrincipalFrom(r.Context()), ClearRequest{Namespace: chi.URLParam(r, "namespace")})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// AttachmentLinks returns the email's attachments with signed download links,
// for the dashboard's email page (which checked the email is visible).
func (a *API) AttachmentLinks(ctx context.Context, emailID string) ([]Attachment, error) {
	atts, err := a.Searcher.Attachments(ctx, emailID)
	if err != nil {
		return nil, err
	}
	out := make([]Attachment, 0, len(atts))
	for _, att := range atts {
		out = append(out, a.attachmentView(att))
	}
	return out, nil
}
