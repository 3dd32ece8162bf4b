// Package server builds catchbox serve and runs it.
//
// Building and running are two steps. Build makes every part of the service from
// its configuration: the store, the domain services, the HTTP handler with the
// route table (httpapi), the ingester, the SMTP server, and the list of
// background workers. Run opens the listeners, serves, starts the workers and,
// when its context ends, shuts them down in order (stop accepting, finish what
// was accepted, close the store). The tests build the same service with New, so
// what they exercise is what catchbox serve runs.
//
// A feature joins the service in New: its service is built there, its endpoints
// go into the route table (httpapi.routes), its kinds of job into jobKinds, and
// its periodic work into Service.Workers, one line each.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/catchbox/catchbox/internal/chaos"
	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/deliverability"
	"github.com/catchbox/catchbox/internal/htmlcheck"
	"github.com/catchbox/catchbox/internal/httpapi"
	"github.com/catchbox/catchbox/internal/imapd"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/jobs"
	"github.com/catchbox/catchbox/internal/limit"
	"github.com/catchbox/catchbox/internal/linkcheck"
	"github.com/catchbox/catchbox/internal/mailauth"
	"github.com/catchbox/catchbox/internal/metrics"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/outbound"
	"github.com/catchbox/catchbox/internal/outbound/destinations"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/outbound/relay"
	"github.com/catchbox/catchbox/internal/pop3d"
	"github.com/catchbox/catchbox/internal/preview"
	"github.com/catchbox/catchbox/internal/routing"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/smtpd"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/totp"
	"github.com/catchbox/catchbox/internal/web"
	"github.com/catchbox/catchbox/internal/webhook"
)

// shutdownTimeout bounds the wait for SMTP sessions and HTTP requests to finish
// once the service is told to stop.
const shutdownTimeout = 10 * time.Second

// Ready describes a started server (for tests and the start-up banner).
type Ready struct {
	HTTPAddr  string
	SMTPAddrs []string
	PublicURL string
	// IMAPAddr and POP3Addr are the plain-text IMAP and POP3 listeners'
	// addresses, "" for one that is off.
	IMAPAddr string
	POP3Addr string
}

// Service is catchbox serve, built and ready to serve. Its parts are exported
// for the tests, which reach into them (a clock to move, a message to deliver
// without SMTP); nothing else should need to.
type Service struct {
	// Config is the validated configuration the service was built from.
	Config config.Serve
	DB     *store.DB
	Key    *secret.Key

	Tenants  *tenant.Service
	Notifier notify.Notifier
	Searcher *inbox.Searcher
	Ingester *inbox.Ingester
	Inbox    *inbox.API
	SMS      *sms.API
	TOTP     *totp.Service
	// Jobs is the durable queue of background work; every kind of job is
	// registered with it from one table (jobKinds), and the "jobs" worker
	// runs them.
	Jobs *jobs.Queue
	// Deliverability makes deliverability reports and spam scores.
	Deliverability *deliverability.Service
	// HTMLCheck tells which email clients lack the features an email's HTML
	// uses.
	HTMLCheck *htmlcheck.Service
	// Previews renders emails to images with a headless Chromium, when one
	// is configured.
	Previews *preview.Service
	// LinkCheck checks the links and images of received emails.
	LinkCheck *linkcheck.Service

	// Limits are the HTTP request limits; a test may set their clock.
	Limits *httpapi.Limits
	// Outbound is outbound email: send, reply, forward and what became of them.
	Outbound *outbound.Service
	// Deliverer delivers outbound email from the job queue; a test may set
	// its clock (with the queue's) and its relay's TLS configuration.
	Deliverer *outbound.Deliverer
	// Sessions are the dashboard's signed-in users; a test may set their clock.
	Sessions *tenant.Sessions
	// Web is the dashboard's pages.
	Web *web.Dashboard
	// Webhooks are the organisations' webhook endpoints and their deliveries.
	Webhooks *webhook.Service
	// Chaos holds the namespaces' SMTP fault rules; ChaosTable is this
	// process's copy of them, which the SMTP listener applies.
	Chaos      *chaos.Service
	ChaosTable *chaos.Table

	// SMTP serves the listeners Serve is given.
	SMTP *smtpd.Server
	// IMAP and POP3 serve theirs; both check logins as SMTP AUTH does, with
	// one throttle of failures for the three.
	IMAP *imapd.Server
	POP3 *pop3d.Server
	// Handler is the whole HTTP API (httpapi.NewRouter).
	Handler http.Handler
	// Workers is the background work Serve runs beside the listeners.
	Workers []Worker

	// NewKey is the API key of the default organisation when New created it
	// in an empty store, "" when the store already had an organisation.
	NewKey string
	// CatchAll is the namespace that receives mail whose recipient names no
	// namespace, "" for none (CATCHBOX_CATCH_ALL, local mode's default).
	CatchAll string

	drain        chan struct{} // closed when Serve starts to shut down: held waits answer 307
	drainOnce    sync.Once
	endpoints    atomic.Pointer[endpoints]
	ownDB        bool            // Build opened the store: Close closes it
	stop         func()          // ends the notifier's listener
	notifierDone <-chan struct{} // closed when that listener has stopped
}

