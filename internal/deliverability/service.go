package deliverability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/jobs"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Kinds of job of this package.
const (
	// KindReport runs one report: payload {"email_id", "run"}.
	KindReport = "deliverability.report"
	// KindSpamScore scores one received email with spamd: payload {"email_id"}.
	KindSpamScore = "deliverability.spam_score"
)

// Retention and staleness of reports.
const (
	// ReportTTL is how long a report is kept after it was requested or
	// completed (contract section 5), never past its email's expiry.
	ReportTTL = 7 * 24 * time.Hour
	// staleAfter is how long a run may stay pending or running before it is
	// taken for dead: well past every attempt of its job with their backoffs.
	staleAfter = 10 * time.Minute
	// reportAttempts is the report job's attempt limit.
	reportAttempts = 3
)

// Config is what the service is built from.
type Config struct {
	Analyzer *Analyzer
	// Workers is how many reports one replica runs at once.
	Workers int
	// SpamdWorkers is how many emails one replica scores at once.
	SpamdWorkers int
	// Events receives a deliverability.completed event for each completed
	// report, in the transaction that stores it; nil sends none.
	Events Events
}

// Service serves the report endpoints, runs the report and spam scoring
// jobs, and prunes old reports.
type Service struct {
	db       *store.DB
	queue    *jobs.Queue
	searcher *inbox.Searcher
	tenants  *tenant.Service
	analyzer *Analyzer
	reports  reports
	workers  int
	events   Events
	// Now is the clock (tests move it).
	Now func() time.Time
}

// New builds the service; queue is where its report jobs go (KindReport, run
// by RunReport: the service's table of job kinds registers it).
func New(cfg Config, db *store.DB, queue *jobs.Queue, searcher *inbox.Searcher, tenants *tenant.Service) *Service {
	return &Service{db: db, queue: queue, searcher: searcher, tenants: tenants, analyzer: cfg.Analyzer,
		reports: reports{db}, workers: max(cfg.Workers, 1), events: cfg.Events, Now: time.Now}
}

// ReportLimits are the job queue's limits of KindReport: a run has the
// analyzer's time and some to store its report.
func (s *Service) ReportLimits() jobs.Limits {
	run, _ := s.analyzer.limits()
	return jobs.Limits{Workers: s.workers, MaxAttempts: reportAttempts,
		Timeout: run + 15*time.Second, Backoff: 5 * time.Second, MaxBackoff: time.Minute}
}

func (s *Service) now() time.Time { return s.Now() }

// ScoreOnIngest is the ingest hook that makes every received email whose raw
// source is kept get a spam_score: a scoring job (KindSpamScore, run by
// RunSpamScore) is enqueued in the ingest transaction and run after the 250,
// so scoring never slows ingest. The service uses it when spamd is
// configured.
func ScoreOnIngest(queue *jobs.Queue) inbox.IngestHook {
	return func(ctx context.Context, tx *store.Tx, e inbox.Stored) error {
		if !e.RawCaptured {
			return nil // nothing to score: the bytes were not kept
		}
		payload, _ := json.Marshal(spamPayload{EmailID: e.ID})
		_, err := queue.Enqueue(ctx, tx, KindSpamScore, payload, jobs.EnqueueOptions{})
		return err
	}
}

// SpamScoreLimits are the job queue's limits of KindSpamScore, with workers
// emails scored at once by one replica.
func SpamScoreLimits(workers int) jobs.Limits {
	return jobs.Limits{Workers: max(workers, 1), MaxAttempts: 5,
		Timeout: 2 * time.Minute, Backoff: 10 * time.Second, MaxBackoff: 10 * time.Minute}
}

type reportPayload struct {
	EmailID string `json:"email_id"`
	Run     int    `json:"run"`
}

type spamPayload struct {
	EmailID string `json:"email_id"`
}

// expiry is when a report made now expires: ReportTTL later, or with its
// email if that is sooner.
func expiry(now time.Time, emailExpiresMs int64) time.Time {
	exp := now.Add(ReportTTL)
	if e := time.UnixMilli(emailExpiresMs); e.Before(exp) {
		exp = e
	}
	return exp
}

