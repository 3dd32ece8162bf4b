package linkcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/jobs"
	"github.com/catchbox/catchbox/internal/message"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// KindRun is the job of one run: payload {"email_id", "run"}.
const KindRun = "linkcheck.run"

// Retention and staleness of runs.
const (
	// TTL is how long a check is kept after it was requested or completed,
	// never past its email's expiry (as deliverability reports).
	TTL = 7 * 24 * time.Hour
	// staleAfter is how long a run may stay pending or running before it is
	// taken for dead: well past every attempt of its job with its backoff.
	staleAfter = 5 * time.Minute
	// runAttempts is the run job's attempt limit.
	runAttempts = 2
	// RunWorkers is how many runs one replica makes at once.
	RunWorkers = 2
)

// The errors of the operations.
var (
	errEmailNotFound = problem.NotFoundf("email")
	// ErrNoCheck is Get's error when no check was started for the email, or
	// the last one expired (link_check_not_found).
	ErrNoCheck = problem.Errorf(problem.NotFound, "link_check_not_found",
		"no link check was run for this email (or it has expired); POST to this path to start one")
)

// Service requests, runs, serves and prunes link checks.
type Service struct {
	db       *store.DB
	queue    *jobs.Queue
	searcher *inbox.Searcher
	tenants  *tenant.Service
	checker  *Checker
	checks   checks
	// Now is the clock (tests move it).
	Now func() time.Time
}

// New builds the service; queue is where its runs go (KindRun, run by Run:
// the service's table of job kinds registers it).
func New(checker *Checker, db *store.DB, queue *jobs.Queue, searcher *inbox.Searcher, tenants *tenant.Service) *Service {
	return &Service{db: db, queue: queue, searcher: searcher, tenants: tenants, checker: checker, checks: checks{db}, Now: time.Now}
}

// RunLimits are the job queue's limits of KindRun.
func (s *Service) RunLimits() jobs.Limits {
	return jobs.Limits{Workers: RunWorkers, MaxAttempts: runAttempts,
		Timeout: s.checker.runTimeout + 15*time.Second, Backoff: 5 * time.Second, MaxBackoff: 30 * time.Second}
}

// visibleEmail loads the email if the principal's organisation may read it;
// any other email is not found, as one that does not exist.
func (s *Service) visibleEmail(ctx context.Context, p tenant.Principal, emailID string) (inbox.StoredEmail, error) {
	if _, err := uuid.Parse(emailID); err != nil {
		return inbox.StoredEmail{}, errEmailNotFound
	}
	e, err := s.searcher.ByID(ctx, strings.ToLower(emailID))
	if errors.Is(err, store.ErrNotFound) {
		return inbox.StoredEmail{}, errEmailNotFound
	}
	if err != nil {
		return inbox.StoredEmail{}, err
	}
	ns, err := s.tenants.NamespaceByID(ctx, e.NamespaceID)
	if errors.Is(err, store.ErrNotFound) || err == nil && !ns.VisibleTo(p.Org.ID) {
		return inbox.StoredEmail{}, errEmailNotFound
	}
	if err != nil {
		return inbox.StoredEmail{}, err
	}
	return e, nil
}

// expiry is when a check made now expires: TTL later, or with its email if
// that is sooner.
func expiry(now time.Time, emailExpiresMs int64) time.Time {
	exp := now.Add(TTL)
	if e := time.UnixMilli(emailExpiresMs); e.Before(exp) {
		exp = e
	}
	return exp
}

type runPayload struct {
	EmailID string `json:"email_id"`
	Run     int    `json:"run"`
}

