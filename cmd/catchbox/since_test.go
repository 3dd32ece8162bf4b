package main

import (
	"context"
	"net/smtp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/client"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// TestParseSince: RFC 3339, Unix seconds (a fraction too), or a duration back
// from the start; nothing given is 30 s back; anything else is refused with
// the flag's name.
func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"", now.Add(-30 * time.Second)},
		{"5m", now.Add(-5 * time.Minute)},
		{"0s", now},
		{"1795579364", time.Unix(1795579364, 0)},
		{"1795579364.5", time.Unix(1795579364, 500_000_000)},
		{"0", time.Unix(0, 0)},
		{"2026-11-27T09:00:00Z", now.Add(-time.Hour)},
		{"2026-11-27T10:00:00.250+01:00", now.Add(-time.Hour + 250*time.Millisecond)},
	} {
		got, err := parseSince(c.in, now)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"yesterday", "-5m", "-1", "2026-11-27", "NaN"} {
		if _, err := parseSince(in, now); err == nil || !strings.Contains(err.Error(), "--since") {
			t.Errorf("parseSince(%q) = %v; want an error naming --since", in, err)
		}
	}
}

// TestWaitIgnoresOldMail is the CI mistake a wait must not hide: a second run
// of a job that sent nothing must not pass on the mail the first run left.
// catchbox wait and sms wait run twice against the same mail and SMS: the
// first passes; the second, started more than 30 s after they arrived, exits 1
// by default, and passes with --since set before them (RFC 3339, Unix seconds,
// or a duration). Without --since the commands leave the default to the Go
// client's WaitForEmail and WaitForSMS, so this proves their rule too.
func TestWaitIgnoresOldMail(t *testing.T) {
	s := serve(t, storetest.URL(t, store.SQLite))
	const phone = "+15550004444"
	if _, errOut, status := s.run(t, "admin", "sms-number", "add", "--org", "default", "--phone", phone); status != 0 {
		t.Fatalf("sms-number add: %d %s", status, errOut)
	}
	before := time.Now().Add(-time.Second)
	if err := smtp.SendMail(s.smtp, nil, "app@example.org", []string{"ci@default.localhost"},
		[]byte("Subject: Your code\r\n\r\nYour code is 318450\r\n")); err != nil {
		t.Fatal(err)
	}
	sms, err := s.client(t).SendVirtualSMS(context.Background(), client.VirtualSMS{FromNumber: "+447700900123", ToNumber: phone, Body: "Code 662019"})
	if err != nil {
		t.Fatal(err)
	}
	mailArgs := []string{"wait", "--namespace", "default", "--to", "ci@", "--code", "--timeout", "2s"}
	smsArgs := []string{"sms", "wait", "--number", phone, "--code", "--timeout", "2s"}
	if out, errOut, status := s.run(t, mailArgs...); status != 0 || out != "318450\n" {
		t.Fatalf("first wait: %d %q %q", status, out, errOut)
	}
	if out, errOut, status := s.run(t, smsArgs...); status != 0 || out != "662019\n" {
		t.Fatalf("first sms wait: %d %q %q", status, out, errOut)
	}

	// The next run of the job starts when the mail is more than 30 s old
	// (the window counts whole seconds: 32 s leave no doubt).
	time.Sleep(time.Until(sms.CreatedAt.Add(32 * time.Second)))
	for _, args := range [][]string{mailArgs, smsArgs} {
		out, errOut, status := s.run(t, args...)
		if status != 1 || out != "" || !strings.Contains(errOut, "--since looks further back") {
			t.Errorf("%v on old mail: %d %q %q; want exit status 1", args[:2], status, out, errOut)
		}
	}
	for _, since := range []string{before.UTC().Format(time.RFC3339), strconv.FormatInt(before.Unix(), 10), "10m"} {
		if out, errOut, status := s.run(t, append(mailArgs, "--since", since)...); status != 0 || out != "318450\n" {
			t.Errorf("wait --since %s: %d %q %q", since, status, out, errOut)
		}
		if out, errOut, status := s.run(t, append(smsArgs, "--since", since)...); status != 0 || out != "662019\n" {
			t.Errorf("sms wait --since %s: %d %q %q", since, status, out, errOut)
		}
	}
}
