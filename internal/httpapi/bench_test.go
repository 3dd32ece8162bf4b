package httpapi_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/metrics"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// BenchmarkLimits is the cost of the request limits on a request through the
// whole handler (route table, key lookup in SQLite, handler), without a
// network: "off" with every limit off (the middleware not installed), "on"
// with limits so high that every request passes them. Requests come from 64
// client addresses, one key, in parallel.
func BenchmarkLimits(b *testing.B) {
	for _, v := range []struct {
		name string
		rate float64
	}{{"off", 0}, {"on", 1e9}} {
		cfg := servertest.Config(b)
		cfg.RateLimitKey, cfg.RateLimitIP, cfg.RateLimitKeyBurst, cfg.RateLimitIPBurst = v.rate, v.rate, 1e9, 1e9
		if v.rate == 0 {
			cfg.AuthFailureLimit = 0
		}
		svc := servertest.New(b, storetest.Open(b, store.SQLite), cfg)
		key := svc.NewKey
		for _, path := range []string{"/api/test", "/healthz"} {
			b.Run(v.name+path, func(b *testing.B) {
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						r := httptest.NewRequest(http.MethodGet, path, nil)
						r.RemoteAddr = remoteAddrs[i%len(remoteAddrs)]
						r.Header.Set("X-Api-Key", key)
						w := httptest.NewRecorder()
						svc.Handler.ServeHTTP(w, r)
						if w.Code != http.StatusOK {
							b.Fatalf("%s: %d %s", path, w.Code, w.Body)
						}
						i++
					}
				})
			})
		}
	}
}

var remoteAddrs = func() []string {
	out := make([]string, 64)
	for i := range out {
		out[i] = "192.0.2." + string(rune('0'+i/10)) + string(rune('0'+i%10)) + ":40000"
	}
	return out
}()

// cpuTime is the CPU time the process has used (user and system): on a
// machine shared with other work, the CPU a request costs is steadier than
// its wall time, which mostly measures the wait for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkObserve is the cost of the access log and the metrics on a
// request through the whole handler, without a network: "off" with both off
// (CATCHBOX_ACCESS_LOG=false CATCHBOX_METRICS=false), "on" with both on, the
// log written as JSON to a file. Besides ns/op it reports cpu-ns/op, the
// process's CPU time per request (the metric to compare on a loaded machine).
// The requests are a keyed inbox search of a namespace of 200 emails and GET
// /healthz, in parallel. Both services are built first; with -count the
// order of the variants alternates from one count to the next.
func BenchmarkObserve(b *testing.B) {
	logFile, err := os.Create(filepath.Join(b.TempDir(), "log.json"))
	if err != nil {
		b.Fatal(err)
	}
	saved := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(logFile, nil)))
	b.Cleanup(func() { slog.SetDefault(saved); logFile.Close(); metrics.SetEnabled(true) })
	type variant struct {
		name string
		on   bool
		svc  *server.Service
	}
	vs := []*variant{{name: "off"}, {name: "on", on: true}}
	if observeRuns++; observeRuns%2 == 0 {
		vs[0], vs[1] = vs[1], vs[0]
	}
	for _, v := range vs {
		cfg := servertest.Config(b)
		cfg.RateLimitKey, cfg.RateLimitIP = 0, 0
		cfg.AccessLog, cfg.Metrics = v.on, v.on
		v.svc = servertest.New(b, storetest.Open(b, store.SQLite), cfg)
		ns, _ := v.svc.Tenants.NamespaceByName(context.Background(), "default")
		for i := range 200 {
			to := fmt.Sprintf("user%04d@default.localhost", i)
			raw := fmt.Sprintf("From: a@example.org\r\nTo: %s\r\nSubject: message %d\r\n\r\nbody\r\n", to, i)
			if _, err := v.svc.Ingester.Deliver(context.Background(), []byte(raw), inbox.Envelope{MailFrom: "a@example.org"},
				[]inbox.Target{{Namespace: ns, Recipients: []string{to}}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, path := range []string{"/api/emails/default/inbox?to_addr_prefix=user0042@", "/healthz"} {
		for _, v := range vs {
			b.Run(v.name+strings.SplitN(path, "?", 2)[0], func(b *testing.B) {
				metrics.SetEnabled(v.on) // process-wide: set for the variant that runs
				cpu0 := cpuTime()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						r := httptest.NewRequest(http.MethodGet, path, nil)
						r.Header.Set("X-Api-Key", v.svc.NewKey)
						w := httptest.NewRecorder()
						v.svc.Handler.ServeHTTP(w, r)
						if w.Code != http.StatusOK {
							b.Fatalf("%s: %d %s", path, w.Code, w.Body)
						}
					}
				})
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// observeRuns counts BenchmarkObserve's runs, to alternate its order.
var observeRuns int
