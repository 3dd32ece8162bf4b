// Package metrics is what catchbox serve reports on GET /metrics, in the
// Prometheus text format: one registry of the process's counters and
// histograms, recorded by the package doing the work (smtpd, inbox, notify,
// jobs, httpapi) through the small functions here, and per-service gauges read
// from the store when scraped (queue depths, store size).
//
// Recording is on unless SetEnabled(false) (CATCHBOX_METRICS=false); off, each
// function returns at once, which is how the cost of metrics is measured
// (docs/benchmarks.md). Labels are bounded: route patterns, never paths;
// result words from fixed lists; job kinds registered in code.
package metrics

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

var on atomic.Bool

func init() { on.Store(true) }

// SetEnabled turns recording on or off for the whole process.
func SetEnabled(b bool) { on.Store(b) }

// Registry holds every family of the process. Its families are registered
// once, so that several services in one process (the tests) share them.
var Registry = prometheus.NewRegistry()

// latencyBuckets suit requests and commits from a fraction of a millisecond
// to the length of a held wait, in seconds.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

var (
	httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "catchbox_http_requests_total",
		Help: "HTTP requests answered, by route pattern, method and status code.",
	}, []string{"route", "method", "code"})
	httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "catchbox_http_request_duration_seconds",
		Help:    "Time to answer an HTTP request, by route pattern and method (held waits included).",
		Buckets: latencyBuckets,
	}, []string{"route", "method"})

	smtpSessions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "catchbox_smtp_sessions_total",
		Help: "SMTP connections, by result: accepted, or refused (busy: a connection limit was reached).",
	}, []string{"result"})
	smtpMessages = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "catchbox_smtp_messages_total",
		Help: "SMTP mail transactions, by result: stored, rejected (every recipient refused, or the message refused), failed (could not be stored), aborted (ended before DATA), faulted (refused or dropped by a namespace's fault rule).",
	}, []string{"result"})
	smtpFaults = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "catchbox_smtp_chaos_faults_total",
		Help: "Faults made by namespaces' chaos rules, by stage (mail, rcpt, data, after_data) and action (reply, delay, disconnect, or several joined with +).",
	}, []string{"stage", "action"})

	ingestBatch = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "catchbox_ingest_batch_messages",
		Help:    "Messages committed together in one ingest transaction (group commit).",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
	})
	ingestCommit = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "catchbox_ingest_commit_seconds",
		Help:    "Time of one ingest transaction, from its start to its commit (on SQLite before the fsync).",
		Buckets: latencyBuckets,
	})
	ingestSync = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "catchbox_ingest_fsync_seconds",
		Help:    "SQLite: time of the fsync that makes a group of committed ingest transactions durable.",
		Buckets: latencyBuckets,
	})

	heldWaits = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "catchbox_held_waits",
		Help: "wait=true requests being held now.",
	})
	wakeLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "catchbox_wait_wakeup_seconds",
		Help:    "From a wake-up reaching a held request to its re-check being done (the match found or not).",
		Buckets: latencyBuckets,
	})
	holdOutcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "catchbox_held_waits_total",
		Help: "Held wait=true requests, by how they ended: matched, redirected (the hold ran out: 307), gone (the client left or the server stopped).",
	}, []string{"result"})

	authAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "catchbox_auth_attempts_total",
		Help: "Attempts at credentials, by kind (smtp: SMTP AUTH; imap, pop3: their logins; signin: the dashboard's sign-in; api_key: a request with X-Api-Key) and result: ok, failed (evaluated and wrong), throttled (refused before evaluation), busy (sign-in: too many password checks at once).",
	}, []string{"kind", "result"})

	jobOutcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "catchbox_job_attempts_total",
		Help: "Attempts of background jobs, by kind and what they led to: done, retry, dead.",
	}, []string{"kind", "outcome"})
	periodicTurns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "catchbox_periodic_turns_total",
		Help: "Turns of the periodic tasks (reapers, prunes) on this replica, by task and how they ended: ran, skipped (another replica held the task), failed.",
	}, []string{"task", "result"})
)

func init() {
	Registry.MustRegister(httpRequests, httpDuration, smtpSessions, smtpMessages, smtpFaults,
		ingestBatch, ingestCommit, ingestSync, heldWaits, wakeLatency, holdOutcomes, jobOutcomes, periodicTurns, authAttempts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// HTTPRequest records one answered request. route is the route pattern
// ("unmatched" for none).
func HTTPRequest(route, method string, status int, d time.Duration) {
	if !on.Load() {
		return
	}
	httpRequests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	httpDuration.WithLabelValues(route, method).Observe(d.Seconds())
}

// SMTPSession records an SMTP connection: "accepted" or "busy".
func SMTPSession(result string) {
	if on.Load() {
		smtpSessions.WithLabelValues(result).Inc()
	}
}

// SMTPMessage records the end of an SMTP mail transaction.
func SMTPMessage(result string) {
	if on.Load() {
		smtpMessages.WithLabelValues(result).Inc()
	}
}

// SMTPFault records a fault made by a namespace's chaos rule.
func SMTPFault(stage, action string) {
	if on.Load() {
		smtpFaults.WithLabelValues(stage, action).Inc()
	}
}

// IngestCommit records one ingest transaction of n messages.
func IngestCommit(n int, d time.Duration) {
	if on.Load() {
		ingestBatch.Observe(float64(n))
		ingestCommit.Observe(d.Seconds())
	}
}

// IngestSync records one fsync of committed ingest transactions.
func IngestSync(d time.Duration) {
	if on.Load() {
		ingestSync.Observe(d.Seconds())
	}
}

// HoldStarted records a held request; call the returned function when it ends,
// with how: "matched", "redirected" or "gone".
func HoldStarted() func(result string) {
	if !on.Load() {
		return func(string) {}
	}
	heldWaits.Inc()
	return func(result string) {
		heldWaits.Dec()
		holdOutcomes.WithLabelValues(result).Inc()
	}
}

// WakeUp records the time from a held request's wake-up to the end of its
// re-check.
func WakeUp(d time.Duration) {
	if on.Load() {
		wakeLatency.Observe(d.Seconds())
	}
}

// JobAttempt records the outcome of a job's attempt: done, retry or dead.
func JobAttempt(kind, outcome string) {
	if on.Load() {
		jobOutcomes.WithLabelValues(kind, outcome).Inc()
	}
}

// PeriodicTurn returns what records the turns of the periodic task (the
// turned argument of store.DB.Every): ran, skipped when another replica held
// the task, or failed (a failure or a panic).
func PeriodicTurn(task string) func(ran bool, err error) {
	return func(ran bool, err error) {
		if !on.Load() {
			return
		}
		result := "ran"
		switch {
		case err != nil:
			result = "failed"
		case !ran:
			result = "skipped"
		}
		periodicTurns.WithLabelValues(task, result).Inc()
	}
}

// Auth records an attempt at credentials: kind smtp, signin or api_key;
// result ok, failed, throttled or busy. Every attempt is counted, however few
// of them are logged (limit.Quiet).
func Auth(kind, result string) {
	if on.Load() {
		authAttempts.WithLabelValues(kind, result).Inc()
	}
}
