package inbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Stored is an email as an ingest hook learns of it.
type Stored struct {
	ID          string
	NamespaceID string
	// RawCaptured is whether its raw source is kept (capture_raw_email).
	RawCaptured bool
	// Namespace is the namespace it was stored in, and Email the email as
	// stored (for the hook's eyes only: do not change it).
	Namespace tenant.Namespace
	Email     *Email
}

// IngestHook runs in the transaction that stores each received email, so
// that background work about it (spam scoring) is enqueued atomically with
// it: it exists if and only if the email was stored. An error rolls the
// batch back, as any failure of the insert does.
type IngestHook func(ctx context.Context, tx *store.Tx, e Stored) error

// OnIngest adds a hook run for every email stored from now on (a test's
// probe; the service gives its hooks to NewIngester). Call it before the
// first Deliver.
func (in *Ingester) OnIngest(h IngestHook) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.hooks = append(in.hooks, h)
}

// runHooks runs the ingest hooks for one stored row.
func (in *Ingester) runHooks(ctx context.Context, tx *store.Tx, r *row) error {
	for _, h := range in.hooks {
		if err := h(ctx, tx, Stored{ID: r.email.ID, NamespaceID: r.namespaceID, RawCaptured: r.keepRaw,
			Namespace: r.namespace, Email: &r.email}); err != nil {
			return err
		}
	}
	return nil
}

// Envelope returns what the SMTP session recorded with an email (client IP,
// HELO name, envelope sender) and when it was received, or
// store.ErrNotFound. Like RawMessage it does not check expiry or access.
func (s *Searcher) Envelope(ctx context.Context, emailID string) (Envelope, time.Time, error) {
	var env Envelope
	var receivedMs int64
	err := s.db.QueryRow(ctx, "SELECT client_ip, helo, mail_from, received_ms FROM emails WHERE id = ?", emailID).
		Scan(&env.ClientIP, &env.Helo, &env.MailFrom, &receivedMs)
	if errors.Is(err, sql.ErrNoRows) {
		return Envelope{}, time.Time{}, store.ErrNotFound
	}
	if err != nil {
		return Envelope{}, time.Time{}, fmt.Errorf("get envelope: %w", err)
	}
	return env, time.UnixMilli(receivedMs), nil
}

// SetSpamScore writes an email's spam_score into its stored document, in tx
// (the spam scoring job's Finish). An email deleted meanwhile is left alone.
// The document is read and written whole under the row's lock, so a
// concurrent change of another field is not lost.
func SetSpamScore(ctx context.Context, tx *store.Tx, emailID string, score float64) error {
	var doc string
	err := tx.QueryRow(ctx, "SELECT doc FROM emails WHERE id = ?"+tx.ForUpdate(), emailID).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("set spam score: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &fields); err != nil {
		return fmt.Errorf("set spam score: decode stored email: %w", err)
	}
	fields["spam_score"], _ = json.Marshal(score)
	b, err := json.Marshal(fields)
	if err != nil {
		return fmt.Errorf("set spam score: %w", err)
	}
	if _, err := tx.Exec(ctx, "UPDATE emails SET doc = ? WHERE id = ?", string(b), emailID); err != nil {
		return fmt.Errorf("set spam score: %w", err)
	}
	return nil
}
