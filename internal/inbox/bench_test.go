package inbox_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/message"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

func benchMessage(large bool) []byte {
	var b strings.Builder
	b.WriteString("From: Bench <bench@example.com>\r\nTo: user@default.localhost\r\nSubject: bench message\r\nMIME-Version: 1.0\r\n")
	if !large {
		b.WriteString("Content-Type: text/plain; charset=utf-8\r\n\r\n")
		b.WriteString(strings.Repeat("The quick brown fox jumps over the lazy dog.\r\n", 22))
		return []byte(b.String())
	}
	b.WriteString("Content-Type: multipart/mixed; boundary=BOUND\r\n\r\n--BOUND\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n")
	b.WriteString(strings.Repeat("The quick brown fox jumps over the lazy dog.\r\n", 200))
	b.WriteString("--BOUND\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=data.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n")
	data := make([]byte, 40<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	enc := base64.StdEncoding.EncodeToString(data)
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\r\n--BOUND--\r\n")
	return []byte(b.String())
}

// BenchmarkDeliver measures durable ingest (parse + group commit) with parallel
// senders, as the SMTP listener drives it.
func BenchmarkDeliver(b *testing.B) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		for _, large := range []bool{false, true} {
			name := fmt.Sprintf("%s/small", d)
			if large {
				name = fmt.Sprintf("%s/large", d)
			}
			b.Run(name, func(b *testing.B) {
				db := storetest.Open(b, d)
				ctx := context.Background()
				in := inbox.NewIngester(db, notify.NewHub())
				defer in.Close()
				ns := benchNamespace(b, db)
				raw := benchMessage(large)
				b.SetBytes(int64(len(raw)))
				b.SetParallelism(4) // 4 x GOMAXPROCS senders, like 8 SMTP connections on 2 cores
				var n atomic.Int64
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						n.Add(1)
						if _, err := in.Deliver(ctx, raw, inbox.Envelope{ClientIP: "127.0.0.1"}, []inbox.Target{{Namespace: ns, Recipients: []string{"user@default.localhost"}}}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkParse measures message.Parse on the two messages of BenchmarkDeliver,
// the share of ingest that is reading MIME.
func BenchmarkParse(b *testing.B) {
	for _, large := range []bool{false, true} {
		raw := benchMessage(large)
		b.Run(fmt.Sprintf("large=%v", large), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for i := 0; i < b.N; i++ {
				message.Parse(raw)
			}
		})
	}
}

func benchNamespace(b *testing.B, db *store.DB) tenant.Namespace {
	b.Helper()
	ts := tenant.NewService(db, secret.New([]byte("bench-secret-key-0123456789")), 720*time.Hour)
	if _, err := ts.Bootstrap(context.Background(), ""); err != nil {
		b.Fatal(err)
	}
	ns, err := ts.NamespaceByName(context.Background(), "default")
	if err != nil {
		b.Fatal(err)
	}
	return ns
}
