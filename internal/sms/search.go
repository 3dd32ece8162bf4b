package sms

import (
	"context"
	"fmt"
	"strings"

	"github.com/catchbox/catchbox/internal/store"
)

// Query is a parsed message search (the seed's GET /api/sms/{phone_number}/messages).
type Query struct {
	NumberID      string
	Limit, Offset int
	Body          string   // case-insensitive substring of the body
	FromPrefixes  []string // the sender starts with any of these (see fromPrefixes)
	Direction     string   // "" for both
	FromMs, ToMs  *int64   // creation time bounds, Unix ms, inclusive
}

// Result is one page of a search and the count of every match.
type Result struct {
	Total    int
	Messages []Message
}

// Search limits (the seed's page size; ours for the strings).
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// where builds the WHERE clause shared by the page and count queries. Every
// search is bounded to one number's rows (the number_time index); on PostgreSQL
// the body filter can also use the trigram index.
func (s *Service) where(q Query) (string, []any) {
	conds := []string{"number_id = ?", "expires_ms > ?"}
	args := []any{q.NumberID, s.now().UnixMilli()}
	if q.FromMs != nil {
		conds = append(conds, "created_ms >= ?")
		args = append(args, *q.FromMs)
	}
	if q.ToMs != nil {
		conds = append(conds, "created_ms <= ?")
		args = append(args, *q.ToMs)
	}
	if q.Direction != "" {
		conds = append(conds, "direction = ?")
		args = append(args, q.Direction)
	}
	if len(q.FromPrefixes) > 0 {
		var alts []string
		for _, p := range q.FromPrefixes {
			if hi, ok := store.PrefixUpperBound(p); ok {
				alts = append(alts, "(from_number >= ? AND from_number < ?)")
				args = append(args, p, hi)
			} else {
				alts = append(alts, "from_number >= ?")
				args = append(args, p)
			}
		}
		conds = append(conds, "("+strings.Join(alts, " OR ")+")")
	}
	if q.Body != "" {
		conds = append(conds, `body_fold LIKE ? ESCAPE '\'`)
		args = append(args, "%"+store.EscapeLike(strings.ToLower(q.Body))+"%")
	}
	return strings.Join(conds, " AND "), args
}

// Search returns one page of matching messages, newest first, and the count of
// every match. Expired messages are never returned, even before Reap deletes them.
func (s *Service) Search(ctx context.Context, q Query) (Result, error) {
	where, args := s.where(q)
	var res Result
	if err := s.db.QueryRow(ctx, "SELECT COUNT(*) FROM sms_messages WHERE "+where, args...).Scan(&res.Total); err != nil {
		return Result{}, fmt.Errorf("count sms messages: %w", err)
	}
	res.Messages = []Message{}
	if res.Total == 0 || q.Offset >= res.Total {
		return res, nil
	}
	rows, err := s.db.Query(ctx, "SELECT "+messageColumns+" FROM sms_messages WHERE "+where+
		" ORDER BY created_ms DESC, seq DESC LIMIT ? OFFSET ?", append(args, q.Limit, q.Offset)...)
	if err != nil {
		return Result{}, fmt.Errorf("search sms messages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return Result{}, err
		}
		res.Messages = append(res.Messages, m)
	}
	return res, rows.Err()
}

// Latest returns the number's newest unexpired message, or ErrNotFound.
func (s *Service) Latest(ctx context.Context, numberID string) (Message, error) {
	return scanMessage(s.db.QueryRow(ctx, "SELECT "+messageColumns+` FROM sms_messages
		WHERE number_id = ? AND expires_ms > ? ORDER BY created_ms DESC, seq DESC LIMIT 1`, numberID, s.now().UnixMilli()))
}
