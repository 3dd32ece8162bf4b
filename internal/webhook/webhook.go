// Package webhook tells an organisation's own endpoints what happened: an
// email or an SMS arrived, an outbound recipient moved, a deliverability
// report is ready. Deliveries follow the Standard Webhooks specification
// (https://www.standardwebhooks.com): a JSON body {type, timestamp, data}
// signed with HMAC-SHA256 in the webhook-id, webhook-timestamp and
// webhook-signature headers.
//
// An event is written to the outbox (webhook_messages), one row per endpoint
// it matches, in the same transaction as its cause (Emit): it exists if and
// only if its cause was committed. Each endpoint has at most one delivery job
// in the job queue (internal/jobs) at a time, which sends the oldest pending
// message of the endpoint and, in the transaction recording the attempt,
// schedules the next: an endpoint's events go out one at a time, in the order
// they were written, and a failing one holds back those after it until it is
// delivered or dead. docs/flow.md ("Webhooks") explains the design.
package webhook

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/catchbox/catchbox/internal/egress"
	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/jobs"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Event types an endpoint may subscribe to.
const (
	EmailReceived           = "email.received"
	SMSReceived             = "sms.received"
	OutboundEvent           = "outbound.event"
	OutboundStatus          = "outbound.status"
	DeliverabilityCompleted = "deliverability.completed"
	DeviceExpired           = "device.expired"
	// TestEvent is sent by POST /api/webhooks/{id}/test to that endpoint
	// only, whatever its event types.
	TestEvent = "webhook.test"
)

// EventTypes are the event types an endpoint may subscribe to, and the ones
// it gets when it names none.
var EventTypes = []string{EmailReceived, SMSReceived, OutboundEvent, OutboundStatus, DeliverabilityCompleted, DeviceExpired}

// DeliverKind is the kind of the delivery job: payload {"endpoint_id"}.
const DeliverKind = "webhook.deliver"

// Config are the limits and schedule of deliveries. Zero fields take the
// defaults of withDefaults.
type Config struct {
	// MaxAge is how long a message is retried before it is dead (24 h).
	MaxAge time.Duration
	// Backoff is the delay before the first retry, doubled at each further
	// one up to MaxBackoff, each drawn between half and all of its value (5 s).
	Backoff time.Duration
	// MaxBackoff caps the delay between two attempts (1 h).
	MaxBackoff time.Duration
	// DisableAfter: an endpoint whose attempts have all failed for this long
	// is disabled (5 days).
	DisableAfter time.Duration
	// Timeout is the time an endpoint has to answer 2xx (10 s).
	Timeout time.Duration
	// AllowPrivate lets endpoints name or resolve to loopback, private and
	// other non-public addresses (config's AllowPrivate: local mode, or
	// CATCHBOX_ALLOW_PRIVATE_TARGETS).
	AllowPrivate bool
	// Resolver resolves endpoints' names; nil is the system's.
	Resolver *net.Resolver
	// MaxEndpoints is the most endpoints an organisation may have (20).
	MaxEndpoints int
	// Workers is how many endpoints one replica delivers to at once (16).
	Workers int
	// LogRetention is how long delivered and dead messages are kept in the
	// delivery log (7 days).
	LogRetention time.Duration
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.MaxAge, 24*time.Hour)
	def(&c.Backoff, 5*time.Second)
	def(&c.MaxBackoff, time.Hour)
	def(&c.DisableAfter, 5*24*time.Hour)
	def(&c.Timeout, 10*time.Second)
	def(&c.LogRetention, 7*24*time.Hour)
	if c.MaxEndpoints <= 0 {
		c.MaxEndpoints = 20
	}
	if c.Workers <= 0 {
		c.Workers = 16
	}
	return c
}

// Service keeps endpoints, writes events to the outbox and delivers them.
// A nil *Service emits nothing, so producers need not check.
type Service struct {
	db      *store.DB
	queue   *jobs.Queue
	tenants *tenant.Service
	sealer  *secret.Sealer
	cfg     Config
	guard   *egress.Guard // checks endpoints' URLs and every connection to them
	client  *http.Client
	// notifier, when set, carries changes of endpoints to the other
	// replicas (Watch), which drop their cached endpoints.
	notifier notify.Notifier
	// Now is the clock (tests move it).
	Now func() time.Time

	mu      sync.Mutex
	cache   map[string]cachedOrg          // organisation id → its enabled endpoints
	txLocks map[*store.Tx]map[string]bool // endpoints each open transaction has locked (addMessage)
}

