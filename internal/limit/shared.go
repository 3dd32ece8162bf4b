package limit

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/catchbox/catchbox/internal/store"
)

// Shared is a set of token buckets of one rate and burst kept in the store's
// throttle_buckets table, so that every replica on one PostgreSQL charges the
// same buckets: a limit of 5 is 5 however many replicas the attempts are
// spread over. A charge is one statement that refills, tests and takes in a
// single row update, so two replicas charging at once never both take the
// last token.
//
// A refusal is remembered in the process until the bucket could have a token
// again, so a flood that is refused costs the store nothing more; since only
// time and refunds add tokens, that memory can refuse an attempt a refund
// elsewhere would have let through, never the reverse.
type Shared struct {
	// Now is the clock; nil is time.Now. Replicas' clocks are assumed close:
	// a bucket never refills backwards when one runs behind.
	Now func() time.Time

	db    *store.DB
	name  string  // prefix of the rows' names
	rate  float64 // tokens per millisecond
	burst float64

	mu      sync.Mutex
	refused map[string]time.Time // key: refused until then
}

// maxRefused bounds the remembered refusals; at the cap they are forgotten
// together (they only save the store work).
const maxRefused = 10_000

// NewShared returns shared buckets named name (rows "name:key") that gain
// perSecond tokens a second, up to burst (at least 1). perSecond <= 0 means no
// limit: NewShared returns nil, which charges nothing.
func NewShared(db *store.DB, name string, perSecond float64, burst int) *Shared {
	if perSecond <= 0 || math.IsNaN(perSecond) || math.IsInf(perSecond, 0) {
		return nil
	}
	return &Shared{db: db, name: name, rate: perSecond / 1000, burst: float64(max(burst, 1)), refused: map[string]time.Time{}}
}

func (s *Shared) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// refill is the bucket's tokens at excluded.at: what it held, plus what it
// gained since (nothing when the charging replica's clock is behind).
const refill = `throttle_buckets.tokens + (CASE WHEN excluded.at > throttle_buckets.at THEN excluded.at - throttle_buckets.at ELSE 0 END) * excluded.rate`

const chargeSQL = `INSERT INTO throttle_buckets (name, tokens, at, rate, burst) VALUES (?, ?, ?, ?, ?)
	ON CONFLICT (name) DO UPDATE SET
		tokens = (CASE WHEN ` + refill + ` > excluded.burst THEN excluded.burst ELSE ` + refill + ` END) - 1,
		at = CASE WHEN excluded.at > throttle_buckets.at THEN excluded.at ELSE throttle_buckets.at END,
		rate = excluded.rate, burst = excluded.burst
	WHERE ` + refill + ` >= 1`

// Charge takes a token from key's bucket for an attempt about to be
// evaluated, as Buckets.Charge does, without waiting: an empty bucket is a
// *Refused error at once. A store error is returned as it is; the caller
// decides whether to refuse or fail.
func (s *Shared) Charge(ctx context.Context, key string) (*Charge, error) {
	if s == nil {
		return nil, nil
	}
	now := s.now()
	s.mu.Lock()
	until, ok := s.refused[key]
	if ok && now.Before(until) {
		s.mu.Unlock()
		return nil, &Refused{Retry: until.Sub(now)}
	}
	delete(s.refused, key)
	s.mu.Unlock()

	row := s.name + ":" + key
	res, err := s.db.Exec(ctx, chargeSQL, row, s.burst-1, now.UnixMilli(), s.rate, s.burst)
	if err != nil {
		return nil, fmt.Errorf("charge %s: %w", s.name, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, fmt.Errorf("charge %s: %w", s.name, err)
	} else if n == 1 {
		return &Charge{settle: func(refund bool) {
			if refund {
				s.refund(ctx, key)
			}
		}}, nil
	}
	var tokens, rate float64
	var at int64
	if err := s.db.QueryRow(ctx, "SELECT tokens, at, rate FROM throttle_buckets WHERE name = ?", row).Scan(&tokens, &at, &rate); err != nil {
		return nil, fmt.Errorf("read %s: %w", s.name, err)
	}
	if ms := now.UnixMilli() - at; ms > 0 {
		tokens += float64(ms) * rate
	}
	retry := time.Millisecond
	if rate > 0 && tokens < 1 {
		retry = max(retry, time.Duration((1-tokens)/rate*float64(time.Millisecond)))
	}
	s.mu.Lock()
	if len(s.refused) >= maxRefused {
		clear(s.refused)
	}
	s.refused[key] = now.Add(retry)
	s.mu.Unlock()
	return nil, &Refused{Retry: retry}
}

// refund gives a token back to key's bucket, up to its burst, and forgets a
// refusal of key remembered here. It runs after the attempt, whose context
// may have ended, so it has a context of its own.
func (s *Shared) refund(ctx context.Context, key string) {
	s.mu.Lock()
	delete(s.refused, key)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := s.db.Exec(ctx, "UPDATE throttle_buckets SET tokens = CASE WHEN tokens + 1 > burst THEN burst ELSE tokens + 1 END WHERE name = ?", s.name+":"+key); err != nil {
		slog.Warn("Could not give back a throttle token", "throttle", s.name, "err", err)
	}
}

// ReapShared deletes the shared buckets that are full again by now: a full
// bucket is the same as none (a periodic job).
func ReapShared(ctx context.Context, db *store.DB, now time.Time) (int, error) {
	res, err := db.Exec(ctx, "DELETE FROM throttle_buckets WHERE tokens + (? - at) * rate >= burst", now.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("delete full throttle buckets: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
