package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/catchbox/catchbox/internal/egress"
	"github.com/catchbox/catchbox/internal/jobs"
	"github.com/catchbox/catchbox/internal/store"
)

// Sign returns the webhook-signature header's value for a message: one
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>" per key, space separated
// (Standard Webhooks, "Signature scheme": a receiver accepts the message if
// any signature verifies, which is how a rotation overlaps).
func Sign(keys [][]byte, id string, timestamp int64, body []byte) string {
	sigs := make([]string, len(keys))
	for i, k := range keys {
		m := hmac.New(sha256.New, k)
		fmt.Fprintf(m, "%s.%d.", id, timestamp)
		m.Write(body)
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	}
	return strings.Join(sigs, " ")
}

// message is an outbox row, as a delivery reads it.
type message struct {
	id        string
	eventType string
	body      string
	attempts  int
	nextAt    time.Time
	expiresAt time.Time
}

// pending returns up to limit of the endpoint's pending messages, oldest first.
func (s *Service) pending(ctx context.Context, endpointID string, limit int) ([]message, error) {
	rows, err := s.db.Query(ctx, `SELECT id, event_type, body, attempts, next_attempt_at, expires_at FROM webhook_messages
		WHERE endpoint_id = ? AND state = 'pending' ORDER BY seq LIMIT ?`, endpointID, limit)
	if err != nil {
		return nil, fmt.Errorf("read webhook queue: %w", err)
	}
	defer rows.Close()
	var out []message
	for rows.Next() {
		var m message
		var next, exp int64
		if err := rows.Scan(&m.id, &m.eventType, &m.body, &m.attempts, &next, &exp); err != nil {
			return nil, fmt.Errorf("read webhook queue: %w", err)
		}
		m.nextAt, m.expiresAt = time.UnixMilli(next), time.UnixMilli(exp)
		out = append(out, m)
	}
	return out, rows.Err()
}

// A delivery job sends up to batchMessages messages, one after the other,
// and starts none after batchTime: their outcomes are recorded in one
// transaction, which spares the store a commit per message.
const (
	batchMessages = 50
	batchTime     = 2 * time.Second
)

// outcome is what became of one message in a delivery job.
type outcome struct {
	m    message
	dead bool   // past its age before it was tried
	res  result // the attempt, when not dead
}

// Deliver is the delivery job of one endpoint (DeliverKind): it sends the endpoint's
// oldest pending messages, in order, each once, stopping at the first that
// fails (or at the batch's limits) and, in the transaction that records the
// attempts, schedules what follows (reschedule). It always ends done; only a
// failure of the store makes the queue retry it.
func (s *Service) Deliver(ctx context.Context, j *jobs.Job) error {
	var p jobPayload
	if err := json.Unmarshal(j.Payload, &p); err != nil || p.EndpointID == "" {
		return jobs.Permanent(fmt.Errorf("webhook job payload %q: %v", j.Payload, err))
	}
	next := func(ctx context.Context, tx *store.Tx) error { return s.reschedule(ctx, tx, p.EndpointID) }
	ep, err := s.Get(ctx, "", p.EndpointID)
	if errors.Is(err, ErrNotFound) {
		return j.Finish(ctx, nil, nil) // deleted
	}
	if err != nil {
		return err
	}
	var ms []message
	if ep.Enabled {
		if ms, err = s.pending(ctx, ep.ID, batchMessages); err != nil {
			return err
		}
	}
	if len(ms) == 0 || ms[0].nextAt.After(s.now()) {
		return j.Finish(ctx, nil, next)
	}
	// A message is sent only once what caused it is durable: on SQLite a
	// commit is made durable after it (the ingester's group commit answers
	// its 250s then), and the job may be claimed in between.
	if err := s.db.Sync(); err != nil {
		return err
	}
	start := time.Now()
	var done []outcome
	for _, m := range ms {
		now := s.now()
		if m.nextAt.After(now) || time.Since(start) > batchTime || ctx.Err() != nil {
			break
		}
		if !now.Before(m.expiresAt) {
			done = append(done, outcome{m: m, dead: true})
			continue
		}
		res := s.send(ctx, ep, m)
		done = append(done, outcome{m: m, res: res})
		if !res.ok() {
			break // the next ones wait for this one
		}
	}
	return j.Finish(ctx, nil, func(ctx context.Context, tx *store.Tx) error {
		for _, o := range done {
			if o.dead {
				if err := s.finishMessage(ctx, tx, o.m.id, "dead"); err != nil {
					return err
				}
				continue
			}
			if err := s.record(ctx, tx, ep, o.m, o.res); err != nil {
				return err
			}
			if o.res.ok() {
				ep.FailingSince = time.Time{} // the streak ended here
			}
		}
		return next(ctx, tx)
	})
}