// cachedOrg is what Emit needs of an organisation's enabled endpoints.
type cachedOrg struct {
	loaded    time.Time
	endpoints []filter
}

// filter is an endpoint as Emit matches events against it.
type filter struct {
	id        string
	types     []string
	namespace string
}

// cacheTTL bounds how long an endpoint created or changed by another process
// (the admin command on SQLite) may go unseen by this one's Emit. Changes made
// through this process drop the cache at once; through another replica on
// PostgreSQL, at the notification (Watch).
const cacheTTL = time.Second

// New builds the service; queue is where its delivery jobs go (DeliverKind,
// run by Deliver: the service's table of job kinds registers it). tenants may
// be nil (the admin command line), which skips the namespace check. notifier,
// which may be nil, carries changes of endpoints to the other replicas.
func New(db *store.DB, queue *jobs.Queue, tenants *tenant.Service, key *secret.Key, notifier notify.Notifier, cfg Config) *Service {
	s := &Service{db: db, queue: queue, tenants: tenants, notifier: notifier, sealer: key.Sealer("webhook-secret"),
		cfg: cfg.withDefaults(), Now: time.Now, cache: map[string]cachedOrg{}, txLocks: map[*store.Tx]map[string]bool{}}
	s.guard = &egress.Guard{AllowPrivate: s.cfg.AllowPrivate, Resolver: s.cfg.Resolver}
	s.client = newClient(s.cfg.Timeout, s.guard)
	return s
}

// DeliveryLimits are the job queue's limits of DeliverKind. Attempts of the
// job are not deliveries (those are recorded by the job itself, which always
// ends done): the job's own retries only cover failures of the store.
func (s *Service) DeliveryLimits() jobs.Limits {
	return jobs.Limits{Workers: s.cfg.Workers, MaxAttempts: 50,
		Timeout: s.cfg.Timeout + 30*time.Second, Backoff: time.Second, MaxBackoff: time.Minute}
}

func (s *Service) now() time.Time { return s.Now().UTC().Truncate(time.Millisecond) }

// event is something that happened, for the endpoints of OrgID that want it.
type event struct {
	OrgID string
	// Namespace is the namespace the event belongs to, "" for none (SMS):
	// an endpoint with a namespace filter gets only its namespace's events.
	Namespace string
	Type      string
	// Data is the event's data, marshalled to JSON only when an endpoint
	// wants the event.
	Data any
}

// body is a message's JSON body (Standard Webhooks' payload structure).
type body struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      any    `json:"data"`
}

// Wants reports whether an enabled endpoint of the organisation wants events
// of the type in the namespace: a producer whose event data costs a query to
// build asks first.
func (s *Service) Wants(ctx context.Context, orgID, namespace, eventType string) (bool, error) {
	if s == nil {
		return false, nil
	}
	ids, err := s.matching(ctx, event{OrgID: orgID, Namespace: namespace, Type: eventType})
	return len(ids) > 0, err
}

// Active reports whether the organisation has an enabled endpoint.
func (s *Service) Active(ctx context.Context, orgID string) (bool, error) {
	if s == nil {
		return false, nil
	}
	eps, err := s.enabled(ctx, orgID)
	return len(eps) > 0, err
}

// Emit writes an event of the organisation to the outbox in tx, one message
// per enabled endpoint of the organisation that wants it, and schedules the
// delivery of endpoints that had nothing pending. namespace is the namespace
// the event belongs to, "" for none (SMS): an endpoint with a namespace filter
// gets only its namespace's events. data is marshalled to JSON only when an
// endpoint wants the event, which costs a map lookup when none does.
//
// The domain packages that emit events (inbox, sms, outbound,
// deliverability, totp) each define the interface they call it through, so
// that none of them imports this package.
func (s *Service) Emit(ctx context.Context, tx *store.Tx, orgID, namespace, eventType string, data any) error {
	if s == nil {
		return nil
	}
	ev := event{OrgID: orgID, Namespace: namespace, Type: eventType, Data: data}
	ids, err := s.matching(ctx, ev)
	if err != nil || len(ids) == 0 {
		return err
	}
	now := s.now()
	b, err := json.Marshal(body{Type: ev.Type, Timestamp: httpx.Time(now), Data: ev.Data})
	if err != nil {
		return fmt.Errorf("webhook event %s: %w", ev.Type, err)
	}
	for _, id := range ids {
		if _, err := s.addMessage(ctx, tx, id, ev.Type, string(b), now); err != nil {
			return err
		}
	}
	return nil
}

