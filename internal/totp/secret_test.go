package totp_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/totp"
)

// TestSecretsNeverInClear drives every endpoint, successes and failures, with
// random secrets, then looks for those secrets (raw, and in Base32 as sent and
// canonical) in every response, in every log line, and in every column of the
// device table.
func TestSecretsNeverInClear(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prev := slog.Default()
		slog.SetDefault(slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
		t.Cleanup(func() { slog.SetDefault(prev) })

		var needles [][]byte
		fresh := func() string {
			raw := make([]byte, 20)
			rand.Read(raw)
			b32 := totp.EncodeSecret(raw)
			sent := strings.ToLower(b32[:8]) + " " + b32[8:] // as a person might paste it
			needles = append(needles, raw, []byte(b32), []byte(strings.ToLower(b32)), []byte(sent))
			return sent
		}
		var seen bytes.Buffer
		record := func(r response) {
			for k, v := range r.header {
				fmt.Fprintf(&seen, "%s: %s\n", k, v)
			}
			seen.Write(r.body)
			seen.WriteByte('\n')
		}

		var ids []string
		for _, c := range []struct {
			path, field string
			extra       map[string]any
		}{
			{"/api/devices", "shared_secret", nil},
			{"/api/devices/custom", "secret", map[string]any{"digits": 8, "algorithm": "SHA512", "issuer": "Acme", "username": "alice"}},
			{"/api/devices/base32-secret-key", "base32_secret_key", map[string]any{"period": 60}},
		} {
			body := map[string]any{c.field: fresh()}
			for k, v := range c.extra {
				body[k] = v
			}
			r := e.call("POST", c.path, e.key, body)
			record(r)
			ids = append(ids, r.json(t)["id"].(string))
		}
		r := e.call("POST", "/api/devices/otpauth-url", e.key, map[string]any{
			"otp_auth_url": "otpauth://totp/Acme:bob?issuer=Acme&secret=" + strings.ReplaceAll(fresh(), " ", "")})
		record(r)
		ids = append(ids, r.json(t)["id"].(string))

		record(e.call("POST", "/api/devices/otp", e.key, map[string]any{"shared_secret": fresh()}))
		record(e.call("GET", "/api/devices", e.key, nil))
		for _, id := range ids {
			record(e.call("GET", "/api/devices/"+id, e.key, nil))
			record(e.call("GET", "/api/devices/"+id+"/otp", e.key, nil))
		}
		// Failures carrying a secret: each must be refused without quoting it.
		valid := fresh()
		invalid := "SECRETMARK1" + strings.ReplaceAll(fresh(), " ", "")
		needles = append(needles, []byte(invalid))
		for _, c := range []struct {
			path string
			body any
		}{
			{"/api/devices", map[string]any{"shared_secret": invalid}},
			{"/api/devices/custom", map[string]any{"secret": valid, "digits": 7}},
			{"/api/devices/otp", map[string]any{"shared_secret": valid, "digits": 8}},
			{"/api/devices/otp", map[string]any{"shared_secret": valid, "min_seconds_until_expire": 30}},
			{"/api/devices/otpauth-url", map[string]any{"otp_auth_url": "otpauth://totp/x?digits=7&secret=" + strings.ReplaceAll(valid, " ", "")}},
			{"/api/devices/otpauth-url", map[string]any{"otp_auth_url": "otpauth://hotp/x?secret=" + strings.ReplaceAll(valid, " ", "")}},
			{"/api/devices/otpauth-url", map[string]any{"otp_auth_url": "otpauth://totp/%zz?secret=" + strings.ReplaceAll(valid, " ", "")}},
			{"/api/devices/otpauth-url", map[string]any{"otp_auth_url": "otpauth://totp/x?secret=" + invalid}},
			{"/api/devices/custom", `{"secret":"` + valid + `","digits":"8"}`},
			{"/api/devices", `{"shared_secret":"` + valid + `",`},
		} {
			r := e.call("POST", c.path, e.key, c.body)
			if r.status != 400 {
				t.Errorf("POST %s: status %d, want 400", c.path, r.status)
			}
			record(r)
		}
		for _, id := range ids {
			record(e.call("DELETE", "/api/devices/"+id, e.key, nil))
			break // one deleted, the rest stay for the column scan
		}

		columns := scanColumns(t, db)
		if columns.Len() == 0 {
			t.Fatal("no device rows to scan")
		}
		for name, hay := range map[string][]byte{"responses": seen.Bytes(), "logs": []byte(e.logs.String()), "columns": columns.Bytes()} {
			for _, n := range needles {
				if bytes.Contains(hay, n) {
					t.Errorf("%s hold a secret in clear (%d bytes)", name, len(n))
				}
			}
		}
		if !strings.Contains(e.logs.String(), "Saved TOTP device") {
			t.Fatal("the log capture saw nothing: the scan would prove nothing")
		}
	})
}

// scanColumns returns every value of every column of every device row.
func scanColumns(t *testing.T, db *store.DB) *bytes.Buffer {
	t.Helper()
	rows, err := db.Query(context.Background(), "SELECT * FROM totp_devices")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			switch v := v.(type) {
			case []byte:
				out.Write(v)
			case string:
				out.WriteString(v)
			default:
				fmt.Fprint(&out, v)
			}
			out.WriteByte(0)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return &out
}
