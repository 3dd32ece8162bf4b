package inbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// deleteEmails deletes emails with their recipients, attachments, raw source and
// IMAP UID and flags, and every blob that no row refers to any more. Every deletion of emails goes
// through it (the reaper, the quota at ingest), so no blob is left behind. seqs
// and ids name the same emails; at most inChunk of them.
func deleteEmails(ctx context.Context, tx *store.Tx, seqs, ids []any) error {
	if len(ids) == 0 {
		return nil
	}
	in := store.Placeholders(len(ids))
	if tx.ConcurrentWriters() {
		// Lock the emails first, in a fixed order: a transaction deleting the
		// same emails at once (the reaper and an IMAP EXPUNGE, say) waits here,
		// then finds them gone and leaves them, instead of taking them off the
		// namespace's count a second time.
		var err error
		if seqs, ids, err = selectEmails(ctx, tx, "SELECT seq, id FROM emails WHERE seq IN "+in+" ORDER BY seq"+tx.ForUpdate(), seqs...); err != nil {
			return fmt.Errorf("lock emails to delete: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		in = store.Placeholders(len(ids))
	}
	hashes, err := selectColumn[string](ctx, tx, "SELECT DISTINCT blob_hash FROM attachments WHERE email_id IN "+in+" AND blob_hash IS NOT NULL", ids...)
	if err != nil {
		return fmt.Errorf("find blobs of deleted emails: %w", err)
	}
	rawIDs, err := selectColumn[int64](ctx, tx, "SELECT DISTINCT raw_id FROM emails WHERE seq IN "+in+" AND raw_id IS NOT NULL", seqs...)
	if err != nil {
		return fmt.Errorf("find raw sources of deleted emails: %w", err)
	}
	sort.Strings(hashes)
	if err := subtractCounts(ctx, tx, seqs); err != nil {
		return err
	}
	// Lock what may become unreferenced, in a fixed order, so that two
	// transactions deleting emails that share a blob or a raw source (one
	// delivery to several namespaces) see each other's deletions instead of
	// each keeping it for the other.
	if err := eachChunk(hashes, func(part []any) error {
		return tx.LockRows(ctx, "SELECT hash FROM blobs WHERE hash IN "+store.Placeholders(len(part))+" ORDER BY hash", part...)
	}); err != nil {
		return fmt.Errorf("lock blobs of deleted emails: %w", err)
	}
	if err := eachChunk(rawIDs, func(part []any) error {
		return tx.LockRows(ctx, "SELECT id FROM raw_sources WHERE id IN "+store.Placeholders(len(part))+" ORDER BY id", part...)
	}); err != nil {
		return fmt.Errorf("lock raw sources of deleted emails: %w", err)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"DELETE FROM email_recipients WHERE email_seq IN " + in, seqs},
		{"DELETE FROM mailbox_messages WHERE email_seq IN " + in, seqs},
		{"DELETE FROM attachments WHERE email_id IN " + in, ids},
		{"DELETE FROM emails WHERE seq IN " + in, seqs},
	} {
		if _, err := tx.Exec(ctx, q.sql, q.args...); err != nil {
			return fmt.Errorf("delete emails: %w", err)
		}
	}
	err = eachChunk(rawIDs, func(part []any) error {
		_, err := tx.Exec(ctx, "DELETE FROM raw_sources WHERE id IN "+store.Placeholders(len(part))+
			" AND NOT EXISTS (SELECT 1 FROM emails e WHERE e.raw_id = raw_sources.id)", part...)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete raw sources: %w", err)
	}
	err = eachChunk(hashes, func(part []any) error {
		_, err := tx.Exec(ctx, "DELETE FROM blobs WHERE hash IN "+store.Placeholders(len(part))+
			" AND NOT EXISTS (SELECT 1 FROM attachments a WHERE a.blob_hash = blobs.hash)", part...)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete unreferenced blobs: %w", err)
	}
	return nil
}

// selectColumn returns the one column of a query's rows.
func selectColumn[T any](ctx context.Context, tx *store.Tx, q string, args ...any) ([]T, error) {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// deleteShard is the namespace_counts shard deletions subtract from.
const deleteShard = -1

// addCounts adds each namespace's number of new emails to the writer's shard of
// namespace_counts.
func addCounts(ctx context.Context, tx *store.Tx, shard int, added map[string]int64) error {
	ids := make([]string, 0, len(added))
	for id := range added {
		ids = append(ids, id)
	}
	sort.Strings(ids) // a fixed lock order on PostgreSQL
	for _, id := range ids {
		if _, err := tx.Exec(ctx, `INSERT INTO namespace_counts (namespace_id, shard, emails) VALUES (?, ?, ?)
			ON CONFLICT (namespace_id, shard) DO UPDATE SET emails = namespace_counts.emails + excluded.emails`,
			id, shard, added[id]); err != nil {
			return fmt.Errorf("count emails: %w", err)
		}
	}
	return nil
}

// subtractCounts takes the emails about to be deleted off their namespaces' counts.
func subtractCounts(ctx context.Context, tx *store.Tx, seqs []any) error {
	rows, err := tx.Query(ctx, "SELECT namespace_id, COUNT(*) FROM emails WHERE seq IN "+store.Placeholders(len(seqs))+" GROUP BY namespace_id", seqs...)
	if err != nil {
		return fmt.Errorf("count deleted emails: %w", err)
	}
	removed := map[string]int64{}
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return err
		}
		removed[id] = -n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	return addCounts(ctx, tx, deleteShard, removed)
}

// selectEmails runs a query returning (seq, id) rows in the transaction.
func selectEmails(ctx context.Context, tx *store.Tx, q string, args ...any) (seqs, ids []any, err error) {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var id string
		if err := rows.Scan(&seq, &id); err != nil {
			return nil, nil, err
		}
		seqs, ids = append(seqs, seq), append(ids, id)
	}
	return seqs, ids, rows.Err()
}

// enforceQuotas deletes, in the ingest transaction, the oldest emails of each
// namespace in nsIDs that holds more unexpired emails than its quota_limit
// (tenant.DefaultQuotaLimit when null). The newest quota_limit unexpired emails
// stay; everything older goes, expired emails included. On PostgreSQL the
// namespace row is locked (FOR NO KEY UPDATE, which the FOR KEY SHARE locks that
// inserting its emails took do not block), so two writers filling the same
// namespace take turns and each counts the other's committed emails.
//
// The cost is a walk of at most quota_limit entries of the namespace's
// emails_ns_time index per batch, and nothing at all for a namespace without a
// quota.
func enforceQuotas(ctx context.Context, tx *store.Tx, nsIDs []string, nowMs int64) error {
	if len(nsIDs) == 0 {
		return nil
	}
	sort.Strings(nsIDs)
	args := make([]any, len(nsIDs))
	for i, id := range nsIDs {
		args[i] = id
	}
	rows, err := tx.Query(ctx, "SELECT id, quota_limit FROM namespaces WHERE id IN "+store.Placeholders(len(args))+" AND quota_limit IS NOT NULL ORDER BY id", args...)
	if err != nil {
		return fmt.Errorf("read quotas: %w", err)
	}
	type quota struct {
		nsID  string
		limit int64
	}
	var quotas []quota
	for rows.Next() {
		var q quota
		if err := rows.Scan(&q.nsID, &q.limit); err != nil {
			rows.Close()
			return err
		}
		quotas = append(quotas, q)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if tenant.DefaultQuotaLimit > 0 {
		// A server default applies to every namespace without its own quota.
		have := map[string]bool{}
		for _, q := range quotas {
			have[q.nsID] = true
		}
		for _, id := range nsIDs {
			if !have[id] {
				quotas = append(quotas, quota{id, tenant.DefaultQuotaLimit})
			}
		}
		sort.Slice(quotas, func(i, j int) bool { return quotas[i].nsID < quotas[j].nsID })
	}
	for _, q := range quotas {
		if tx.ConcurrentWriters() {
			var limit *int64
			if err := tx.QueryRow(ctx, "SELECT quota_limit FROM namespaces WHERE id = ?"+tx.ForNoKeyUpdate(), q.nsID).Scan(&limit); err != nil {
				return fmt.Errorf("lock namespace for its quota: %w", err)
			}
			if limit != nil {
				q.limit = *limit
			}
		}
		if q.limit <= 0 {
			continue
		}
		if err := enforceQuota(ctx, tx, q.nsID, q.limit, nowMs); err != nil {
			return err
		}
	}
	return nil
}

func enforceQuota(ctx context.Context, tx *store.Tx, nsID string, limit, nowMs int64) error {
	// The newest unexpired email beyond the quota, if there is one.
	var recv, seq int64
	err := tx.QueryRow(ctx, `SELECT received_ms, seq FROM emails WHERE namespace_id = ? AND expires_ms > ?
		ORDER BY received_ms DESC, seq DESC LIMIT 1 OFFSET ?`, nsID, nowMs, limit).Scan(&recv, &seq)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check quota: %w", err)
	}
	for {
		seqs, ids, err := selectEmails(ctx, tx, `SELECT seq, id FROM emails WHERE namespace_id = ?
			AND (received_ms < ? OR (received_ms = ? AND seq <= ?)) ORDER BY received_ms, seq LIMIT ?`,
			nsID, recv, recv, seq, inChunk)
		if err != nil {
			return fmt.Errorf("find emails over quota: %w", err)
		}
		if err := deleteEmails(ctx, tx, seqs, ids); err != nil {
			return err
		}
		if len(ids) < inChunk {
			return nil
		}
	}
}