// matching returns the ids of the enabled endpoints of ev's organisation that
// want ev.
func (s *Service) matching(ctx context.Context, ev event) ([]string, error) {
	eps, err := s.enabled(ctx, ev.OrgID)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, f := range eps {
		if slices.Contains(f.types, ev.Type) && (f.namespace == "" || f.namespace == ev.Namespace) {
			ids = append(ids, f.id)
		}
	}
	return ids, nil
}

// enabled returns the organisation's enabled endpoints, from the cache when
// it is fresh.
func (s *Service) enabled(ctx context.Context, orgID string) ([]filter, error) {
	now := time.Now()
	s.mu.Lock()
	c, ok := s.cache[orgID]
	s.mu.Unlock()
	if ok && now.Sub(c.loaded) < cacheTTL {
		return c.endpoints, nil
	}
	rows, err := s.db.Query(ctx, "SELECT id, event_types, namespace FROM webhook_endpoints WHERE org_id = ? AND enabled", orgID)
	if err != nil {
		return nil, fmt.Errorf("read webhook endpoints: %w", err)
	}
	defer rows.Close()
	var eps []filter
	for rows.Next() {
		var f filter
		var types string
		var ns *string
		if err := rows.Scan(&f.id, &types, &ns); err != nil {
			return nil, fmt.Errorf("read webhook endpoints: %w", err)
		}
		f.types = splitTypes(types)
		if ns != nil {
			f.namespace = *ns
		}
		eps = append(eps, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read webhook endpoints: %w", err)
	}
	s.mu.Lock()
	s.cache[orgID] = cachedOrg{loaded: now, endpoints: eps}
	s.mu.Unlock()
	return eps, nil
}

// forget drops the cached endpoints of the organisation ("" for all).
func (s *Service) forget(orgID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if orgID == "" {
		clear(s.cache)
		return
	}
	delete(s.cache, orgID)
}

// changesTopic is the notify topic of changes to endpoints.
const changesTopic = "webhooks:endpoints"

// changed drops the organisation's cached endpoints in this process once tx
// commits, and in the other replicas' (Watch).
func (s *Service) changed(ctx context.Context, tx *store.Tx, orgID string) error {
	tx.AfterCommit(func() { s.forget(orgID) })
	if s.notifier == nil {
		return nil
	}
	return s.notifier.Announce(ctx, tx, changesTopic)
}

// Watch drops the cached endpoints whenever another replica changes one,
// until ctx ends.
func (s *Service) Watch(ctx context.Context) error {
	if s.notifier == nil {
		return nil
	}
	sub := s.notifier.Subscribe(changesTopic)
	defer sub.Close()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sub.C:
			s.forget("")
		}
	}
}

func splitTypes(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// addMessage writes one message for the endpoint and schedules its delivery
// job when it has none, and returns the message's id; "" when the endpoint is
// gone or disabled. The endpoint's row is locked first, so that its messages
// are numbered in the order their transactions commit, and so that the
// delivery job, which reads the queue under the same lock when it decides to
// end, cannot miss this message.
func (s *Service) addMessage(ctx context.Context, tx *store.Tx, endpointID, eventType, b string, now time.Time) (string, error) {
	// A transaction that has written a message for the endpoint holds its
	// lock and has scheduled it already (an ingest batch writes many).
	scheduled, enabled := true, true
	if !s.locked(tx, endpointID) {
		err := tx.QueryRow(ctx, "SELECT scheduled, enabled FROM webhook_endpoints WHERE id = ?"+tx.ForUpdate(), endpointID).
			Scan(&scheduled, &enabled)
		if noRows(err) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("lock webhook endpoint: %w", err)
		}
		if !enabled {
			return "", nil
		}
	}
	id := tenant.NewID()
	_, err := tx.Exec(ctx, `INSERT INTO webhook_messages (id, endpoint_id, event_type, body, state, next_attempt_at, expires_at, created_at)
		VALUES (?, ?, ?, ?, 'pending', ?, ?, ?)`, id, endpointID, eventType, b, now.UnixMilli(), now.Add(s.cfg.MaxAge).UnixMilli(), now.UnixMilli())
	if err != nil {
		return "", fmt.Errorf("insert webhook message: %w", err)
	}
	if !scheduled {
		if err := s.schedule(ctx, tx, endpointID, now); err != nil {
			return "", err
		}
	}
	s.lock(tx, endpointID)
	return id, nil
}

