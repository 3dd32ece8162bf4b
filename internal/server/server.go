// Package server assembles catchbox serve: it opens the store, prepares the first
// organisation, and runs the HTTP API, the SMTP listener(s) and the background
// workers until its context ends, then shuts them down in order (stop accepting,
// finish what was accepted, close the store).
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
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/httpapi"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/smtpd"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/totp"
)

// Ready describes a started server (for tests and the start-up banner).
type Ready struct {
	HTTPAddr  string
	SMTPAddrs []string
	PublicURL string
}

// SetupLogger installs the process logger in the configured format.
func SetupLogger(format string, w io.Writer) {
	var h slog.Handler
	if format == "json" {
		h = slog.NewJSONHandler(w, nil)
	} else {
		h = slog.NewTextHandler(w, nil)
	}
	slog.SetDefault(slog.New(h))
}

// OpenStore opens and migrates the configured store.
func OpenStore(ctx context.Context, cfg config.Store) (*store.DB, error) {
	db, err := store.Open(ctx, cfg.DatabaseURLOrDefault())
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Run serves until ctx ends. out receives the one-time printout of a generated
// API key; ready, when not nil, is called once every listener is open.
func Run(ctx context.Context, cfg config.Serve, out io.Writer, ready func(Ready)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	db, err := OpenStore(ctx, cfg.Store)
	if err != nil {
		return err
	}
	defer db.Close()
	key, err := secret.Load(cfg.DataDir, cfg.SecretKey)
	if err != nil {
		return err
	}
	if db.Dialect == store.Postgres && cfg.SecretKey == "" {
		slog.Warn("CATCHBOX_SECRET_KEY is not set: with several replicas, links signed by one replica fail on another; set the same key on every replica")
	}
	tenants := tenant.NewService(db, key, cfg.RetentionMax)
	created, err := tenants.Bootstrap(ctx, cfg.APIKey)
	if err != nil {
		return err
	}
	if created != "" && cfg.APIKey == "" {
		fmt.Fprintf(out, "\nCreated organisation %q with namespace %q.\nAPI key (shown once, store it now): %s\n\n", tenant.DefaultName, tenant.DefaultName, created)
	}

	var tlsConfig *tls.Config
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return fmt.Errorf("load TLS certificate: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var notifier notify.Notifier = notify.NewHub()
	var degraded func() bool
	if db.Dialect == store.Postgres {
		pg := notify.NewPostgres(ctx, db.URL)
		notifier, degraded = pg, func() bool { return !pg.Healthy() }
	}
	ingester := inbox.NewIngester(db, notifier)
	defer ingester.Close()

	// Listeners first, so that addresses ending in :0 (tests) are known before
	// public URLs are derived from them.
	httpLn, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen HTTP: %w", err)
	}
	defer httpLn.Close()
	var smtpLns []net.Listener
	for _, a := range cfg.SMTPAddrs() {
		l, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("listen SMTP %s: %w", a, err)
		}
		defer l.Close()
		smtpLns = append(smtpLns, l)
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://" + httpLn.Addr().String()
	}
	if cfg.SMTPPublicPort == 0 {
		_, p, _ := net.SplitHostPort(smtpLns[0].Addr().String())
		cfg.SMTPPublicPort, _ = strconv.Atoi(p)
	}
	publicURL := cfg.PublicBaseURL()
	smtpHost, smtpPort := cfg.SMTPPublicEndpoint()

	searcher := inbox.NewSearcher(db)
	searcher.SetColumnBudget(cfg.SearchMemoryBytes)
	api := &inbox.API{
		Tenants:   tenants,
		Searcher:  searcher,
		Notifier:  notifier,
		Key:       key,
		PublicURL: func() string { return publicURL },
		WaitHold:  cfg.WaitHold,
		Degraded:  degraded,
	}
	smsAPI := &sms.API{
		Service:         sms.NewService(db, notifier, cfg.SMSRetention),
		Notifier:        notifier,
		WaitHold:        cfg.WaitHold,
		Degraded:        degraded,
		TwilioAuthToken: cfg.TwilioAuthToken,
		PublicURL:       func() string { return publicURL },
	}
	router := httpapi.NewRouter(httpapi.Deps{
		Tenants:      tenants,
		Inbox:        api,
		SMTPEndpoint: func() (string, int) { return smtpHost, smtpPort },
		Extra:        []func(chi.Router){totp.NewService(db, key).Routes, smsAPI.Routes},
		Public:       []func(chi.Router){smsAPI.PublicRoutes},
	})
	httpSrv := httpapi.NewHTTPServer(router, cfg.WaitHold)

	smtpSrv := smtpd.New(smtpd.Config{
		Addrs:           cfg.SMTPAddrs(),
		Domain:          cfg.MailDomain,
		MaxMessageBytes: cfg.SMTPMaxMessageBytes,
		MaxRecipients:   cfg.SMTPMaxRecipients,
		MaxConnections:  cfg.SMTPMaxConnections,
		IdleTimeout:     cfg.SMTPIdleTimeout,
		MaxCommands:     cfg.SMTPMaxCommands,
		TLSConfig:       tlsConfig,
		RequireTLS:      cfg.SMTPRequireTLS,
	}, tenants, ingester)

	errc := make(chan error, 1+len(smtpLns))
	var wg sync.WaitGroup
	serve := func(name string, f func() error) {
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
	serve("HTTP server", func() error { return httpSrv.Serve(httpLn) })
	for _, l := range smtpLns {
		l := l
		serve("SMTP server", func() error { return smtpSrv.Serve(l) })
	}
	for job, fn := range map[string]func(context.Context) error{
		"reaper":     inbox.ReapJob(db),
		"sms-reaper": sms.ReapJob(db),
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db.Every(ctx, job, cfg.ReaperInterval, fn)
		}()
	}

	r := Ready{HTTPAddr: httpLn.Addr().String(), PublicURL: publicURL}
	for _, l := range smtpLns {
		r.SMTPAddrs = append(r.SMTPAddrs, l.Addr().String())
	}
	slog.Info("Catchbox is ready", "http", publicURL, "smtp", r.SMTPAddrs, "store", db.Dialect.String(), "mail_domain", cfg.MailDomain)
	if ready != nil {
		ready(r)
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	cancel()
	shutdownCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	smtpSrv.Shutdown(shutdownCtx) // stop taking mail; sessions in DATA finish their commit
	httpSrv.Shutdown(shutdownCtx)
	ingester.Close()
	wg.Wait()
	slog.Info("Catchbox stopped")
	return runErr
}
