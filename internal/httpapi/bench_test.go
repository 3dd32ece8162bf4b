package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

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