// Worker is background work of the service. Run works until ctx ends; an error
// it returns before then stops the service, as a failed listener does. Work
// that must go on after a failure (the reapers) recovers by itself.
type Worker struct {
	Name string
	Run  func(ctx context.Context) error
}

// endpoints are the addresses handed to clients: the base of links, and the
// SMTP host and port of GET /api/smtp/{namespace}.
type endpoints struct {
	publicURL string
	smtpHost  string
	smtpPort  int
	imapPort  int // 0: IMAP is off
	pop3Port  int // 0: POP3 is off
}

// SetupLogger installs the process logger in the configured format, writing
// to w in batches (logWriter). Call the returned function before the process
// exits: it writes out the last batch.
func SetupLogger(format string, w io.Writer) (flush func()) {
	lw := newLogWriter(w)
	var h slog.Handler
	if format == "json" {
		h = slog.NewJSONHandler(lw, nil)
	} else {
		h = slog.NewTextHandler(lw, nil)
	}
	slog.SetDefault(slog.New(levelFlusher{Handler: h, w: lw}))
	return lw.Flush
}

// OpenStore opens and migrates the configured store.
func OpenStore(ctx context.Context, cfg config.Store) (*store.DB, error) {
	return OpenStoreWith(ctx, cfg, store.Options{})
}

// OpenStoreWith is OpenStore with the SQLite memory settings of opts.
func OpenStoreWith(ctx context.Context, cfg config.Store, opts store.Options) (*store.DB, error) {
	db, err := store.OpenWith(ctx, cfg.DatabaseURLOrDefault(), opts)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Run builds the service and serves until ctx ends. It binds every listener
// before it touches the store, so a port already taken fails the start before
// a first start creates anything (and prints a key that would then be lost).
// Once ready, it prints to out the mode, the addresses, in local mode a
// one-time sign-in link, and on a first start the generated API key (start.go);
// ready, when not nil, is called once every listener is open.
func Run(ctx context.Context, cfg config.Serve, out io.Writer, ready func(Ready)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	ls, err := Listen(cfg)
	if err != nil {
		return err
	}
	s, err := Build(ctx, cfg)
	if err != nil {
		ls.Close()
		return err
	}
	defer s.Close()
	note := startNote{mode: cfg.EffectiveMode(), modeWhy: modeWhy(cfg), catchAll: s.CatchAll, mailDomain: cfg.MailDomain}
	if s.NewKey != "" && cfg.APIKey == "" {
		note.newKey = s.NewKey
	}
	if s.NewKey == "" && cfg.APIKey == "" {
		slog.Info("API keys are shown only when created; to make a new one, run with the same store settings: catchbox admin key create --org default (catchbox admin key list --org default lists them)",
			"data_dir", cfg.DataDir)
	}
	if cfg.IsLocal() {
		if err := s.signInNote(ctx, &note); err != nil {
			return err
		}
	} else {
		s.ownerNote(ctx, &note)
	}
	return s.Serve(ctx, ls, func(r Ready) {
		note.print(out, r)
		if ready != nil {
			ready(r)
		}
	})
}

// Build checks cfg, opens and migrates its store, and builds the service on it
// (New). Close closes the store too.
func Build(ctx context.Context, cfg config.Serve) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err // before the store is touched
	}
	plan := planMemory(cfg)
	plan.apply()
	db, err := OpenStoreWith(ctx, cfg.Store, plan.sqlite)
	if err != nil {
		return nil, err
	}
	s, err := New(ctx, cfg, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.ownDB = true
	return s, nil
}

