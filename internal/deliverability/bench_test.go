package deliverability

import (
	"bytes"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/catchbox/catchbox/internal/deliverability/dnstest"
)

// BenchmarkAnalyze times whole reports of a signed message against the DNS
// server of test zones on loopback (and the test spamd when
// CATCHBOX_TEST_SPAMD_ADDR is set), and reports the median and 99th
// percentile of one report's time.
//
//	go test -run '^$' -bench Analyze -benchtime 200x ./internal/deliverability/
func BenchmarkAnalyze(b *testing.B) {
	srv := dnstest.Start(b, testZones()...)
	a := &Analyzer{Resolver: NewResolver(srv.Addr, 2*time.Second), Zones: Zones{IP: []string{"zen.test"}, Domain: []string{"dbl.test"}}, ByHost: "localhost"}
	if addr := os.Getenv(SpamdEnv); addr != "" {
		a.Spamd = &Spamd{Addr: addr, Timeout: time.Minute}
	}
	var buf bytes.Buffer
	plain, err := os.ReadFile("testdata/plain.eml")
	if err != nil {
		b.Fatal(err)
	}
	if err := dkim.Sign(&buf, bytes.NewReader(crlf(string(plain))), &dkim.SignOptions{Domain: "shop.test", Selector: "r2048", Signer: keys().rsa2048}); err != nil {
		b.Fatal(err)
	}
	raw := buf.Bytes()
	in := Input{Raw: raw, ClientIP: clientIP, Helo: clientHelo, MailFrom: "bounce@shop.test"}
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		r := a.Analyze(ctx, in, received)
		times = append(times, time.Since(start))
		if r.SPF.Result != "pass" || r.DKIM.Signatures[0].Result != "pass" {
			b.Fatalf("spf %s dkim %s", r.SPF.Result, r.DKIM.Signatures[0].Result)
		}
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[(len(times)*99)/100].Microseconds())/1000, "p99-ms")
}
