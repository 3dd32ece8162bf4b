package totp_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/totp"
)

// BenchmarkOTP measures the code of a saved device: the bare RFC 6238 computation,
// the service call (read the row, open the sealed secret, compute), and a full
// HTTP request (API-key lookup, routing, JSON) on each store.
//
//	go test -run '^$' -bench OTP -cpu 1 ./internal/totp/
func BenchmarkOTP(b *testing.B) {
	key, _ := totp.DecodeSecret(testSecret)
	b.Run("generate", func(b *testing.B) {
		now := time.Now()
		for b.Loop() {
			totp.Generate(key, totp.DefaultParams, now)
		}
	})
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		b.Run(d.String(), func(b *testing.B) {
			built := servertest.New(b, storetest.Open(b, d), servertest.Config(b))
			ctx := context.Background()
			tn, svc := built.Tenants, built.TOTP
			svc.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
			org, err := tn.CreateOrg(ctx, "bench", 100, true)
			if err != nil {
				b.Fatal(err)
			}
			_, apiKey, err := tn.CreateKey(ctx, org.ID, "bench", "")
			if err != nil {
				b.Fatal(err)
			}
			dev, err := svc.Create(ctx, org.ID, totp.NewDevice{Secret: key, Params: totp.DefaultParams, Source: totp.SourceSharedSecret})
			if err != nil {
				b.Fatal(err)
			}

			b.Run("service", func(b *testing.B) {
				for b.Loop() {
					if _, err := svc.DeviceOTP(ctx, org.ID, dev.ID, 0); err != nil {
						b.Fatal(err)
					}
				}
			})

			b.Run("http", func(b *testing.B) {
				srv := servertest.Serve(b, built)
				client := srv.Client()
				url := srv.URL + "/api/devices/" + dev.ID + "/otp"
				for b.Loop() {
					req, _ := http.NewRequest("GET", url, nil)
					req.Header.Set("X-Api-Key", apiKey)
					res, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusOK {
						b.Fatalf("status %d", res.StatusCode)
					}
				}
			})
		})
	}
}
