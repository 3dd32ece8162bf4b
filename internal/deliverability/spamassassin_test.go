package deliverability

import (
	"bufio"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func testSpamd(t *testing.T) *Spamd {
	t.Helper()
	addr := os.Getenv(SpamdEnv)
	if addr == "" {
		t.Skipf("%s not set: spamd tests skipped", SpamdEnv)
	}
	return &Spamd{Addr: addr, Timeout: 60 * time.Second}
}

var received = time.Date(2026, 11, 25, 9, 0, 1, 0, time.UTC)

// TestSpamAssassinGTUBE: a real spamd scores the GTUBE message as spam and a
// plain message as not.
func TestSpamAssassinGTUBE(t *testing.T) {
	sd := testSpamd(t)
	if err := sd.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	gtube := checkSpamAssassin(ctx, newEnv(input(fixture(t, "gtube.eml"), "tester@shop.test"), nil), sd, "localhost", received)
	if !gtube.Available || gtube.Score == nil || *gtube.Score < 1000 || gtube.Threshold == nil || *gtube.Threshold <= 0 || !*gtube.IsSpam {
		t.Fatalf("GTUBE: %+v", gtube)
	}
	if !slices.Equal(gtube.codes(), []string{"spamassassin_spam"}) || gtube.Status != Fail {
		t.Errorf("GTUBE codes %v status %s", gtube.codes(), gtube.Status)
	}
	if len(gtube.Rules) == 0 || gtube.Rules[0].Name != "GTUBE" || gtube.Rules[0].Score < 1000 || !strings.Contains(gtube.Rules[0].Description, "Generic Test") {
		t.Errorf("GTUBE rules %+v", gtube.Rules)
	}
	d := details(t, gtube.issue("spamassassin_spam"))
	if top := d["rules"].([]any); len(top) == 0 || top[0].(map[string]any)["name"] != "GTUBE" {
		t.Errorf("details %v", d)
	}

	plain := checkSpamAssassin(ctx, newEnv(input(fixture(t, "lunch.eml"), "alice@shop.test"), nil), sd, "localhost", received)
	if !plain.Available || plain.Score == nil || *plain.Score >= *plain.Threshold || *plain.IsSpam {
		t.Fatalf("plain: %+v", plain)
	}
	if plain.Status == Fail || plain.issue("spamassassin_spam") != nil {
		t.Errorf("plain codes %v status %s", plain.codes(), plain.Status)
	}
	v, err := sd.Check(ctx, fixture(t, "gtube.eml"))
	if err != nil || !v.IsSpam || v.Score < 1000 || len(v.Rules) != 0 {
		t.Errorf("CHECK: %+v %v", v, err)
	}
}

func TestSpamAssassinNotConfigured(t *testing.T) {
	r := checkSpamAssassin(ctx, newEnv(input(fixture(t, "lunch.eml"), ""), nil), nil, "localhost", received)
	if r.Available || r.Score != nil || !slices.Equal(r.codes(), []string{"spamassassin_not_configured"}) || r.Status != Warning {
		t.Errorf("%+v", r)
	}
	if !strings.Contains(r.Issues[0].Message, "CATCHBOX_SPAMD_ADDR") {
		t.Errorf("message %q", r.Issues[0].Message)
	}
}

// TestSpamAssassinUnavailable: a configured spamd that refuses connections,
// and one that answers nonsense, leave the section saying so.
func TestSpamAssassinUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			bufio.NewReader(c).ReadString('\n')
			c.Write([]byte("HTTP/1.0 400 Bad Request\r\n\r\n"))
			c.Close()
		}
	}()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	closed.Close()
	defer l.Close()
	for _, addr := range []string{l.Addr().String(), closedAddr} {
		r := checkSpamAssassin(ctx, newEnv(input(fixture(t, "lunch.eml"), ""), nil), &Spamd{Addr: addr, Timeout: 5 * time.Second}, "localhost", received)
		if r.Available || !slices.Equal(r.codes(), []string{"spamassassin_unavailable"}) || r.Status != Warning {
			t.Errorf("%s: %+v", addr, r)
		}
	}
	big := append(fixture(t, "lunch.eml"), make([]byte, MaxScanBytes)...)
	r := checkSpamAssassin(ctx, newEnv(input(big, ""), nil), &Spamd{Addr: closedAddr}, "localhost", received)
	if !slices.Equal(r.codes(), []string{"spamassassin_too_large"}) {
		t.Errorf("too large: %v", r.codes())
	}
}

func TestParseReport(t *testing.T) {
	body := "Content analysis details:   (6.2 points, 5.0 required)\n\n pts rule name              description\n" +
		"---- ---------------------- --------------------------------------------------\n" +
		" 3.1 FAKE_RULE_ONE          A description that goes on and on and is\n                            wrapped onto a second line\n" +
		"-0.0 NO_RELAYS              Informational: message was not relayed via SMTP\n" +
		"1000 GTUBE                  BODY: Generic Test for Unsolicited Bulk Email\n\n"
	got := parseReport(body)
	want := []SpamRule{
		{"FAKE_RULE_ONE", 3.1, "A description that goes on and on and is wrapped onto a second line"},
		{"NO_RELAYS", 0, "Informational: message was not relayed via SMTP"},
		{"GTUBE", 1000, "BODY: Generic Test for Unsolicited Bulk Email"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v", got)
	}
	v, err := parseSpamHeader(" True ; 1000.0 / 5.0")
	if err != nil || !v.IsSpam || v.Score != 1000 || v.Threshold != 5 {
		t.Errorf("%+v %v", v, err)
	}
}