// RunReport is the report job (KindReport): it marks the run running, reads the email and
// its envelope, runs the checks, and stores the report with the job's
// outcome. A run a refresh superseded does nothing.
func (s *Service) RunReport(ctx context.Context, j *jobs.Job) error {
	var p reportPayload
	if err := json.Unmarshal(j.Payload, &p); err != nil || p.EmailID == "" {
		return jobs.Permanent(fmt.Errorf("report payload %q: %v", j.Payload, err))
	}
	current, err := s.reports.start(ctx, p.EmailID, p.Run, s.now())
	if err != nil || !current {
		return err
	}
	in, src, expiresMs, err := s.load(ctx, p.EmailID)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, inbox.ErrRawNotCaptured) {
		return j.Finish(ctx, nil, func(ctx context.Context, tx *store.Tx) error {
			return s.reports.fail(ctx, tx, p.EmailID, p.Run, []ReportError{{Code: "email_gone",
				Message: "The email was deleted (its retention ran out) before its report could be made."}}, s.now())
		})
	}
	if err != nil {
		return s.retryOrFail(ctx, j, p, err)
	}
	rep := s.analyzer.Analyze(ctx, in, time.Unix(src.ReceivedTimestamp, 0))
	rep.Source = src
	now := s.now()
	err = j.Finish(ctx, nil, func(ctx context.Context, tx *store.Tx) error {
		if err := s.reports.complete(ctx, tx, p.EmailID, p.Run, rep, now, expiry(now, expiresMs)); err != nil {
			return err
		}
		return s.emitCompleted(ctx, tx, p.EmailID, rep)
	})
	if err == nil {
		slog.Info("Deliverability report completed", "email_id", p.EmailID, "overall_status", rep.OverallStatus,
			"duration_ms", rep.DurationMs, "dns_queries", rep.DNSQueries)
	}
	return err
}

// retryOrFail retries a run that failed for a reason of the server's (the
// store), and at the last attempt records the report as failed.
func (s *Service) retryOrFail(ctx context.Context, j *jobs.Job, p reportPayload, cause error) error {
	if j.Attempt < reportAttempts {
		return cause
	}
	return j.Finish(ctx, jobs.Permanent(cause), func(ctx context.Context, tx *store.Tx) error {
		return s.reports.fail(ctx, tx, p.EmailID, p.Run, []ReportError{{Code: "report_failed",
			Message: "The report could not be made because of an error of this server; request it again later."}}, s.now())
	})
}

// load reads what a report needs of an email: its raw source, envelope and
// where it was received.
func (s *Service) load(ctx context.Context, emailID string) (Input, Source, int64, error) {
	e, err := s.searcher.ByID(ctx, emailID)
	if err != nil {
		return Input{}, Source{}, 0, err
	}
	raw, err := s.searcher.RawMessage(ctx, emailID)
	if err != nil {
		return Input{}, Source{}, 0, err
	}
	env, _, err := s.searcher.Envelope(ctx, emailID)
	if err != nil {
		return Input{}, Source{}, 0, err
	}
	ns, err := s.tenants.NamespaceByID(ctx, e.NamespaceID)
	if err != nil {
		return Input{}, Source{}, 0, err
	}
	in := Input{Raw: raw, ClientIP: env.ClientIP, Helo: env.Helo, MailFrom: env.MailFrom}
	return in, Source{Namespace: ns.Name, EmailID: emailID, ReceivedTimestamp: e.ReceivedTimestamp}, e.ExpiresMs, nil
}

// RunSpamScore is the scoring job (KindSpamScore): spamd's CHECK of the email as received,
// written into the stored email with the job's outcome. An email gone or too
// large to scan is done without a score; spamd not answering is retried.
func (s *Service) RunSpamScore(ctx context.Context, j *jobs.Job) error {
	var p spamPayload
	if err := json.Unmarshal(j.Payload, &p); err != nil || p.EmailID == "" {
		return jobs.Permanent(fmt.Errorf("spam score payload %q: %v", j.Payload, err))
	}
	raw, err := s.searcher.RawMessage(ctx, p.EmailID)
	if errors.Is(err, inbox.ErrRawNotCaptured) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return err
	}
	env, received, err := s.searcher.Envelope(ctx, p.EmailID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	in := Input{Raw: raw, ClientIP: env.ClientIP, Helo: env.Helo, MailFrom: env.MailFrom}
	v, err := s.analyzer.Spamd.Check(ctx, WithTrace(raw, in, s.analyzer.ByHost, received))
	if errors.Is(err, ErrTooLarge) {
		return nil
	}
	if err != nil {
		return err
	}
	return j.Finish(ctx, nil, func(ctx context.Context, tx *store.Tx) error {
		return inbox.SetSpamScore(ctx, tx, p.EmailID, v.Score)
	})
}

// Prune deletes expired reports and those of deleted emails, and fails runs
// that never finished. It is a periodic sweep (store.DB.Every), one replica
// at a time.
func (s *Service) Prune(ctx context.Context) error {
	now := s.now()
	deleted, abandoned, err := s.reports.prune(ctx, now, now.Add(-staleAfter))
	if deleted > 0 || abandoned > 0 {
		slog.Info("Pruned deliverability reports", "deleted", deleted, "abandoned", abandoned)
	}
	return err
}