// result is the outcome of one attempt.
type result struct {
	at      time.Time
	status  int // 0: no answer
	latency time.Duration
	excerpt string // the start of the answer's body
	err     string // why there was no answer, or why it was not a success
}

func (r result) ok() bool { return r.err == "" && r.status >= 200 && r.status < 300 }

// excerptBytes bounds the part of an answer's body kept in the log, and
// readBytes what is read of it at all.
const (
	excerptBytes = 1000
	readBytes    = 64 << 10
)

// send makes one attempt at delivering m to ep.
func (s *Service) send(ctx context.Context, ep Endpoint, m message) result {
	now := s.now()
	r := result{at: now}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, strings.NewReader(m.body))
	if err != nil {
		r.err = "invalid request: " + err.Error()
		return r
	}
	ts := now.Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Catchbox-Webhooks/1")
	req.Header.Set("webhook-id", m.id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", Sign(ep.secrets, m.id, ts, []byte(m.body)))
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		r.latency = time.Since(start)
		r.err = describe(err, s.cfg.Timeout)
		return r
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, readBytes))
	r.latency = time.Since(start)
	r.status = resp.StatusCode
	r.excerpt = excerpt(b)
	if !r.ok() {
		r.err = fmt.Sprintf("the endpoint answered %d", resp.StatusCode)
	}
	return r
}

// describe says why a request got no answer, without Go's wrapping.
func describe(err error, timeout time.Duration) string {
	switch re := egress.Refused(err); {
	case re != nil:
		return re.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer within %s", timeout)
	}
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		return ue.Unwrap().Error()
	}
	return err.Error()
}

func excerpt(b []byte) string {
	if len(b) > excerptBytes {
		b = b[:excerptBytes]
	}
	for len(b) > 0 && !utf8.Valid(b) {
		b = b[:len(b)-1]
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}

// record writes an attempt and its consequences in tx: the message delivered,
// retried after a backoff, or dead past its age; the endpoint's failure
// streak ended, begun, or long enough to disable it. A message redelivered
// while the attempt was under way (its expires_at moved) is left pending: the
// redelivery asked for another attempt.
func (s *Service) record(ctx context.Context, tx *store.Tx, ep Endpoint, m message, r result) error {
	var status any
	if r.status != 0 {
		status = r.status
	}
	_, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (message_id, endpoint_id, attempted_at, status_code, latency_ms, response, error)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, m.id, ep.ID, r.at.UnixMilli(), status, r.latency.Milliseconds(),
		nullString(r.excerpt), nullString(r.err))
	if err != nil {
		return fmt.Errorf("record webhook attempt: %w", err)
	}
	now := s.now()
	if r.ok() {
		if _, err := tx.Exec(ctx, `UPDATE webhook_messages SET state = 'delivered', attempts = attempts + 1, finished_at = ?
			WHERE id = ? AND state = 'pending' AND expires_at = ?`, now.UnixMilli(), m.id, m.expiresAt.UnixMilli()); err != nil {
			return fmt.Errorf("record webhook delivery: %w", err)
		}
		if _, err := tx.Exec(ctx, "UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL", ep.ID); err != nil {
			return fmt.Errorf("record webhook delivery: %w", err)
		}
		return nil
	}
	nextAt := now.Add(backoff(s.cfg.Backoff, s.cfg.MaxBackoff, m.attempts+1))
	if nextAt.Before(m.expiresAt) {
		_, err = tx.Exec(ctx, `UPDATE webhook_messages SET attempts = attempts + 1, next_attempt_at = ?
			WHERE id = ? AND state = 'pending' AND expires_at = ?`, nextAt.UnixMilli(), m.id, m.expiresAt.UnixMilli())
	} else {
		_, err = tx.Exec(ctx, `UPDATE webhook_messages SET state = 'dead', attempts = attempts + 1, finished_at = ?
			WHERE id = ? AND state = 'pending' AND expires_at = ?`, now.UnixMilli(), m.id, m.expiresAt.UnixMilli())
		if err == nil {
			slog.Warn("Webhook message is dead: no 2xx before its retries ran out", "endpoint_id", ep.ID, "message_id", m.id,
				"attempts", m.attempts+1, "last_error", r.err)
		}
	}
	if err != nil {
		return fmt.Errorf("record webhook failure: %w", err)
	}
	return s.failing(ctx, tx, ep, now)
}

