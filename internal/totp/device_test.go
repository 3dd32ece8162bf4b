package totp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/totp"
)

func TestDeviceShapeAndDefaults(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		r := e.call("POST", "/api/devices", e.key, map[string]any{"shared_secret": "jbsw y3dp-ehpk 3pxp=="})
		if r.status != http.StatusCreated {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		d := r.json(t)
		var keys []string
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if got, want := strings.Join(keys, ","), "algorithm,created_at,digits,expires_at,id,issuer,name,organisation_id,period,source,updated_at,username"; got != want {
			t.Fatalf("fields %s, want %s", got, want)
		}
		want := map[string]any{"organisation_id": e.org.ID, "name": "Authenticator", "username": nil, "issuer": nil,
			"digits": 6.0, "period": 30.0, "algorithm": "SHA1", "source": "shared_secret", "expires_at": nil,
			"created_at": httpx.Time(start), "updated_at": httpx.Time(start)}
		for k, v := range want {
			if d[k] != v {
				t.Errorf("%s = %#v, want %#v", k, d[k], v)
			}
		}
		if loc := r.header.Get("Location"); loc != "/api/devices/"+d["id"].(string) {
			t.Errorf("Location %q", loc)
		}

		// GET one device answers the same object.
		one := e.call("GET", "/api/devices/"+d["id"].(string), e.key, nil)
		if one.status != http.StatusOK || one.json(t)["id"] != d["id"] || one.json(t)["name"] != "Authenticator" {
			t.Fatalf("GET device: %d %s", one.status, one.body)
		}

		// Every creation endpoint, its source and defaults; camelCase spellings accepted.
		exp := httpx.Time(start.Add(48 * time.Hour))
		c := e.create("/api/devices/custom", map[string]any{"secret": testSecret, "username": " alice ", "issuer": "Acme",
			"digits": 8, "period": 60, "algorithm": "SHA256", "expiresAt": exp})
		for k, v := range map[string]any{"source": "custom", "name": "Acme (alice)", "username": "alice", "digits": 8.0,
			"period": 60.0, "algorithm": "SHA256", "expires_at": exp} {
			if c[k] != v {
				t.Errorf("custom %s = %#v, want %#v", k, c[k], v)
			}
		}
		b := e.create("/api/devices/base32-secret-key", map[string]any{"base32SecretKey": testSecret, "issuer": "Acme"})
		for k, v := range map[string]any{"source": "base32_secret_key", "name": "Acme", "username": nil, "digits": 6.0, "period": 30.0, "algorithm": "SHA1"} {
			if b[k] != v {
				t.Errorf("base32 %s = %#v, want %#v", k, b[k], v)
			}
		}
		s := e.create("/api/devices", map[string]any{"sharedSecret": testSecret, "username": "bob", "name": "Mine"})
		if s["name"] != "Mine" || s["username"] != "bob" || s["source"] != "shared_secret" {
			t.Errorf("shared secret device %v", s)
		}
		// A snake_case field wins over its camelCase spelling.
		w := e.create("/api/devices/custom", map[string]any{"secret": testSecret, "expires_at": exp, "expiresAt": "junk"})
		if w["expires_at"] != exp {
			t.Errorf("expires_at %v, want %s", w["expires_at"], exp)
		}

		// The same secret gives the same code whichever way it was saved.
		codes := map[string]bool{}
		for _, id := range []string{d["id"].(string), b["id"].(string), s["id"].(string)} {
			code, _ := e.otp(id, "")
			codes[code] = true
		}
		key, _ := totp.DecodeSecret(testSecret)
		if want := totp.Generate(key, totp.DefaultParams, start).Code; len(codes) != 1 || !codes[want] {
			t.Fatalf("codes %v, want only %s", codes, want)
		}
	})
}

