package webhook

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/store"
)

// Delivery is one message to an endpoint and its attempts, as the delivery
// log shows it.
type Delivery struct {
	ID            string          `json:"id"`
	EventType     string          `json:"event_type"`
	State         string          `json:"state"`
	AttemptCount  int             `json:"attempt_count"`
	CreatedAt     string          `json:"created_at"`
	NextAttemptAt string          `json:"next_attempt_at,omitempty"`
	ExpiresAt     string          `json:"expires_at,omitempty"`
	FinishedAt    string          `json:"finished_at,omitempty"`
	Payload       json.RawMessage `json:"payload"`
	Attempts      []Attempt       `json:"attempts"`
}

// Attempt is one attempt at a delivery.
type Attempt struct {
	AttemptedAt string `json:"attempted_at"`
	StatusCode  int    `json:"status_code,omitempty"`
	LatencyMs   int64  `json:"latency_ms"`
	Response    string `json:"response,omitempty"`
	Error       string `json:"error,omitempty"`
}

// DeliveryFilter selects deliveries of the log.
type DeliveryFilter struct {
	State string // "" for every state
	Limit int
	// Before, when set, pages on: deliveries written before the one with this id.
	Before string
	// ID, when set, selects that delivery alone.
	ID string
}

// Deliveries returns the endpoint's deliveries, newest first, with their
// attempts, oldest first.
func (s *Service) Deliveries(ctx context.Context, endpointID string, f DeliveryFilter) ([]Delivery, error) {
	q := `SELECT id, event_type, state, attempts, created_at, next_attempt_at, expires_at, finished_at, body
		FROM webhook_messages WHERE endpoint_id = ?`
	args := []any{endpointID}
	if f.State != "" {
		q += " AND state = ?"
		args = append(args, f.State)
	}
	if f.ID != "" {
		q += " AND id = ?"
		args = append(args, f.ID)
	}
	if f.Before != "" {
		q += " AND seq < (SELECT seq FROM webhook_messages WHERE id = ? AND endpoint_id = ?)"
		args = append(args, f.Before, endpointID)
	}
	q += " ORDER BY seq DESC LIMIT ?"
	args = append(args, f.Limit)
	rows, err := s.db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read webhook deliveries: %w", err)
	}
	defer rows.Close()
	out := []Delivery{}
	index := map[string]int{}
	for rows.Next() {
		var (
			d                  Delivery
			created, next, exp int64
			finished           sql.NullInt64
			body               string
		)
		if err := rows.Scan(&d.ID, &d.EventType, &d.State, &d.AttemptCount, &created, &next, &exp, &finished, &body); err != nil {
			return nil, fmt.Errorf("read webhook deliveries: %w", err)
		}
		d.CreatedAt = httpx.TimeMillis(created)
		if d.State == "pending" {
			d.NextAttemptAt, d.ExpiresAt = httpx.TimeMillis(next), httpx.TimeMillis(exp)
		}
		if finished.Valid {
			d.FinishedAt = httpx.TimeMillis(finished.Int64)
		}
		d.Payload = json.RawMessage(body)
		d.Attempts = []Attempt{}
		index[d.ID] = len(out)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read webhook deliveries: %w", err)
	}
	rows.Close()
	for id, i := range index {
		as, err := s.attempts(ctx, id)
		if err != nil {
			return nil, err
		}
		out[i].Attempts = as
	}
	return out, nil
}

// maxAttemptsShown bounds the attempts listed with one delivery (the latest).
const maxAttemptsShown = 50

func (s *Service) attempts(ctx context.Context, messageID string) ([]Attempt, error) {
	rows, err := s.db.Query(ctx, `SELECT attempted_at, status_code, latency_ms, response, error FROM (
		SELECT id, attempted_at, status_code, latency_ms, response, error FROM webhook_attempts WHERE message_id = ?
		ORDER BY id DESC LIMIT ?) AS latest ORDER BY id`, messageID, maxAttemptsShown)
	if err != nil {
		return nil, fmt.Errorf("read webhook attempts: %w", err)
	}
	defer rows.Close()
	out := []Attempt{}
	for rows.Next() {
		var a Attempt
		var at int64
		var status sql.NullInt64
		var resp, msg sql.NullString
		if err := rows.Scan(&at, &status, &a.LatencyMs, &resp, &msg); err != nil {
			return nil, fmt.Errorf("read webhook attempts: %w", err)
		}
		a.AttemptedAt, a.StatusCode, a.Response, a.Error = httpx.TimeMillis(at), int(status.Int64), resp.String, msg.String
		out = append(out, a)
	}
	return out, rows.Err()
}