// New builds the service on an open, migrated store, which stays the caller's:
// it loads the secret key and the TLS certificate, creates the first
// organisation in an empty store, and makes every service, the HTTP handler, the
// SMTP server and the workers. It starts only the ingester's writers and, on
// PostgreSQL, the wake-up listener; Serve starts the rest, Close stops them.
func New(ctx context.Context, cfg config.Serve, db *store.DB) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	key, err := secret.Load(cfg.DataDir, cfg.SecretKey)
	if err != nil {
		return nil, err
	}
	if db.Shared() && cfg.SecretKey == "" {
		slog.Warn("CATCHBOX_SECRET_KEY is not set: with several replicas, links signed by one replica fail on another; set the same key on every replica")
	}
	var tlsConfig *tls.Config
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("load TLS certificate: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	s := &Service{Config: cfg, DB: db, Key: key, stop: func() {}, drain: make(chan struct{})}
	s.Tenants = tenant.NewService(db, key, cfg.RetentionMax)
	if s.NewKey, err = s.Tenants.Bootstrap(ctx, cfg.APIKey); err != nil {
		return nil, err
	}
	if s.NewKey != "" { // the first start: the default organisation's owner, who signs in with a link
		if _, err := s.Tenants.EnsureOwner(ctx); err != nil {
			return nil, err
		}
	}
	if s.CatchAll, err = ensureCatchAll(ctx, cfg, s.Tenants); err != nil {
		return nil, err
	}
	s.Advertise(nil, nil)
	if s.Limits, err = httpapi.NewLimits(cfg); err != nil {
		return nil, err
	}

	// From here on goroutines run: Close stops them.
	s.Notifier = notify.NewHub()
	var degraded func() bool
	if db.Shared() {
		life, stop := context.WithCancel(context.WithoutCancel(ctx))
		pg := notify.NewPostgres(life, db.URL)
		s.Notifier, degraded = pg, func() bool { return !pg.Healthy() }
		s.stop, s.notifierDone = stop, pg.Done()
	}
	s.Jobs = jobs.New(db, s.Notifier, jobs.Options{})
	// Events leave the domain packages through interfaces they define;
	// the webhook service takes them all.
	s.Webhooks = newWebhooks(cfg, db, s.Jobs, s.Tenants, key, s.Notifier)
	var hooks []inbox.IngestHook
	if cfg.Deliverability.SpamdAddr != "" {
		hooks = append(hooks, deliverability.ScoreOnIngest(s.Jobs))
	}
	s.Ingester = inbox.NewIngester(db, s.Notifier, append(hooks, inbox.ReceivedHook(s.Webhooks))...)
	s.Searcher = inbox.NewSearcher(db, planMemory(cfg).searchBytes)

	s.Inbox = &inbox.API{
		Tenants:   s.Tenants,
		Searcher:  s.Searcher,
		Notifier:  s.Notifier,
		Key:       key,
		PublicURL: s.publicURL,
		WaitHold:  cfg.WaitHold,
		Degraded:  degraded,
	}
	s.SMS = &sms.API{
		Service:         sms.NewService(db, s.Notifier, cfg.SMSRetention, s.Webhooks),
		Notifier:        s.Notifier,
		WaitHold:        cfg.WaitHold,
		Degraded:        degraded,
		TwilioAuthToken: cfg.TwilioAuthToken,
		PublicURL:       s.publicURL,
	}
	s.TOTP = totp.NewService(db, key, s.Webhooks)
	relayCfg, err := cfg.Relay()
	if err != nil {
		return nil, err
	}
	var relayClient *relay.Client
	if relayCfg != nil {
		relayClient = &relay.Client{Relay: *relayCfg, HeloName: cfg.MailDomain}
		slog.Info("Outbound mail to external recipients goes through the relay", "relay", relayCfg.String())
	}
	routes := routing.New(cfg.MailDomain, s.Tenants)
	outStore := outstore.NewStore(db, cfg.OutboundContentTTL, s.Webhooks)
	s.Deliverer = &outbound.Deliverer{Store: outStore, DB: db, Routes: routes, Key: key,
		Ingester: s.Ingester, MaxAge: cfg.OutboundMaxAge, Relay: relayClient}
	dests := destinations.NewStore(db)
	s.Outbound = &outbound.Service{Store: outStore, DB: db, Jobs: s.Jobs, Tenants: s.Tenants, Searcher: s.Searcher, Routes: routes,
		Destinations: dests,
		Verifier:     &destinations.Verifier{Relay: relayClient, Store: dests, Key: key, PublicURL: s.publicURL, MailDomain: routes.Domain()}}
	s.Deliverability = newDeliverability(cfg, db, s.Jobs, s.Searcher, s.Tenants, s.Webhooks)
	s.HTMLCheck = htmlcheck.NewService(s.Searcher, s.Tenants)
	s.Previews = preview.New(preview.Config{Chromium: cfg.Chromium, Timeout: cfg.PreviewTimeout, Workers: cfg.PreviewWorkers}, s.HTMLCheck)
	if s.Previews.Enabled() {
		slog.Info("Email previews are rendered with Chromium", "chromium", cfg.Chromium, "workers", cfg.PreviewWorkers)
	}
	s.LinkCheck = linkcheck.New(linkcheck.NewChecker(linkcheck.CheckerConfig{AllowPrivate: cfg.AllowPrivate()}),
		db, s.Jobs, s.Searcher, s.Tenants)
	s.ChaosTable = chaos.NewTable(db)
	if err := s.ChaosTable.Refresh(ctx); err != nil {
		return nil, err
	}
	s.Chaos = chaos.NewService(db, s.Tenants, s.Notifier, s.ChaosTable)
	s.Sessions = tenant.NewSessions(s.Tenants, strings.HasPrefix(strings.ToLower(cfg.PublicURL), "https://"), s.Limits.ClientKey)
	s.Web, err = web.New(web.Dashboard{Tenants: s.Tenants, Sessions: s.Sessions, Inbox: s.Inbox, SMS: s.SMS, TOTP: s.TOTP, Chaos: s.Chaos,
		Outbound: s.Outbound, Deliverability: s.Deliverability, HTMLCheck: s.HTMLCheck, Previews: s.Previews, LinkCheck: s.LinkCheck, Notifier: s.Notifier, SMTPEndpoint: s.smtpEndpoint, MailboxPorts: s.mailboxPorts,
		MailDomain: cfg.MailDomain, PublicURL: s.publicURL, Key: key})
	if err != nil {
		return nil, err
	}
	deps := httpapi.Deps{
		Sessions:     s.Sessions,
		Web:          s.Web,
		Tenants:      s.Tenants,
		Inbox:        s.Inbox,
		SMS:          s.SMS,
		TOTP:         s.TOTP,
		SMTPEndpoint: s.smtpEndpoint,
		MailboxPorts: s.mailboxPorts,
		Limits:       s.Limits,
		Outbound:     s.Outbound,

		Deliverability: s.Deliverability,
		HTMLCheck:      s.HTMLCheck,
		Previews:       s.Previews,
		LinkCheck:      s.LinkCheck,
		Webhooks:       s.Webhooks,
		Chaos:          s.Chaos,

		AccessLog: cfg.AccessLog,
		Drain:     s.drain,
		Ready:     s.ready,
	}
	metrics.SetEnabled(cfg.Metrics)
	if cfg.Metrics {
		deps.Metrics = s.metricsHandler()
	}
	s.Handler = httpapi.NewRouter(deps)

	auth := mailauth.New(s.Tenants, cfg.SMTPAuthFailures, cfg.SMTPAuthLockout)
	s.SMTP = smtpd.New(smtpd.Config{
		Addrs:           cfg.SMTPAddrs(),
		Domain:          cfg.MailDomain,
		MaxMessageBytes: cfg.SMTPMaxMessageBytes,
		MaxRecipients:   cfg.SMTPMaxRecipients,
		MaxConnections:  cfg.SMTPMaxConnections,
		IdleTimeout:     cfg.SMTPIdleTimeout,
		MaxCommands:     cfg.SMTPMaxCommands,
		MaxConnsPerIP:   cfg.SMTPMaxConnsPerIP,
		AuthFailures:    cfg.SMTPAuthFailures,
		AuthLockout:     cfg.SMTPAuthLockout,
		Auth:            auth,
		TLSConfig:       tlsConfig,
		RequireTLS:      cfg.SMTPRequireTLS,
		Returns:         &outbound.Returns{Store: s.Outbound.Store, Routes: s.Outbound.Routes, Key: key},
		CatchAll:        s.CatchAll,
		Faults:          s.ChaosTable,
	}, s.Tenants, s.Ingester)
	s.IMAP = imapd.New(imapd.Config{
		MaxConnections:  cfg.IMAPMaxConnections,
		MaxConnsPerIP:   cfg.SMTPMaxConnsPerIP,
		IdleTimeout:     cfg.IMAPIdleTimeout,
		MaxMessageBytes: cfg.SMTPMaxMessageBytes,
		TLSConfig:       tlsConfig,
		RequireTLS:      cfg.SMTPRequireTLS,
		AccessLog:       cfg.AccessLog,
	}, auth, s.Tenants, s.Searcher, s.Ingester, s.Notifier)
	s.POP3 = pop3d.New(pop3d.Config{
		MaxConnections: cfg.POP3MaxConnections,
		MaxConnsPerIP:  cfg.SMTPMaxConnsPerIP,
		IdleTimeout:    cfg.POP3IdleTimeout,
		TLSConfig:      tlsConfig,
		RequireTLS:     cfg.SMTPRequireTLS,
		AccessLog:      cfg.AccessLog,
	}, auth, s.Searcher)

	s.Workers = []Worker{
		s.every("reaper", store.ReapJob(db, "Deleted expired emails", inbox.Reap)),
		s.every("sms-reaper", store.ReapJob(db, "Deleted expired SMS messages", sms.Reap)),
		{Name: "jobs", Run: s.runJobs},
		s.every("outbound-content-expiry", s.Outbound.Store.ExpireJob),
		s.every("deliverability-prune", s.Deliverability.Prune),
		s.every("link-check-prune", s.LinkCheck.Prune),
		s.every("session-reaper", store.ReapJob(db, "Deleted ended sessions", tenant.ReapSessions)),
		s.every("webhook-prune", s.Webhooks.Prune),
		s.every("device-expiry", s.TOTP.AnnounceExpired),
		{Name: "webhook-watch", Run: s.Webhooks.Watch},
		{Name: "chaos-watch", Run: func(ctx context.Context) error { return s.ChaosTable.Watch(ctx, s.Notifier) }},
	}
	if db.Shared() {
		// The sign-in throttles' shared buckets (tenant.Sessions); on SQLite
		// they live in the process.
		s.Workers = append(s.Workers, s.every("throttle-reaper", store.ReapJob(db, "Deleted full throttle buckets", limit.ReapShared)))
	}
	for _, k := range s.jobKinds() {
		s.Jobs.Register(k.name, k.handler, k.limits)
	}
	return s, nil
}