func TestListFiltersAndPages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		var ids []string
		for i, d := range []struct{ user, issuer string }{
			{"alice@example.com", "GitHub"}, {"Bob@Example.com", "github enterprise"}, {"carol", "Google"},
			{"dave_100%", "Acme"}, {"", "Acme"}, {"ÉLODIE", ""},
		} {
			body := map[string]any{"secret": testSecret}
			if d.user != "" {
				body["username"] = d.user
			}
			if d.issuer != "" {
				body["issuer"] = d.issuer
			}
			e.clock.Set(start.Add(time.Duration(i) * time.Second))
			ids = append(ids, e.create("/api/devices/custom", body)["id"].(string))
		}
		list := func(query string) (total float64, got []string, options map[string]any) {
			t.Helper()
			r := e.call("GET", "/api/devices"+query, e.key, nil)
			if r.status != http.StatusOK {
				t.Fatalf("GET %s: %d %s", query, r.status, r.body)
			}
			m := r.json(t)
			for _, it := range m["items"].([]any) {
				got = append(got, it.(map[string]any)["id"].(string))
			}
			return m["total_count"].(float64), got, m["options"].(map[string]any)
		}
		rev := func(idx ...int) []string {
			var out []string
			for _, i := range idx {
				out = append(out, ids[i])
			}
			return out
		}
		cases := []struct {
			query   string
			total   float64
			want    []string
			options map[string]any
		}{
			{"", 6, rev(5, 4, 3, 2, 1, 0), map[string]any{"limit": 100.0, "offset": 0.0}},
			{"?limit=2", 6, rev(5, 4), map[string]any{"limit": 2.0, "offset": 0.0}},
			{"?limit=2&offset=2", 6, rev(3, 2), map[string]any{"limit": 2.0, "offset": 2.0}},
			{"?offset=10", 6, nil, map[string]any{"limit": 100.0, "offset": 10.0}},
			{"?username=EXAMPLE", 2, rev(1, 0), map[string]any{"limit": 100.0, "offset": 0.0, "username": "EXAMPLE"}},
			{"?issuer=hub", 2, rev(1, 0), map[string]any{"limit": 100.0, "offset": 0.0, "issuer": "hub"}},
			{"?issuer=github&username=bob", 1, rev(1), map[string]any{"limit": 100.0, "offset": 0.0, "issuer": "github", "username": "bob"}},
			{"?username=" + url.QueryEscape("%"), 1, rev(3), nil},
			{"?username=_", 1, rev(3), nil},
			{"?username=élodie", 1, rev(5), nil},
			{"?issuer=acme&limit=1", 2, rev(4), nil},
			{"?issuer=nobody", 0, nil, nil},
		}
		for _, c := range cases {
			total, got, options := list(c.query)
			if total != c.total || fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("GET %s: total %v items %v, want %v %v", c.query, total, got, c.total, c.want)
			}
			if c.options != nil && fmt.Sprint(options) != fmt.Sprint(c.options) {
				t.Errorf("GET %s: options %v, want %v", c.query, options, c.options)
			}
		}
		// An empty list is [], not null.
		_, other := e.newOrg("empty", 100, true)
		if r := e.call("GET", "/api/devices", other, nil); !strings.Contains(string(r.body), `"items":[]`) {
			t.Fatalf("empty list: %s", r.body)
		}
	})
}

// TestExpiry moves the clock past a device's expires_at: the list leaves it out,
// the limit no longer counts it, its OTP is 410, and it can still be read and
// deleted.
func TestExpiry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		_, key := e.newOrg("small", 1, true)
		exp := start.Add(time.Hour)
		r := e.call("POST", "/api/devices", key, map[string]any{"shared_secret": testSecret, "expires_at": exp.Format(time.RFC3339)})
		if r.status != http.StatusCreated {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		id := r.json(t)["id"].(string)
		if r := e.call("GET", "/api/devices/"+id+"/otp", key, nil); r.status != http.StatusOK {
			t.Fatalf("OTP before expiry: %d %s", r.status, r.body)
		}
		if r := e.call("POST", "/api/devices", key, map[string]any{"shared_secret": testSecret}); r.status != http.StatusForbidden {
			t.Fatalf("second device under a limit of 1: %d %s", r.status, r.body)
		}

		e.clock.Set(exp) // reaching expires_at expires the device
		if m := e.call("GET", "/api/devices", key, nil).json(t); m["total_count"] != 0.0 || len(m["items"].([]any)) != 0 {
			t.Fatalf("list after expiry: %v", m)
		}
		r = e.call("GET", "/api/devices/"+id+"/otp", key, nil)
		if code, _ := r.errorCode(t); r.status != http.StatusGone || code != "device_expired" {
			t.Fatalf("OTP after expiry: %d %s", r.status, r.body)
		}
		if r := e.call("GET", "/api/devices/"+id, key, nil); r.status != http.StatusOK || r.json(t)["expires_at"] != httpx.Time(exp) {
			t.Fatalf("GET expired device: %d %s", r.status, r.body)
		}
		// The expired device does not count against the limit.
		r = e.call("POST", "/api/devices", key, map[string]any{"shared_secret": testSecret})
		if r.status != http.StatusCreated {
			t.Fatalf("create after expiry under a limit of 1: %d %s", r.status, r.body)
		}
		if r := e.call("DELETE", "/api/devices/"+id, key, nil); r.status != http.StatusNoContent || len(r.body) != 0 {
			t.Fatalf("DELETE expired device: %d %s", r.status, r.body)
		}
		if r := e.call("GET", "/api/devices/"+id, key, nil); r.status != http.StatusNotFound {
			t.Fatalf("GET deleted device: %d", r.status)
		}
	})
}