// Delivery returns one delivery of the endpoint, or ErrNotFound.
func (s *Service) Delivery(ctx context.Context, endpointID, id string) (Delivery, error) {
	ds, err := s.Deliveries(ctx, endpointID, DeliveryFilter{ID: id, Limit: 1})
	if err != nil {
		return Delivery{}, err
	}
	if len(ds) == 0 {
		return Delivery{}, ErrNotFound
	}
	return ds[0], nil
}

// Redeliver makes a delivered or dead message pending again, due now and
// retried for MaxAge from now, with the same webhook-id (receivers drop what
// they have seen). It goes out when its endpoint's delivery job next runs: at
// once when the endpoint is idle, after the message being retried otherwise.
func (s *Service) Redeliver(ctx context.Context, endpointID, id string) error {
	now := s.now()
	return s.db.InTx(ctx, func(tx *store.Tx) error {
		res, err := tx.Exec(ctx, `UPDATE webhook_messages SET state = 'pending', next_attempt_at = ?, expires_at = ?, finished_at = NULL
			WHERE id = ? AND endpoint_id = ?`, now.UnixMilli(), now.Add(s.cfg.MaxAge).UnixMilli(), id, endpointID)
		if err != nil {
			return fmt.Errorf("redeliver webhook message: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return s.ensureScheduled(ctx, tx, endpointID)
	})
}

// SendTest writes a webhook.test message for the endpoint alone and returns
// its id.
func (s *Service) SendTest(ctx context.Context, ep Endpoint) (string, error) {
	now := s.now()
	b, err := json.Marshal(body{Type: TestEvent, Timestamp: httpx.Time(now), Data: map[string]string{
		"endpoint_id": ep.ID, "message": "This is a test event from Catchbox."}})
	if err != nil {
		return "", err
	}
	var id string
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		id, err = s.addMessage(ctx, tx, ep.ID, TestEvent, string(b), now)
		return err
	})
	return id, err
}

// Prune deletes delivered and dead messages, and their attempts, once they
// have been in the log for LogRetention, and repairs the schedule of
// endpoints whose delivery job is gone (repair).
func (s *Service) Prune(ctx context.Context) error {
	if err := s.repair(ctx); err != nil {
		return err
	}
	cutoff := s.now().Add(-s.cfg.LogRetention).UnixMilli()
	for {
		var n int64
		err := s.db.InTx(ctx, func(tx *store.Tx) error {
			sel := "SELECT id FROM webhook_messages WHERE finished_at < ? AND state <> 'pending' LIMIT 500"
			if _, err := tx.Exec(ctx, "DELETE FROM webhook_attempts WHERE message_id IN ("+sel+")", cutoff); err != nil {
				return err
			}
			res, err := tx.Exec(ctx, "DELETE FROM webhook_messages WHERE id IN ("+sel+")", cutoff)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return fmt.Errorf("prune webhook log: %w", err)
		}
		if n < 500 {
			return nil
		}
	}
}

// repair gives a delivery job back to each endpoint marked scheduled whose
// job has ended without scheduling the next: the queue made it dead after
// its attempts (the store kept failing, or its process kept dying mid-way).
// Without it the endpoint's messages would wait for the next event.
func (s *Service) repair(ctx context.Context) error {
	rows, err := s.db.Query(ctx, "SELECT id FROM webhook_endpoints WHERE scheduled")
	if err != nil {
		return fmt.Errorf("read scheduled webhook endpoints: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("read scheduled webhook endpoints: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read scheduled webhook endpoints: %w", err)
	}
	for _, id := range ids {
		p, _ := json.Marshal(jobPayload{EndpointID: id})
		err := s.db.InTx(ctx, func(tx *store.Tx) error {
			var scheduled bool
			err := tx.QueryRow(ctx, "SELECT scheduled FROM webhook_endpoints WHERE id = ?"+tx.ForUpdate(), id).Scan(&scheduled)
			if noRows(err) || (err == nil && !scheduled) {
				return nil
			}
			if err != nil {
				return err
			}
			var live int
			if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM jobs WHERE kind = ? AND state IN ('pending', 'running') AND payload = ?`,
				DeliverKind, p).Scan(&live); err != nil {
				return err
			}
			if live > 0 {
				return nil
			}
			slog.Info("Webhook endpoint had no delivery job; scheduling one", "endpoint_id", id)
			return s.reschedule(ctx, tx, id)
		})
		if err != nil {
			return fmt.Errorf("repair webhook schedule: %w", err)
		}
	}
	return nil
}