// Request starts a link check of the email for the principal, unless one is
// under way: started tells which, and the result is the new run (pending)
// or the one under way as it stands. The run's job is enqueued in the
// transaction that records the request. A finished check is replaced by the
// new run.
func (s *Service) Request(ctx context.Context, p tenant.Principal, emailID string) (res Result, started bool, err error) {
	e, err := s.visibleEmail(ctx, p, emailID)
	if err != nil {
		return Result{}, false, err
	}
	now := s.Now()
	var run int
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		run, err = s.checks.request(ctx, tx, e.ID, e.NamespaceID, now, expiry(now, e.ExpiresMs), now.Add(-staleAfter))
		if err != nil || run == 0 {
			return err
		}
		payload, err := json.Marshal(runPayload{EmailID: e.ID, Run: run})
		if err != nil {
			return err
		}
		_, err = s.queue.Enqueue(ctx, tx, KindRun, payload, jobs.EnqueueOptions{})
		return err
	})
	if err != nil {
		return Result{}, false, err
	}
	if run > 0 {
		return Result{Status: StatusPending, StartedAt: time.UnixMilli(now.UnixMilli()), Links: []Link{}}, true, nil
	}
	res, err = s.checks.get(ctx, e.ID, now)
	if errors.Is(err, store.ErrNotFound) {
		// The live run expired with its email between the two statements.
		return Result{}, false, errEmailNotFound
	}
	return res, false, err
}

// Get returns the email's link check as it stands, for the principal; the
// error is link_check_not_found when none was requested or it has expired.
func (s *Service) Get(ctx context.Context, p tenant.Principal, emailID string) (Result, error) {
	e, err := s.visibleEmail(ctx, p, emailID)
	if err != nil {
		return Result{}, err
	}
	res, err := s.checks.get(ctx, e.ID, s.Now())
	if errors.Is(err, store.ErrNotFound) {
		return Result{}, ErrNoCheck
	}
	return res, err
}

// Run is the run job (KindRun): it marks the run running, reads the email, checks its
// URLs and stores their outcomes with the job's outcome. A run that a newer
// request superseded does nothing.
func (s *Service) Run(ctx context.Context, j *jobs.Job) error {
	var p runPayload
	if err := json.Unmarshal(j.Payload, &p); err != nil || p.EmailID == "" {
		return jobs.Permanent(fmt.Errorf("link check payload %q: %v", j.Payload, err))
	}
	current, err := s.checks.start(ctx, p.EmailID, p.Run)
	if err != nil || !current {
		return err
	}
	e, err := s.searcher.ByID(ctx, p.EmailID)
	if errors.Is(err, store.ErrNotFound) {
		return j.Finish(ctx, nil, func(ctx context.Context, tx *store.Tx) error {
			return s.checks.fail(ctx, tx, p.EmailID, p.Run, "the email was deleted before its links were checked", s.Now())
		})
	}
	if err != nil {
		return s.retryOrFail(ctx, j, p, err)
	}
	targets := message.Targets(e.HTML, e.Text)
	begin := time.Now()
	links := s.checker.Check(ctx, targets)
	if ctx.Err() != nil {
		// The job was cancelled, lost its lease or its queue stopped: what
		// the run found is not the check's.
		return context.Cause(ctx)
	}
	broken := 0
	for _, l := range links {
		if l.Error != "" {
			broken++
		}
	}
	now := s.Now()
	err = j.Finish(ctx, nil, func(ctx context.Context, tx *store.Tx) error {
		return s.checks.complete(ctx, tx, p.EmailID, p.Run, links, now, expiry(now, e.ExpiresMs))
	})
	if err == nil {
		slog.Info("Link check completed", "email_id", p.EmailID, "links", len(links), "broken", broken,
			"duration_ms", time.Since(begin).Milliseconds())
	}
	return err
}

// retryOrFail retries a run that failed for a reason of the server's (the
// store), and at the last attempt records the run as failed.
func (s *Service) retryOrFail(ctx context.Context, j *jobs.Job, p runPayload, cause error) error {
	if j.Attempt < runAttempts {
		return cause
	}
	return j.Finish(ctx, jobs.Permanent(cause), func(ctx context.Context, tx *store.Tx) error {
		return s.checks.fail(ctx, tx, p.EmailID, p.Run, "the check could not be run because of an error of this server; start it again later", s.Now())
	})
}

// Prune deletes expired checks and those of deleted emails, and fails runs
// that never finished. It is a periodic sweep (store.DB.Every), one replica
// at a time.
func (s *Service) Prune(ctx context.Context) error {
	now := s.Now()
	deleted, failed, err := s.checks.prune(ctx, now, now.Add(-staleAfter))
	if deleted > 0 || failed > 0 {
		slog.Info("Pruned link checks", "deleted", deleted, "abandoned", failed)
	}
	return err
}
