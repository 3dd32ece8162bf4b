package server_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/smtp"
	"regexp"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// TestLocalModeStart: a start with the defaults (an HTTP listener on
// loopback, no public URL) is in local mode and says so; mail to an address
// of no namespace is caught in the default namespace with its address; the
// sign-in link it prints signs a browser in as the default organisation's
// owner once, and takes it to the caught mail's inbox. A later start prints a
// new link and no key.
func TestLocalModeStart(t *testing.T) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(d.String(), func(t *testing.T) {
			cfg := servertest.Config(t)
			cfg.DatabaseURL = storetest.URL(t, d)
			cfg.HTTPAddr, cfg.SMTPAddr = "127.0.0.1:0", "127.0.0.1:0"
			var out bytes.Buffer
			run := start(t, cfg, &out)
			if !strings.Contains(out.String(), "ready in local mode") {
				t.Errorf("the start does not name its mode: %q", out.String())
			}
			key := regexpKey(t, out.String())

			msg := "From: app@example.org\r\nTo: someone@example.com\r\nSubject: Caught\r\n\r\nhello\r\n"
			if err := smtp.SendMail(run.ready.SMTPAddrs[0], nil, "app@example.org", []string{"someone@example.com"}, []byte(msg)); err != nil {
				t.Fatalf("send to someone@example.com: %v", err)
			}
			var latest struct {
				Data struct {
					Subject string
					To      []struct{ Address string }
				}
			}
			run.get(t, key, "/api/emails/default/latest", &latest)
			if latest.Data.Subject != "Caught" || len(latest.Data.To) != 1 || latest.Data.To[0].Address != "someone@example.com" {
				t.Errorf("the default namespace's latest email: %+v", latest.Data)
			}

			link := signInLink(t, out.String())
			noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := noFollow.Get(link)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			var session *http.Cookie
			for _, c := range resp.Cookies() {
				if c.Name == tenant.SessionCookie {
					session = c
				}
			}
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/inboxes/default" || session == nil {
				t.Fatalf("following the link: %s, Location %q, session %v", resp.Status, resp.Header.Get("Location"), session)
			}
			req, _ := http.NewRequest(http.MethodGet, run.ready.PublicURL+"/inboxes/default", nil)
			req.AddCookie(session)
			page, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, page)
			if page.StatusCode != http.StatusOK || !strings.Contains(body, "Caught") {
				t.Errorf("the inbox page after the link: %s\n%s", page.Status, body)
			}
			again, err := noFollow.Get(link)
			if err != nil {
				t.Fatal(err)
			}
			if body := readAll(t, again); again.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "expired or was already used") {
				t.Errorf("the link a second time: %s", again.Status)
			}
			run.cancel()
			run.wait(t)

			out.Reset()
			start(t, cfg, &out) // stopped when the test ends
			if strings.Contains(out.String(), "cbx_") || signInLink(t, out.String()) == link {
				t.Errorf("a later start printed %q: want a new link and no key", out.String())
			}
		})
	}
}

// TestServerModeStart: in server mode nothing is caught, mail to an address
// of no namespace is refused with a 550 that names the accepted form, and no
// sign-in link is printed; the first start made the default organisation's
// owner all the same, for catchbox admin signin-link.
func TestServerModeStart(t *testing.T) {
	cfg := servertest.Config(t)
	cfg.HTTPAddr, cfg.SMTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Mode.Mode = config.Server
	var out bytes.Buffer
	run := start(t, cfg, &out)
	if !strings.Contains(out.String(), "ready in server mode") || strings.Contains(out.String(), "/signin/link/") {
		t.Errorf("server mode start printed %q", out.String())
	}
	regexpKey(t, out.String())
	err := smtp.SendMail(run.ready.SMTPAddrs[0], nil, "app@example.org", []string{"someone@example.com"}, []byte("Subject: x\r\n\r\nx\r\n"))
	if err == nil || !strings.Contains(err.Error(), "550") || !strings.Contains(err.Error(), "5.1.1") ||
		!strings.Contains(err.Error(), "<anything>@<namespace>.localhost") {
		t.Errorf("send to someone@example.com in server mode: %v", err)
	}
	db, err := server.OpenStore(context.Background(), cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	owner, err := tenant.NewService(db, nil, 0).UserByEmail(context.Background(), tenant.OwnerEmail)
	if err != nil || owner.ID == "" {
		t.Errorf("no owner after a first start in server mode: %v", err)
	}
}

// TestCatchAllNamespaceAtStart: a catch-all namespace that does not exist is
// created in the default organisation at start; with no default organisation
// to create it in, the start is refused with an error naming the setting, as
// is a name no namespace may take.
func TestCatchAllNamespaceAtStart(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		cfg := servertest.Config(t)
		cfg.CatchAll = "ci-catch"
		s := servertest.New(t, db, cfg)
		ns, err := s.Tenants.NamespaceByName(context.Background(), "ci-catch")
		def, _ := s.Tenants.OrgByName(context.Background(), tenant.DefaultName)
		if err != nil || ns.OrgID != def.ID || s.CatchAll != "ci-catch" {
			t.Errorf("catch-all namespace: %+v, %v", ns, err)
		}

		cfg.CatchAll = "Not_A_Name"
		var se *config.SettingError
		if _, err := server.New(context.Background(), cfg, db); !errors.As(err, &se) || se.Flags[0] != "catch-all" {
			t.Errorf("an invalid catch-all name: %v", err)
		}
	})
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		cfg := servertest.Config(t)
		cfg.CatchAll = "elsewhere"
		servertest.New(t, db, servertest.Config(t)) // makes the default organisation
		if _, err := db.Exec(ctx, "UPDATE orgs SET name = 'renamed' WHERE name = 'default'"); err != nil {
			t.Fatal(err)
		}
		var se *config.SettingError
		_, err := server.New(ctx, cfg, db)
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "no organisation \"default\"") {
			t.Errorf("a catch-all namespace with nowhere to create it: %v", err)
		}
	})
}

// signInLink returns the one-time sign-in link a local-mode start printed.
func signInLink(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`http://\S+/signin/link/\S+`).FindString(out)
	if m == "" {
		t.Fatalf("no sign-in link printed: %q", out)
	}
	return m
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
