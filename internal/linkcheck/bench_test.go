package linkcheck

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/deliverability/dnstest"
	"github.com/catchbox/catchbox/internal/message"
)

// BenchmarkCheck100 times one run's check of 100 distinct URLs on a loopback
// server: all on one host (2 requests at once, the per-host limit), spread
// over 10 host names of a loopback DNS server (8 at once, the run's limit),
// and the same with every answer 50 ms late, as a remote server's would be.
// One URL in ten is a 404 (asked again with GET), one in ten a redirect.
// It reports the median and 99th percentile of a run.
//
//	go test -run '^$' -bench Check100 -benchtime 50x ./internal/linkcheck/
func BenchmarkCheck100(b *testing.B) {
	for _, c := range []struct {
		name  string
		hosts int
		delay time.Duration
	}{
		{"one-host", 1, 0},
		{"ten-hosts", 10, 0},
		{"one-host-50ms", 1, 50 * time.Millisecond},
		{"ten-hosts-50ms", 10, 50 * time.Millisecond},
	} {
		b.Run(c.name, func(b *testing.B) {
			delay := c.delay
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if delay > 0 {
					time.Sleep(delay)
				}
				var n int
				fmt.Sscanf(r.URL.Path, "/page/%d", &n)
				switch {
				case n%10 == 3:
					http.NotFound(w, r)
				case n%10 == 7:
					http.Redirect(w, r, "/landing", http.StatusFound)
				}
			}))
			defer srv.Close()
			_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
			var zone []string
			for h := range c.hosts {
				zone = append(zone, fmt.Sprintf("h%d.test. 60 IN A 127.0.0.1", h))
			}
			dns := dnstest.Start(b, zone...)
			res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, dns.Addr)
			}}
			targets := make([]message.Target, 100)
			for i := range targets {
				targets[i] = message.Target{URL: fmt.Sprintf("http://h%d.test:%s/page/%d", i%c.hosts, port, i)}
			}
			checker := NewChecker(CheckerConfig{AllowPrivate: true, Resolver: res})
			defer checker.Close()
			times := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				links := checker.Check(context.Background(), targets)
				times = append(times, time.Since(start))
				if links[3].StatusCode != 404 || links[7].Redirects != 1 || links[0].StatusCode != 200 {
					b.Fatalf("%+v %+v %+v", links[0], links[3], links[7])
				}
			}
			b.StopTimer()
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkTargets times reading the URLs of a newsletter-sized HTML body
// (100 links and 41 images, 22 KB).
//
//	go test -run '^$' -bench Targets ./internal/linkcheck/
func BenchmarkTargets(b *testing.B) {
	var html []byte
	html = append(html, `<html><head><style>.hero{background:url(https://cdn.example/hero.jpg)}</style></head><body><table>`...)
	for i := range 100 {
		html = fmt.Appendf(html, `<tr><td style="padding:8px;font:14px Arial"><a href="https://shop.example/p/%d?utm_source=news&amp;utm_medium=email">Product %d, with a description of it that runs on for a while</a></td>`, i, i)
		if i%5 == 0 {
			html = fmt.Appendf(html, `<td><img src="https://cdn.example/img/%d.png" srcset="https://cdn.example/img/%d@2x.png 2x" width="120" alt="Product %d"></td>`, i, i, i)
		}
		html = append(html, "</tr>\n"...)
	}
	html = append(html, `</table></body></html>`...)
	s := string(html)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for range b.N {
		if n := len(message.Targets(s, "")); n != 141 {
			b.Fatalf("%d targets", n)
		}
	}
}
