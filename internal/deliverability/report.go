// Package deliverability tells a team why their mail would land in spam,
// the way receiving mail servers decide it: the report of
// POST /api/emails/{emailId}/deliverability-report runs seven checks on a
// received email, each in its own file (spf, dkim, dmarc, blocklists,
// spamassassin, content, dns), from real lookups through one DNS resolver
// and a real SpamAssassin; and, when spamd is configured, every received
// email gets its spam_score.
//
// Both run as jobs of the durable queue (internal/jobs): a report is
// requested in the transaction that enqueues its run, a score in the ingest
// transaction that stores the email, and either is written back by the job's
// Finish, exactly once, whichever replica ran it. docs/flow.md ("Deliverability
// reports") follows a report from the request to the answer.
package deliverability

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/catchbox/catchbox/internal/httpx"
)

// AnalysisVersion is the report's analysis_version (semantic: a change of
// what a check finds or how it words it bumps it).
const AnalysisVersion = "1.1.0"

// Report is the seed's report object: the overall verdict, which email it
// is about, and the seven sections.
type Report struct {
	// OverallStatus is issue_detected when a section fails, warning when one
	// warns, no_issues otherwise.
	OverallStatus string              `json:"overall_status"`
	Source        Source              `json:"source"`
	SPF           *SPFResult          `json:"spf"`
	DKIM          *DKIMResult         `json:"dkim"`
	DMARC         *DMARCResult        `json:"dmarc"`
	Blocklists    *BlocklistsResult   `json:"blocklists"`
	SpamAssassin  *SpamAssassinResult `json:"spamassassin"`
	Content       *ContentResult      `json:"content"`
	DNS           *DNSResult          `json:"dns"`
	// GeneratedAt and DurationMs say when the checks ran and how long they
	// took; DNSQueries how many questions they sent to the DNS server.
	GeneratedAt string `json:"generated_at"`
	DurationMs  int64  `json:"duration_ms"`
	DNSQueries  int    `json:"dns_queries"`
}

// Source names the email a report is about.
type Source struct {
	Namespace         string `json:"namespace"`
	EmailID           string `json:"email_id"`
	ReceivedTimestamp int64  `json:"received_timestamp"`
}

// Analyzer runs the checks. Its zero values take the defaults below.
type Analyzer struct {
	Resolver *Resolver
	// Spamd is nil when no spamd is configured.
	Spamd *Spamd
	Zones Zones
	// ByHost names this server in the Received field handed to spamd.
	ByHost string
	// RunTimeout bounds a whole report (30 s); CheckTimeout each check (20 s).
	RunTimeout   time.Duration
	CheckTimeout time.Duration
	Now          func() time.Time
}

// Default time limits of a report and of each of its checks. With every DNS
// lookup bounded by its own 2 s, the checks that wait on lookups one after
// another (SPF through includes, DMARC after SPF and DKIM) stay within them.
const (
	DefaultRunTimeout   = 30 * time.Second
	DefaultCheckTimeout = 20 * time.Second
)

// lateGrace is how long a check whose time is up is given to return what it
// has before its section is reported as timed out.
const lateGrace = 200 * time.Millisecond

func (a *Analyzer) limits() (run, check time.Duration) {
	run, check = a.RunTimeout, a.CheckTimeout
	if run <= 0 {
		run = DefaultRunTimeout
	}
	if check <= 0 {
		check = DefaultCheckTimeout
	}
	return run, min(check, run)
}

