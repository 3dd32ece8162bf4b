package inbox

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/catchbox/catchbox/internal/inbox/index"
	"github.com/catchbox/catchbox/internal/store"
)

// searchCopy answers a substring search from the namespace's copy in memory
// (SQLite, package index). ok is false when the copy cannot serve it: the
// namespace is over the budget, or a page row is missing (the copy is then
// dropped).
func (s *Searcher) searchCopy(ctx context.Context, q Query) (res Result, ok bool, err error) {
	nowMs := s.now().UnixMilli()
	iq := index.Query{Subject: q.SubjectIncludes, From: q.FromAddrIncludes,
		FromMs: q.FromTimestamp, ToMs: q.ToTimestamp, Offset: q.Offset, Limit: q.Limit}
	err = s.db.InReadTx(ctx, func(tx *store.Tx) error {
		cols, have, err := s.copies.View(ctx, tx, q.NamespaceID, nowMs)
		if err != nil || !have {
			return err
		}
		var total int
		var page []int64
		if q.ToAddrPrefix == "" {
			total, page = cols.Search(iq, nowMs)
		} else if total, page, err = recipientPage(ctx, tx, q, cols.Matches(iq, nowMs)); err != nil {
			return err
		}
		res = Result{Total: total, Emails: make([]Email, 0, len(page))}
		if len(page) == 0 {
			ok = true
			return nil
		}
		args := make([]any, len(page))
		for i, seq := range page {
			args[i] = seq
		}
		rows, err := tx.Query(ctx, "SELECT e.seq, "+emailCols+" FROM emails e"+rawJoin+" WHERE e.seq IN "+store.Placeholders(len(page)), args...)
		if err != nil {
			return fmt.Errorf("search emails: %w", err)
		}
		defer rows.Close()
		found := make(map[int64]Email, len(page))
		for rows.Next() {
			var seq int64
			var se storedEmail
			if err := rows.Scan(append([]any{&seq}, se.dest()...)...); err != nil {
				return fmt.Errorf("search emails: %w", err)
			}
			if found[seq], err = se.decode(); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("search emails: %w", err)
		}
		for _, seq := range page {
			e, have := found[seq]
			if !have {
				slog.Warn("Search copy of namespace out of step; dropped", "namespace", q.NamespaceID, "seq", seq)
				s.copies.Drop(q.NamespaceID)
				return nil
			}
			res.Emails = append(res.Emails, e)
		}
		ok = true
		return nil
	})
	return res, ok, err
}

// recipientPage keeps, of a copy's matches (their seqs, oldest first), those
// of emails with a recipient that has q's to_addr_prefix, and returns their
// count and the seqs of q's page, newest first. The prefix's range of
// email_recipients is read when it holds no more entries than there are
// matches; otherwise the matches are looked up in it, so the cost follows the
// fewer of the two.
func recipientPage(ctx context.Context, tx *store.Tx, q Query, matches []int64) (total int, page []int64, err error) {
	page = make([]int64, 0, q.Limit)
	if len(matches) == 0 {
		return 0, page, nil
	}
	cond, args := recipientRange(q)
	seqs, err := selectColumn[int64](ctx, tx, "SELECT r.email_seq FROM email_recipients r WHERE "+cond+" LIMIT ?",
		append(args, len(matches)+1)...)
	if err != nil {
		return 0, nil, fmt.Errorf("search recipients: %w", err)
	}
	if len(seqs) > len(matches) {
		seqs = seqs[:0]
		err = eachChunk(matches, func(part []any) error {
			found, err := selectColumn[int64](ctx, tx, "SELECT DISTINCT r.email_seq FROM email_recipients r INDEXED BY email_recipients_email WHERE r.email_seq IN "+
				store.Placeholders(len(part))+" AND "+cond, append(part, args...)...)
			seqs = append(seqs, found...)
			return err
		})
		if err != nil {
			return 0, nil, fmt.Errorf("search recipients: %w", err)
		}
	}
	with := make(map[int64]bool, len(seqs))
	for _, s := range seqs {
		with[s] = true
	}
	kept := matches[:0]
	for _, seq := range matches {
		if with[seq] {
			kept = append(kept, seq)
		}
	}
	for m := len(kept) - 1 - q.Offset; m >= 0 && m >= len(kept)-q.Offset-q.Limit; m-- {
		page = append(page, kept[m])
	}
	return len(kept), page, nil
}

// copySearchable reports whether the copies in memory can answer q: a
// substring filter on a store this process owns alone (SQLite: a copy is
// kept up to date with every write, which a shared store's other replicas
// would not tell it of; with to_addr_prefix, the copy's matches are checked
// against the recipients' index).
func (s *Searcher) copySearchable(q Query) bool {
	return s.copies != nil && !s.db.Shared() && (q.SubjectIncludes != "" || q.FromAddrIncludes != "")
}
