package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/deliverability/dnstest"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// The report tab requests and reads a report through deliverability's
// operations: a run abandoned by its server shows its errors, a completed
// one each section with its status and details; an email whose raw source
// was not kept is refused in the operation's words, and another
// organisation's user cannot request a report of the email.
func TestReportTab(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		dns := dnstest.Start(t, `example.com. 300 IN TXT "v=spf1 ip4:127.0.0.1 -all"`)
		e := newEnv(t, db, func(c *config.Serve) {
			c.DNSServer, c.DNSTimeout = dns.Addr, 500*time.Millisecond
			c.DNSBLIPZones, c.DNSBLDomainZones = "zen.test", "dbl.test"
		})
		ctx := context.Background()
		b := e.browser()
		b.signIn("alice@example.com")
		request := func(id string) {
			t.Helper()
			if p := b.post("/emails/"+id+"/report", nil); p.status != http.StatusSeeOther {
				t.Fatalf("request the report of %s: %d %s", id, p.status, p.body)
			}
		}

		abandoned := e.deliver("default", mail("Abandoned", "hello"))
		request(abandoned)
		mustContain(t, b.get("/emails/"+abandoned+"?tab=report"), `Report <span class="badge">pending</span>`, "The checks are running")
		d := e.svc.Deliverability
		d.Now = func() time.Time { return time.Now().Add(11 * time.Minute) }
		if err := d.Prune(ctx); err != nil {
			t.Fatal(err)
		}
		d.Now = time.Now
		mustContain(t, b.get("/emails/"+abandoned+"?tab=report"), `Report <span class="badge">failed</span>`,
			`[{&#34;code&#34;:&#34;report_abandoned&#34;,&#34;message&#34;:&#34;The report&#39;s run stopped before it finished`)

		bob := e.browser()
		bob.signIn("bob@example.com")
		if p := bob.post("/emails/"+abandoned+"/report", nil); p.status != http.StatusNotFound {
			t.Fatalf("bob requests a report of alice's email: %d", p.status)
		}

		id := e.deliver("default", mail("Report me", "hello"))
		request(id)
		servertest.StartJobs(t, e.svc)
		p := testkit.Await(t, "the report tab to show a completed report", func() (string, bool) {
			p := b.get("/emails/" + id + "?tab=report")
			return p.body, strings.Contains(p.body, `Report <span class="badge">completed</span>`)
		})
		for _, s := range []string{"spf", "dkim", "dmarc", "blocklists", "content", "dns"} {
			if !strings.Contains(p, "<h3>"+s+" <span class=\"badge") || !strings.Contains(p, `aria-label="`+s+` details"`) {
				t.Errorf("the completed report lacks its %s section", s)
			}
		}
		mustContain(t, page{body: p}, "overall <span class=\"badge", "&#34;client_ip&#34;: &#34;127.0.0.1&#34;")

		off := false
		if _, err := e.svc.Tenants.UpsertNamespace(ctx, e.org.ID, "noraw", tenant.Settings{CaptureRawEmail: &off}); err != nil {
			t.Fatal(err)
		}
		noraw := e.deliver("noraw", mail("Not kept", "hello"))
		refused := b.post("/emails/"+noraw+"/report", nil)
		if refused.status != http.StatusConflict {
			t.Fatalf("a report of an email without its raw source: %d %s", refused.status, refused.body)
		}
		mustContain(t, refused, "the raw source of this email was not kept")
	})
}
