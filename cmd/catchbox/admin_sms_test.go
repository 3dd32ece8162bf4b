package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/sms"
)

// captureStdout runs fn and returns what it printed.
func captureStdout(t *testing.T, fn func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	out := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()
	runErr := fn()
	os.Stdout = saved
	w.Close()
	return <-out, runErr
}

func TestAdminSMSNumberAdd(t *testing.T) {
	a := &adminCmd{Store: config.Store{DataDir: t.TempDir()}, RetentionMax: 720 * time.Hour, Create: true}
	if _, err := captureStdout(t, func() error { return (&orgCreateCmd{Name: "acme", TOTPEnabled: true}).Run(a) }); err != nil {
		t.Fatal(err)
	}

	out, err := captureStdout(t, func() error {
		return (&smsNumberAddCmd{Org: "acme", Phone: "1 (555) 000-1111"}).Run(a)
	})
	if err != nil || !strings.HasPrefix(out, "Added SMS number +15550001111 (id ") || !strings.Contains(out, "active, US") {
		t.Fatalf("plain output %q, %v", out, err)
	}

	a.JSON = true
	out, err = captureStdout(t, func() error {
		return (&smsNumberAddCmd{Org: "acme", Country: "gb", Status: "requested", Test: true}).Run(a)
	})
	if err != nil {
		t.Fatal(err)
	}
	var n map[string]any
	if err := json.Unmarshal([]byte(out), &n); err != nil {
		t.Fatalf("--json output %q: %v", out, err)
	}
	if n["status"] != "requested" || n["country"] != "GB" || n["is_test_number"] != true || n["phone_number"] != nil || n["id"] == "" {
		t.Fatalf("--json printed %v", n)
	}

	for _, c := range []*smsNumberAddCmd{
		{Org: "acme", Phone: "+15550001111"},                      // taken
		{Org: "acme", Phone: "+15550002222", Status: "requested"}, // requested has no phone
		{Org: "acme", Phone: "+15550002222", Status: "paused"},    // unknown status
		{Org: "nobody", Phone: "+15550002222"},                    // unknown organisation
	} {
		if _, err := captureStdout(t, func() error { return c.Run(a) }); err == nil {
			t.Errorf("%+v was accepted", *c)
		}
	}

	db, err := server.OpenStore(context.Background(), a.Store)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := sms.NewService(db, nil, 0, nil).NumberByPhone(context.Background(), "+15550001111")
	if err != nil || got.Status != sms.StatusActive || got.Country != "US" {
		t.Fatalf("stored %+v, %v", got, err)
	}
}