// maxLockedTxs bounds the transactions whose endpoint locks are remembered:
// a transaction that rolls back is never forgotten otherwise (AfterCommit
// does not run). Forgetting a live one only costs it the SELECT again.
const maxLockedTxs = 1024

// locked reports whether tx has locked the endpoint's row and scheduled it
// (lock).
func (s *Service) locked(tx *store.Tx, endpointID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.txLocks[tx][endpointID]
}

// lock remembers, until tx commits, that it holds the endpoint's lock and the
// endpoint is scheduled.
func (s *Service) lock(tx *store.Tx, endpointID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.txLocks[tx]
	if m == nil {
		if len(s.txLocks) >= maxLockedTxs {
			clear(s.txLocks)
		}
		m = map[string]bool{}
		s.txLocks[tx] = m
		tx.AfterCommit(func() {
			s.mu.Lock()
			delete(s.txLocks, tx)
			s.mu.Unlock()
		})
	}
	m[endpointID] = true
}

type jobPayload struct {
	EndpointID string `json:"endpoint_id"`
}

// schedule enqueues the endpoint's delivery job to run at at, and marks the
// endpoint as having one. The caller holds the endpoint row's lock.
func (s *Service) schedule(ctx context.Context, tx *store.Tx, endpointID string, at time.Time) error {
	if _, err := tx.Exec(ctx, "UPDATE webhook_endpoints SET scheduled = TRUE WHERE id = ?", endpointID); err != nil {
		return fmt.Errorf("schedule webhook delivery: %w", err)
	}
	p, _ := json.Marshal(jobPayload{EndpointID: endpointID})
	// The queue keeps its own clock: the job runs after the delay this
	// service's clock says, now when the message is due.
	var opts jobs.EnqueueOptions
	if wait := at.Sub(s.now()); wait > 0 {
		opts.RunAt = time.Now().Add(wait)
	}
	if _, err := s.queue.Enqueue(ctx, tx, DeliverKind, p, opts); err != nil {
		return fmt.Errorf("schedule webhook delivery: %w", err)
	}
	return nil
}

// reschedule decides, under the endpoint row's lock, what follows an
// endpoint's delivery job: another job at the time its oldest pending message
// is due, or none (the endpoint is idle, disabled or gone).
func (s *Service) reschedule(ctx context.Context, tx *store.Tx, endpointID string) error {
	var enabled bool
	err := tx.QueryRow(ctx, "SELECT enabled FROM webhook_endpoints WHERE id = ?"+tx.ForUpdate(), endpointID).Scan(&enabled)
	if noRows(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lock webhook endpoint: %w", err)
	}
	if enabled {
		var next int64
		err := tx.QueryRow(ctx, `SELECT next_attempt_at FROM webhook_messages WHERE endpoint_id = ? AND state = 'pending'
			ORDER BY seq LIMIT 1`, endpointID).Scan(&next)
		if err == nil {
			return s.schedule(ctx, tx, endpointID, time.UnixMilli(next))
		}
		if !noRows(err) {
			return fmt.Errorf("read webhook queue: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, "UPDATE webhook_endpoints SET scheduled = FALSE WHERE id = ?", endpointID); err != nil {
		return fmt.Errorf("unschedule webhook delivery: %w", err)
	}
	return nil
}

// ensureScheduled gives the endpoint a delivery job if it has none (after a
// manual redelivery, or when it is enabled again).
func (s *Service) ensureScheduled(ctx context.Context, tx *store.Tx, endpointID string) error {
	var scheduled bool
	err := tx.QueryRow(ctx, "SELECT scheduled FROM webhook_endpoints WHERE id = ?"+tx.ForUpdate(), endpointID).Scan(&scheduled)
	if err != nil {
		return fmt.Errorf("lock webhook endpoint: %w", err)
	}
	if scheduled {
		return nil
	}
	return s.reschedule(ctx, tx, endpointID)
}

func noRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// SetResolver replaces the resolver of endpoints' names, at creation and at
// every connection (tests point it at a DNS server of their own).
func (s *Service) SetResolver(r *net.Resolver) {
	s.cfg.Resolver = r
	s.guard = &egress.Guard{AllowPrivate: s.cfg.AllowPrivate, Resolver: r}
	s.client = newClient(s.cfg.Timeout, s.guard)
}
