//go:build pprof

package main

import (
	"log/slog"
	"net/http"
	_ "net/http/pprof"
	"os"
)

// A build with -tags pprof serves net/http/pprof on CATCHBOX_PPROF_ADDR
// (default 127.0.0.1:6060), for profiling the server under load
// (docs/benchmarks.md, "Profiling"). Release builds do not contain it.
func init() {
	addr := os.Getenv("CATCHBOX_PPROF_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6060"
	}
	go func() {
		if err := http.ListenAndServe(addr, nil); err != nil {
			slog.Error("pprof listener failed", "err", err)
		}
	}()
}