func TestLimitAndSwitch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		_, key := e.newOrg("limited", 2, true)
		var ids []string
		for i := 0; i < 2; i++ {
			r := e.call("POST", "/api/devices", key, map[string]any{"shared_secret": testSecret})
			if r.status != http.StatusCreated {
				t.Fatalf("device %d: %d %s", i, r.status, r.body)
			}
			ids = append(ids, r.json(t)["id"].(string))
		}
		for _, path := range []string{"/api/devices", "/api/devices/custom", "/api/devices/base32-secret-key", "/api/devices/otpauth-url"} {
			body := map[string]any{"shared_secret": testSecret, "secret": testSecret, "base32_secret_key": testSecret,
				"otp_auth_url": "otpauth://totp/x?secret=" + testSecret}
			if path == "/api/devices" {
				body = map[string]any{"shared_secret": testSecret}
			}
			r := e.call("POST", path, key, body)
			if code, _ := r.errorCode(t); r.status != http.StatusForbidden || code != "device_limit_reached" {
				t.Fatalf("POST %s at the limit: %d %s", path, r.status, r.body)
			}
		}
		// Another organisation's limit is its own.
		e.create("/api/devices", map[string]any{"shared_secret": testSecret})

		if r := e.call("DELETE", "/api/devices/"+ids[0], key, nil); r.status != http.StatusNoContent {
			t.Fatalf("delete: %d", r.status)
		}
		if r := e.call("POST", "/api/devices", key, map[string]any{"shared_secret": testSecret}); r.status != http.StatusCreated {
			t.Fatalf("create after delete: %d %s", r.status, r.body)
		}

		// Raising the limit takes effect at once.
		three := 3
		if _, err := e.tenant.UpdateOrg(ctx, "limited", &three, nil); err != nil {
			t.Fatal(err)
		}
		if r := e.call("POST", "/api/devices", key, map[string]any{"shared_secret": testSecret}); r.status != http.StatusCreated {
			t.Fatalf("create under the raised limit: %d %s", r.status, r.body)
		}

		// Switched off: creating is refused; reading, codes and deleting go on.
		off := false
		if _, err := e.tenant.UpdateOrg(ctx, "limited", nil, &off); err != nil {
			t.Fatal(err)
		}
		r := e.call("POST", "/api/devices/custom", key, map[string]any{"secret": testSecret})
		if code, _ := r.errorCode(t); r.status != http.StatusForbidden || code != "totp_disabled" {
			t.Fatalf("create with TOTP off: %d %s", r.status, r.body)
		}
		if r := e.call("GET", "/api/devices", key, nil); r.status != http.StatusOK || r.json(t)["total_count"] != 3.0 {
			t.Fatalf("list with TOTP off: %d %s", r.status, r.body)
		}
		if r := e.call("GET", "/api/devices/"+ids[1]+"/otp", key, nil); r.status != http.StatusOK {
			t.Fatalf("OTP with TOTP off: %d %s", r.status, r.body)
		}
		if r := e.call("DELETE", "/api/devices/"+ids[1], key, nil); r.status != http.StatusNoContent {
			t.Fatalf("delete with TOTP off: %d %s", r.status, r.body)
		}
	})
}

// TestConcurrentCreatesRespectLimit races creates of one organisation: exactly the
// limit succeed.
func TestConcurrentCreatesRespectLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		const limit, tries = 3, 12
		_, key := e.newOrg("racy", limit, true)
		var wg sync.WaitGroup
		statuses := make(chan int, tries)
		for i := 0; i < tries; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses <- e.call("POST", "/api/devices", key, map[string]any{"shared_secret": testSecret}).status
			}()
		}
		wg.Wait()
		close(statuses)
		count := map[int]int{}
		for s := range statuses {
			count[s]++
		}
		if count[http.StatusCreated] != limit || count[http.StatusForbidden] != tries-limit {
			t.Fatalf("statuses %v, want %d created and %d forbidden", count, limit, tries-limit)
		}
	})
}

func TestOtherOrganisationSeesNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		id := e.create("/api/devices", map[string]any{"shared_secret": testSecret, "issuer": "Secret Co"})["id"].(string)
		_, other := e.newOrg("other", 100, true)
		for _, c := range []struct{ method, path string }{
			{"GET", "/api/devices/" + id}, {"GET", "/api/devices/" + id + "/otp"}, {"DELETE", "/api/devices/" + id},
		} {
			r := e.call(c.method, c.path, other, nil)
			if code, _ := r.errorCode(t); r.status != http.StatusNotFound || code != "not_found" {
				t.Fatalf("%s %s with another organisation's key: %d %s", c.method, c.path, r.status, r.body)
			}
			if strings.Contains(string(r.body), "Secret Co") {
				t.Fatalf("404 reveals the device: %s", r.body)
			}
		}
		if m := e.call("GET", "/api/devices", other, nil).json(t); m["total_count"] != 0.0 {
			t.Fatalf("other organisation lists %v", m)
		}
		// The owner still has it.
		if r := e.call("GET", "/api/devices/"+id, e.key, nil); r.status != http.StatusOK {
			t.Fatalf("owner GET: %d", r.status)
		}
	})
}

