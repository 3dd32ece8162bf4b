package outbound_test

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// BenchmarkReturnOverSMTP delivers Postfix DSNs over one SMTP connection to
// the return paths of b.N outbound emails (two recipients each) of the whole
// service, and reports the time from DATA's end to the 250, which comes once
// the bounced event and the suppression are committed: p50 and p99.
func BenchmarkReturnOverSMTP(b *testing.B) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		b.Run(d.String(), func(b *testing.B) {
			db := storetest.Open(b, d)
			svc := servertest.New(b, db, servertest.Config(b))
			ctx := context.Background()
			org, err := svc.Tenants.OrgByName(ctx, tenant.DefaultName)
			if err != nil {
				b.Fatal(err)
			}
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			go svc.SMTP.Serve(l)
			b.Cleanup(func() { svc.SMTP.Shutdown(context.Background()) })

			type sent struct {
				rp  string
				raw []byte
			}
			var mails []sent
			for range b.N {
				in := message(org.ID, "Your order", to("mary@example.org", false), to("joe@example.org", false))
				if err := db.InTx(ctx, func(tx *store.Tx) error {
					_, err := svc.Outbound.Store.Create(ctx, tx, in)
					return err
				}); err != nil {
					b.Fatal(err)
				}
				rp := svc.Outbound.Routes.ReturnPath(svc.Key, in.ID)
				mails = append(mails, sent{rp, sample(b, "postfix-bounce.eml", rp, "mary@example.org", in.MessageID)})
			}
			c, err := smtp.Dial(l.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			if err := c.Hello("mx1.example.net"); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for _, m := range mails {
				if err := c.Mail("", nil); err != nil {
					b.Fatal(err)
				}
				if err := c.Rcpt(m.rp, nil); err != nil {
					b.Fatal(err)
				}
				w, err := c.Data()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := w.Write(m.raw); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			var n int
			if err := db.QueryRow(ctx, "SELECT COUNT(*) FROM outbound_events WHERE event_type = 'bounced'").Scan(&n); err != nil || n != b.N {
				b.Fatalf("%d bounced events (%v), want %d", n, err, b.N)
			}
		})
	}
}