// jobKind is a kind of background job, its handler and its limits.
type jobKind struct {
	name    string
	handler jobs.Handler
	limits  jobs.Limits
}

// jobKinds is every kind of background job the service runs and its handler:
// a kind joins the queue here and nowhere else (a service only enqueues).
func (s *Service) jobKinds() []jobKind {
	kinds := []jobKind{
		{outbound.DeliveryKind, s.Deliverer.Deliver, outbound.DeliveryLimits},
		{destinations.VerifyKind, s.Outbound.Verifier.Handle, jobs.Limits{}},
		{deliverability.KindReport, s.Deliverability.RunReport, s.Deliverability.ReportLimits()},
		{linkcheck.KindRun, s.LinkCheck.Run, s.LinkCheck.RunLimits()},
		{webhook.DeliverKind, s.Webhooks.Deliver, s.Webhooks.DeliveryLimits()},
	}
	if d := s.Config.Deliverability; d.SpamdAddr != "" { // enqueued by deliverability.ScoreOnIngest
		kinds = append(kinds, jobKind{deliverability.KindSpamScore, s.Deliverability.RunSpamScore, deliverability.SpamScoreLimits(d.SpamdWorkers)})
	}
	return kinds
}

// newDeliverability builds deliverability reports from the configuration:
// one resolver for every lookup, the configured blocklists, and spamd when
// it is set (New then gives every received email its spam_score:
// deliverability.ScoreOnIngest).
func newDeliverability(cfg config.Serve, db *store.DB, q *jobs.Queue, searcher *inbox.Searcher, tenants *tenant.Service, events deliverability.Events) *deliverability.Service {
	d := cfg.Deliverability
	a := &deliverability.Analyzer{
		Resolver:     deliverability.NewResolver(d.DNSServer, d.DNSTimeout),
		Zones:        deliverability.Zones{IP: config.Zones(d.DNSBLIPZones), Domain: config.Zones(d.DNSBLDomainZones)},
		ByHost:       cfg.MailDomain,
		RunTimeout:   d.ReportTimeout,
		CheckTimeout: d.ReportCheckTimeout,
	}
	if d.SpamdAddr != "" {
		a.Spamd = &deliverability.Spamd{Addr: d.SpamdAddr, Timeout: d.SpamdTimeout}
	}
	return deliverability.New(deliverability.Config{Analyzer: a, Workers: d.ReportWorkers, Events: events}, db, q, searcher, tenants)
}