// TestMinSecondsWaitsForNextPeriod uses the fake clock: the sleep hook records the
// wait and moves the clock, so no test waits for real.
func TestMinSecondsWaitsForNextPeriod(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		key, _ := totp.DecodeSecret(testSecret)
		id := e.create("/api/devices", map[string]any{"shared_secret": testSecret})["id"].(string)
		// 1795317840 is a multiple of 30; 25.5 s into the step, 4.5 s are left.
		stepStart := time.Unix(1795317840, 0)
		at := stepStart.Add(25500 * time.Millisecond)
		current := totp.Generate(key, totp.DefaultParams, at)
		next := totp.Generate(key, totp.DefaultParams, stepStart.Add(30*time.Second))
		if current.Code == next.Code {
			t.Fatal("test secret gives the same code in both steps; pick another instant")
		}
		get := func(min string) (string, string) {
			return e.otp(id, "?min_seconds_until_expire="+min)
		}
		post := func(min float64) (string, string) {
			r := e.call("POST", "/api/devices/otp", e.key, map[string]any{"shared_secret": testSecret, "min_seconds_until_expire": min})
			if r.status != http.StatusOK {
				t.Fatalf("POST otp: %d %s", r.status, r.body)
			}
			m := r.json(t)
			return m["code"].(string), m["expires"].(string)
		}
		cases := []struct {
			name  string
			fetch func() (string, string)
			wait  bool
		}{
			{"device, enough left", func() (string, string) { return get("4") }, false},
			{"device, exactly enough left", func() (string, string) { return get("4.5") }, false},
			{"device, too little left", func() (string, string) { return get("10") }, true},
			{"device, 29 seconds", func() (string, string) { return get("29") }, true},
			{"secret, default 0", func() (string, string) { return post(0) }, false},
			{"secret, too little left", func() (string, string) { return post(5) }, true},
		}
		for _, c := range cases {
			e.clock.Set(at)
			before := len(e.clock.Slept())
			code, expires := c.fetch()
			slept := e.clock.Slept()[before:]
			want := current
			if c.wait {
				want = next
				if len(slept) != 1 || slept[0] != 4500*time.Millisecond {
					t.Errorf("%s: slept %v, want one 4.5s wait", c.name, slept)
				}
			} else if len(slept) != 0 {
				t.Errorf("%s: slept %v, want no wait", c.name, slept)
			}
			if code != want.Code || expires != httpx.Time(want.Expires) {
				t.Errorf("%s: got %s until %s, want %s until %s", c.name, code, expires, want.Code, httpx.Time(want.Expires))
			}
		}
	})
}

// TestWaitEndsWhenClientLeaves cancels a request while it waits for the next
// period: the wait ends instead of running its course.
func TestWaitEndsWhenClientLeaves(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		id := e.create("/api/devices", map[string]any{"shared_secret": testSecret})["id"].(string)
		entered := make(chan time.Duration, 1)
		ended := make(chan error, 1)
		// The real sleep, for a minute rather than the second asked, so only the
		// client's going away ends it early.
		e.clock.asleep = func(ctx context.Context, d time.Duration) error {
			entered <- d
			err := totp.SleepContext(ctx, time.Minute)
			ended <- err
			return err
		}
		e.clock.Set(time.Unix(1795317840+29, 0))

		for _, req := range []struct{ method, path, body string }{
			{"GET", "/api/devices/" + id + "/otp?min_seconds_until_expire=20", ""},
			{"POST", "/api/devices/otp", `{"shared_secret":"` + testSecret + `","min_seconds_until_expire":20}`},
		} {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				var body io.Reader
				if req.body != "" {
					body = strings.NewReader(req.body)
				}
				rq, _ := http.NewRequestWithContext(ctx, req.method, e.srv.URL+req.path, body)
				rq.Header.Set("X-Api-Key", e.key)
				if res, err := e.srv.Client().Do(rq); err == nil {
					res.Body.Close()
					t.Errorf("%s %s answered %d; want the client to give up first", req.method, req.path, res.StatusCode)
				}
			}()
			if d := <-entered; d != time.Second {
				t.Errorf("waiting %v, want 1s", d)
			}
			cancel()
			if err := <-ended; err == nil {
				t.Fatalf("%s %s: the wait ran its course although the client left", req.method, req.path)
			}
			<-done
		}
	})
}

func TestSleepContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := totp.SleepContext(ctx, time.Hour); err != context.Canceled {
		t.Fatalf("SleepContext on a cancelled context = %v, want context.Canceled", err)
	}
	if err := totp.SleepContext(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("SleepContext = %v", err)
	}
}