// failing extends the endpoint's failure streak, and disables the endpoint
// when the streak has lasted DisableAfter.
func (s *Service) failing(ctx context.Context, tx *store.Tx, ep Endpoint, now time.Time) error {
	since := ep.FailingSince
	if since.IsZero() {
		_, err := tx.Exec(ctx, "UPDATE webhook_endpoints SET failing_since = ? WHERE id = ? AND failing_since IS NULL", now.UnixMilli(), ep.ID)
		if err != nil {
			return fmt.Errorf("record webhook failure: %w", err)
		}
		return nil
	}
	if now.Sub(since) < s.cfg.DisableAfter {
		return nil
	}
	reason := fmt.Sprintf("every delivery attempt failed from %s to %s (%s); enable it again with PATCH {\"enabled\": true}",
		since.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), s.cfg.DisableAfter)
	_, err := tx.Exec(ctx, "UPDATE webhook_endpoints SET enabled = FALSE, disabled_reason = ?, updated_at = ? WHERE id = ?",
		reason, now.UnixMilli(), ep.ID)
	if err != nil {
		return fmt.Errorf("disable webhook endpoint: %w", err)
	}
	slog.Warn("Webhook endpoint disabled: its deliveries kept failing", "endpoint_id", ep.ID, "org_id", ep.OrgID, "since", since)
	return s.changed(ctx, tx, ep.OrgID)
}

func (s *Service) finishMessage(ctx context.Context, tx *store.Tx, id, state string) error {
	_, err := tx.Exec(ctx, "UPDATE webhook_messages SET state = ?, finished_at = ? WHERE id = ? AND state = 'pending'",
		state, s.now().UnixMilli(), id)
	if err != nil {
		return fmt.Errorf("end webhook message: %w", err)
	}
	return nil
}

// backoff is the delay after the attempt-th failed attempt: base doubled for
// each attempt before it, capped at max, drawn between half and all of that so
// that endpoints that failed together do not all come back together.
func backoff(base, max time.Duration, attempt int) time.Duration {
	d := max
	if shift := attempt - 1; shift < 40 {
		if b := base << shift; b > 0 && b < d {
			d = b
		}
	}
	return d/2 + rand.N(d/2+1)
}

// newClient returns the HTTP client of deliveries: its connections go through
// the outgoing-fetch guard (egress), and redirects are not followed (a 3xx is
// a failed attempt, as Standard Webhooks asks).
func newClient(timeout time.Duration, guard *egress.Guard) *http.Client {
	return &http.Client{Transport: guard.Transport(timeout), Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