// newWebhooks builds the webhook service from the configuration.
func newWebhooks(cfg config.Serve, db *store.DB, q *jobs.Queue, tenants *tenant.Service, key *secret.Key, n notify.Notifier) *webhook.Service {
	return webhook.New(db, q, tenants, key, n, webhook.Config{
		MaxAge:       cfg.WebhookMaxAge,
		Backoff:      cfg.WebhookBackoff,
		MaxBackoff:   cfg.WebhookMaxBackoff,
		DisableAfter: cfg.WebhookDisableAfter,
		Timeout:      cfg.WebhookTimeout,
		AllowPrivate: cfg.AllowPrivate(),
		MaxEndpoints: cfg.WebhookMaxEndpoints,
		Workers:      cfg.WebhookWorkers,
	})
}

// runJobs runs the job queue's workers until ctx ends, then lets the jobs under
// way finish for up to shutdownTimeout; those still running after it are left
// to their leases, for another replica or the next start to take over.
func (s *Service) runJobs(ctx context.Context) error {
	if err := s.Jobs.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := s.Jobs.Stop(stopCtx); err != nil {
		slog.Warn("Background jobs did not finish before shutdown", "err", err)
	}
	return nil
}

// every is a periodic job as a worker: run now and every ReaperInterval, by one
// replica at a time (store.DB.Every), its turns counted on /metrics.
func (s *Service) every(job string, fn func(context.Context) error) Worker {
	return Worker{Name: job, Run: func(ctx context.Context) error {
		s.DB.Every(ctx, job, s.Config.ReaperInterval, fn, metrics.PeriodicTurn(job))
		return nil
	}}
}

