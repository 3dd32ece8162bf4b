package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/catchbox/catchbox/internal/metrics"
)

// metricsHandler serves GET /metrics: the process's families (metrics.Registry)
// and this service's gauges read from the store at each scrape.
func (s *Service) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&storeCollector{s: s})
	return promhttp.HandlerFor(prometheus.Gatherers{metrics.Registry, reg}, promhttp.HandlerOpts{
		ErrorLog:      slogPrinter{},
		ErrorHandling: promhttp.ContinueOnError, // a failed store read leaves its gauges out, not the page
		Timeout:       10 * time.Second,
	})
}

// storeCollector reads, at each scrape, what lives in the store: the job
// queue's depth by kind and state, and the store's size.
type storeCollector struct{ s *Service }

var (
	jobsDesc = prometheus.NewDesc("catchbox_jobs", "Background jobs in the queue (shared by every replica), by kind and state: pending, running, done, dead, cancelled.",
		[]string{"kind", "state"}, nil)
	storeSizeDesc = prometheus.NewDesc("catchbox_store_size_bytes", "Size of the store on disk: the SQLite file, or the PostgreSQL database.", nil, nil)
)

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- jobsDesc
	ch <- storeSizeDesc
}

// scrapeTimeout bounds the store reads of one scrape.
const scrapeTimeout = 5 * time.Second

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	counts, err := c.s.Jobs.Counts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(jobsDesc, err)
	}
	for _, n := range counts {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(n.Jobs), n.Kind, string(n.State))
	}
	size, err := c.s.DB.Size(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(storeSizeDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(storeSizeDesc, prometheus.GaugeValue, float64(size))
}

// slogPrinter routes promhttp's error log to slog.
type slogPrinter struct{}

func (slogPrinter) Println(v ...any) { slog.Warn("Serving metrics", "err", fmt.Sprint(v...)) }

// errNotReady is what GET /readyz tells a client; the cause is logged.
var errNotReady = errors.New("the store is unreachable")

// ready reports whether the service can serve: its store answers, and has
// every migration of this build (a replica of a newer build started against
// a store an older one migrated is not ready until it has migrated it).
func (s *Service) ready(ctx context.Context) error {
	pending, err := s.DB.PendingMigrations(ctx)
	if err != nil {
		slog.Warn("Readiness check: the store did not answer", "err", err)
		return errNotReady
	}
	if pending > 0 {
		return fmt.Errorf("%d store migrations are pending", pending)
	}
	return nil
}