func (a *Analyzer) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Analyze runs every check on the message and returns the report, within
// RunTimeout: a check that has not finished by its time limit is reported as
// timed out, and the others stand. received is when the message arrived
// (for the trace fields spamd reads).
func (a *Analyzer) Analyze(ctx context.Context, in Input, received time.Time) *Report {
	started := a.now()
	runLimit, checkLimit := a.limits()
	ctx, cancel := context.WithTimeout(ctx, runLimit)
	defer cancel()
	resolver := a.Resolver
	if resolver == nil {
		resolver = NewResolver("", 0)
	}
	e := newEnv(in, resolver.Session())
	content, links := checkContent(e) // reads the message only: at once
	spfRes := start(ctx, checkLimit, func(ctx context.Context) *SPFResult { return checkSPF(ctx, e) },
		func(code, msg string) *SPFResult {
			r := &SPFResult{Result: "temperror", ClientIP: in.ClientIP}
			r.late(code, msg)
			return r
		})
	dkimRes := start(ctx, checkLimit, func(ctx context.Context) *DKIMResult { return checkDKIM(ctx, e) },
		func(code, msg string) *DKIMResult {
			r := &DKIMResult{Signatures: []DKIMSignature{}}
			r.late(code, msg)
			return r
		})
	blRes := start(ctx, checkLimit, func(ctx context.Context) *BlocklistsResult { return checkBlocklists(ctx, e, a.Zones, links) },
		func(code, msg string) *BlocklistsResult {
			r := &BlocklistsResult{Checks: []BlocklistCheck{}}
			r.late(code, msg)
			return r
		})
	saRes := start(ctx, checkLimit, func(ctx context.Context) *SpamAssassinResult {
		return checkSpamAssassin(ctx, e, a.Spamd, a.ByHost, received)
	}, func(code, msg string) *SpamAssassinResult {
		r := &SpamAssassinResult{Rules: []SpamRule{}}
		r.late(code, msg)
		return r
	})
	dnsRes := start(ctx, checkLimit, func(ctx context.Context) *DNSResult { return checkDNS(ctx, e) },
		func(code, msg string) *DNSResult {
			r := &DNSResult{Domain: e.fromDomain, MX: []string{}, A: []string{}, SPF: []SPFRecordCheck{}, PTR: []string{}, ClientIP: in.ClientIP, Helo: in.Helo}
			r.late(code, msg)
			return r
		})
	// DMARC reads the SPF and DKIM results: its time starts once they are in.
	spf, dk := spfRes(), dkimRes()
	dmarcRes := start(ctx, checkLimit, func(ctx context.Context) *DMARCResult { return checkDMARC(ctx, e, spf, dk) },
		func(code, msg string) *DMARCResult {
			r := &DMARCResult{Result: "temperror", FromDomain: e.fromDomain, AppliedPolicy: "none"}
			r.late(code, msg)
			return r
		})
	rep := &Report{SPF: spf, DKIM: dk, DMARC: dmarcRes(), Blocklists: blRes(), SpamAssassin: saRes(),
		Content: content, DNS: dnsRes()}
	rep.OverallStatus = overall(rep.SPF.Status, rep.DKIM.Status, rep.DMARC.Status, rep.Blocklists.Status,
		rep.SpamAssassin.Status, rep.Content.Status, rep.DNS.Status)
	rep.GeneratedAt = httpx.Time(a.now())
	rep.DurationMs = a.now().Sub(started).Milliseconds()
	rep.DNSQueries = e.dns.Queries()
	return rep
}

// overall is the report's overall_status from its sections' verdicts.
func overall(sections ...Status) string {
	worst := Pass
	for _, s := range sections {
		worst = worse(worst, s)
	}
	switch worst {
	case Fail:
		return "issue_detected"
	case Warning:
		return "warning"
	}
	return "no_issues"
}

// late replaces a section's issues with the reason it has no result.
func (s *Section) late(code, msg string) {
	s.Issues = nil
	s.add(Warning, code, nil, "%s", msg)
	s.finish()
}

// recoverPart is deferred by the goroutines a check starts for its parts
// (lookups asked in parallel): a panic there would end the process, since
// start's recover guards only the check's own goroutine. It logs the panic
// and lets failed record the part as failed; the check goes on.
func recoverPart(part string, failed func()) {
	if p := recover(); p != nil {
		slog.Error("Deliverability check part panicked", "part", part, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		failed()
	}
}

// errLookupPanicked is the error of a lookup whose goroutine panicked.
var errLookupPanicked = errors.New("the lookup failed unexpectedly")

// start runs a check in its own goroutine with its time limit, and returns a
// function that waits for its section. A check that does not return within
// its limit (and a short grace), or that panics, gets the section made by
// late, with the code check_timed_out or check_failed; the report goes on.
func start[T any](ctx context.Context, limit time.Duration, check func(context.Context) T, late func(code, msg string) T) func() T {
	ch := make(chan T, 1)
	cctx, cancel := context.WithTimeout(ctx, limit)
	go func() {
		defer cancel()
		defer func() {
			if p := recover(); p != nil {
				slog.Error("Deliverability check panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				ch <- late("check_failed", "This check failed unexpectedly and has no result; request the report again, and report the problem if it persists.")
			}
		}()
		ch <- check(cctx)
	}()
	var once sync.Once
	var v T
	return func() T {
		once.Do(func() {
			select {
			case v = <-ch:
				return
			case <-cctx.Done():
			}
			select {
			case v = <-ch:
			case <-time.After(lateGrace):
				v = late("check_timed_out", fmt.Sprintf("This check did not finish within its time limit of %s (DNS servers answering slowly or not at all), so it has no result; request the report again.", limit))
			}
		})
		return v
	}
}