// Advertise sets the addresses handed to clients from the listeners' where the
// configuration leaves them out: the base of links from the HTTP listener
// (http://host:port), the SMTP port of GET /api/smtp/{namespace} from the first
// SMTP listener. A nil address keeps the configured one. It is safe to call
// while serving.
func (s *Service) Advertise(httpAddr, smtpAddr net.Addr) {
	cfg := s.Config
	if httpAddr != nil {
		cfg.HTTPAddr = httpAddr.String() // the base of links without a public URL
	}
	if cfg.SMTPPublicPort == 0 && smtpAddr != nil {
		if _, p, err := net.SplitHostPort(smtpAddr.String()); err == nil {
			cfg.SMTPPublicPort, _ = strconv.Atoi(p)
		}
	}
	host, port := cfg.SMTPPublicEndpoint()
	e := &endpoints{publicURL: cfg.PublicBaseURL(), smtpHost: host, smtpPort: port}
	if old := s.endpoints.Load(); old != nil {
		e.imapPort, e.pop3Port = old.imapPort, old.pop3Port
	} else {
		e.imapPort, e.pop3Port = cfg.MailboxPublicPorts()
	}
	s.endpoints.Store(e)
}

// AdvertiseMailbox sets the IMAP and POP3 ports of GET /api/smtp/{namespace}
// from the listeners where the configuration names no public port; a nil
// address is a listener that is off.
func (s *Service) AdvertiseMailbox(imapAddr, pop3Addr net.Addr) {
	e := *s.endpoints.Load()
	port := func(public int, addr net.Addr) int {
		if addr == nil {
			return 0
		}
		if public != 0 {
			return public
		}
		_, p, _ := net.SplitHostPort(addr.String())
		n, _ := strconv.Atoi(p)
		return n
	}
	e.imapPort, e.pop3Port = port(s.Config.IMAPPublicPort, imapAddr), port(s.Config.POP3PublicPort, pop3Addr)
	s.endpoints.Store(&e)
}

func (s *Service) mailboxPorts() (imap, pop3 int) {
	e := s.endpoints.Load()
	return e.imapPort, e.pop3Port
}

// warnUnreachable warns when a listener is on all interfaces and nothing says
// how clients reach it: links and SMTP settings then name localhost, right
// only for clients on this machine.
func (s *Service) warnUnreachable(r Ready) {
	host := func(addr string) string { h, _, _ := net.SplitHostPort(addr); return h }
	if s.Config.PublicURL == "" && config.AllInterfaces(host(r.HTTPAddr)) {
		slog.Warn("The HTTP listener is on all interfaces but CATCHBOX_PUBLIC_URL is not set: download and share links name localhost; set CATCHBOX_PUBLIC_URL to the URL clients use",
			"http", r.HTTPAddr, "links", r.PublicURL)
	}
	if s.Config.PublicURL == "" && s.Config.SMTPPublicHost == "" && len(r.SMTPAddrs) > 0 && config.AllInterfaces(host(r.SMTPAddrs[0])) {
		h, p := s.smtpEndpoint()
		slog.Warn("The SMTP listener is on all interfaces but neither CATCHBOX_PUBLIC_URL nor CATCHBOX_SMTP_PUBLIC_HOST is set: GET /api/smtp/{namespace} names localhost",
			"smtp", r.SMTPAddrs[0], "advertised", net.JoinHostPort(h, strconv.Itoa(p)))
	}
}

func (s *Service) publicURL() string { return s.endpoints.Load().publicURL }

func (s *Service) smtpEndpoint() (string, int) {
	e := s.endpoints.Load()
	return e.smtpHost, e.smtpPort
}

// Close stops what New started: it waits for the messages queued in the
// ingester to be committed, ends the wake-up listener and, when Build opened the
// store, closes it. Call it once the service no longer serves.
func (s *Service) Close() error {
	s.Ingester.Close()
	s.stop()
	if s.notifierDone != nil {
		<-s.notifierDone
	}
	if s.ownDB {
		return s.DB.Close()
	}
	return nil
}

// Drain answers every held wait=true request at once with its 307 to the same
// URL, and every one held from then on as soon as it starts: the client asks
// again, of another replica or of this one restarted. Serve calls it when it
// shuts down; it is safe to call more than once.
func (s *Service) Drain() { s.drainOnce.Do(func() { close(s.drain) }) }

// Listeners are the sockets the service serves on; a mail listener that is
// off is nil.
type Listeners struct {
	HTTP  net.Listener
	SMTP  []net.Listener
	IMAP  net.Listener
	IMAPS net.Listener // implicit TLS
	POP3  net.Listener
	POP3S net.Listener // implicit TLS
}

// Listen opens the configured HTTP and SMTP listeners.
func Listen(cfg config.Serve) (Listeners, error) {
	var ls Listeners
	var err error
	if ls.HTTP, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		return ls, fmt.Errorf("listen HTTP: %w", err)
	}
	for _, a := range cfg.SMTPAddrs() {
		l, err := net.Listen("tcp", a)
		if err != nil {
			ls.Close()
			return Listeners{}, fmt.Errorf("listen SMTP %s: %w", a, err)
		}
		ls.SMTP = append(ls.SMTP, l)
	}
	for _, m := range []struct {
		name string
		addr string
		l    *net.Listener
	}{{"IMAP", cfg.IMAPAddr, &ls.IMAP}, {"IMAPS", cfg.IMAPSAddr, &ls.IMAPS}, {"POP3", cfg.POP3Addr, &ls.POP3}, {"POP3S", cfg.POP3SAddr, &ls.POP3S}} {
		if m.addr == "" {
			continue
		}
		if *m.l, err = net.Listen("tcp", m.addr); err != nil {
			ls.Close()
			return Listeners{}, fmt.Errorf("listen %s %s: %w", m.name, m.addr, err)
		}
	}
	return ls, nil
}

// Close closes every listener.
func (ls Listeners) Close() {
	if ls.HTTP != nil {
		ls.HTTP.Close()
	}
	for _, l := range ls.SMTP {
		l.Close()
	}
	for _, l := range []net.Listener{ls.IMAP, ls.IMAPS, ls.POP3, ls.POP3S} {
		if l != nil {
			l.Close()
		}
	}
}

// Serve serves HTTP and SMTP on ls and runs the workers until ctx ends or one of
// them fails, then shuts down in order: SMTP stops taking mail (a message being
// received is finished, committed and answered), HTTP finishes its requests,
// the workers stop. The addresses clients are given come from ls unless
// configured (Advertise). ready, when not nil, is called once everything runs.
// Serve closes the listeners; the service is then done, and only Close is left.
func (s *Service) Serve(ctx context.Context, ls Listeners, ready func(Ready)) error {
	defer ls.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var smtpAddr net.Addr
	if len(ls.SMTP) > 0 {
		smtpAddr = ls.SMTP[0].Addr()
	}
	s.Advertise(ls.HTTP.Addr(), smtpAddr)
	addrOf := func(l net.Listener) net.Addr {
		if l == nil {
			return nil
		}
		return l.Addr()
	}
	s.AdvertiseMailbox(addrOf(ls.IMAP), addrOf(ls.POP3))
	httpSrv := httpapi.NewHTTPServer(s.Handler, s.Config.WaitHold)

	errc := make(chan error, 5+len(ls.SMTP)+len(s.Workers))
	var wg sync.WaitGroup
	run := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					errc <- fmt.Errorf("%s panicked: %v", name, p)
				}
			}()
			if err := f(); err != nil && !errors.Is(err, http.ErrServerClosed) && ctx.Err() == nil {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	run("HTTP server", func() error { return httpSrv.Serve(ls.HTTP) })
	for _, l := range ls.SMTP {
		run("SMTP server", func() error { return s.SMTP.Serve(l) })
	}
	for _, m := range []struct {
		name string
		l    net.Listener
		tls  bool
		imap bool
	}{{"IMAP server", ls.IMAP, false, true}, {"IMAPS server", ls.IMAPS, true, true}, {"POP3 server", ls.POP3, false, false}, {"POP3S server", ls.POP3S, true, false}} {
		if m.l == nil {
			continue
		}
		if m.imap {
			run(m.name, func() error { return s.IMAP.Serve(m.l, m.tls) })
		} else {
			run(m.name, func() error { return s.POP3.Serve(m.l, m.tls) })
		}
	}
	for _, w := range s.Workers {
		run(w.Name, func() error { return w.Run(ctx) })
	}

	r := Ready{HTTPAddr: ls.HTTP.Addr().String(), PublicURL: s.publicURL()}
	for _, l := range ls.SMTP {
		r.SMTPAddrs = append(r.SMTPAddrs, l.Addr().String())
	}
	if ls.IMAP != nil {
		r.IMAPAddr = ls.IMAP.Addr().String()
	}
	if ls.POP3 != nil {
		r.POP3Addr = ls.POP3.Addr().String()
	}
	s.warnUnreachable(r)
	slog.Info("Catchbox is ready", "http", r.PublicURL, "smtp", r.SMTPAddrs, "imap", r.IMAPAddr, "pop3", r.POP3Addr,
		"store", s.DB.Dialect.String(), "mail_domain", s.Config.MailDomain, "mode", s.Config.EffectiveMode(), "catch_all", s.CatchAll)
	if ready != nil {
		ready(r)
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	cancel()
	slog.Info("Catchbox is stopping: held waits are answered 307, messages being received are finished")
	shutdownCtx, stop := context.WithTimeout(context.Background(), shutdownTimeout)
	defer stop()
	s.Drain()
	var down sync.WaitGroup
	down.Add(4)
	go func() {
		defer down.Done()
		s.SMTP.Shutdown(shutdownCtx) // stop taking mail; sessions in DATA finish their commit
	}()
	go func() {
		defer down.Done()
		s.IMAP.Shutdown(shutdownCtx) // BYE to every client
	}()
	go func() {
		defer down.Done()
		s.POP3.Shutdown(shutdownCtx) // after the command under way
	}()
	go func() {
		defer down.Done()
		httpSrv.Shutdown(shutdownCtx) // stop accepting; requests under way finish
	}()
	down.Wait()
	wg.Wait()
	slog.Info("Catchbox stopped")
	return runErr
}
