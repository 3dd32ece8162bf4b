package sms_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

var rfc3339ms = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func TestListNumbers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		var r struct {
			TotalCount int              `json:"total_count"`
			Data       []map[string]any `json:"data"`
		}
		if resp := e.get(e.key, "/api/sms/numbers", &r); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if r.TotalCount != 3 || len(r.Data) != 3 {
			t.Fatalf("total %d, %d numbers; want 3", r.TotalCount, len(r.Data))
		}
		want := []struct {
			id, status, country string
			phone               any
			test                bool
		}{
			{e.active.ID, "active", "US", activePhone, false},
			{e.requested.ID, "requested", "GB", nil, true},
			{e.disabled.ID, "disabled", "US", disabledPhone, false},
		}
		for i, w := range want {
			n := r.Data[i]
			if n["id"] != w.id || n["status"] != w.status || n["country"] != w.country || n["organisation_id"] != e.org.ID ||
				n["is_test_number"] != w.test || n["phone_number"] != w.phone {
				t.Errorf("number %d = %v, want %+v", i, n, w)
			}
			if _, has := n["phone_number"]; has != (w.phone != nil) {
				t.Errorf("number %d: phone_number present = %v", i, has)
			}
			for _, f := range []string{"created_at", "updated_at"} {
				if s, _ := n[f].(string); !rfc3339ms.MatchString(s) {
					t.Errorf("number %d: %s = %q", i, f, s)
				}
			}
		}
		// Another organisation sees its own number only.
		e.get(e.otherKey, "/api/sms/numbers", &r)
		if r.TotalCount != 1 || r.Data[0]["phone_number"] != otherPhone {
			t.Fatalf("other organisation sees %+v", r)
		}
		if resp := e.get("", "/api/sms/numbers", nil); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("no key: status %d", resp.StatusCode)
		}
	})
}

func TestAddNumberRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		for _, c := range []struct {
			spec sms.NumberSpec
			ok   bool
		}{
			{sms.NumberSpec{Phone: "+49 30 1234567"}, true},                             // active, DE derived
			{sms.NumberSpec{Phone: "4930 7654321", Status: sms.StatusDisabled}, true},   // disabled with a phone
			{sms.NumberSpec{Status: sms.StatusDisabled, Country: "FR"}, true},           // disabled, never assigned
			{sms.NumberSpec{Phone: "+1 555 000 1111"}, false},                           // taken (by default's active number)
			{sms.NumberSpec{Phone: otherPhone}, false},                                  // taken by another organisation
			{sms.NumberSpec{Phone: "+15550003333", Status: sms.StatusRequested}, false}, // requested has no phone
			{sms.NumberSpec{Status: sms.StatusActive, Country: "US"}, false},            // active needs a phone
			{sms.NumberSpec{}, false},                                                   // requested needs a country
			{sms.NumberSpec{Phone: "+15550004444", Status: "pending"}, false},           // unknown status
			{sms.NumberSpec{Phone: "+15550005555", Country: "USA"}, false},              // not alpha-2
			{sms.NumberSpec{Phone: "+999 1234 5678"}, false},                            // no derivable country
			{sms.NumberSpec{Phone: "+999 1234 5678", Country: "xx"}, true},              // explicit country
			{sms.NumberSpec{Phone: "555-1234"}, false},                                  // too short
		} {
			n, err := e.svc.AddNumber(ctx, e.org.ID, c.spec)
			if (err == nil) != c.ok {
				t.Errorf("AddNumber(%+v) = %+v, %v; want ok %v", c.spec, n, err, c.ok)
			}
		}
		n, err := e.svc.AddNumber(ctx, e.org.ID, sms.NumberSpec{Phone: "(0049) 40 1234567"})
		if err == nil {
			t.Errorf("a number starting with 00 was taken as %s", n.Phone)
		}
		n, err = e.svc.NumberByPhone(ctx, "+49301234567")
		if err != nil || n.Country != "DE" || n.Status != sms.StatusActive {
			t.Errorf("stored %+v, %v", n, err)
		}
	})
}

func TestVirtualSMS(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		before := time.Now().Add(-time.Second)
		m := e.virtual("+44 7700 900 999", "15550001111", "Your code is 123456")
		if _, err := uuid.Parse(m.ID); err != nil {
			t.Errorf("id %q: %v", m.ID, err)
		}
		created, err := time.Parse(time.RFC3339, m.CreatedAt)
		if err != nil || !rfc3339ms.MatchString(m.CreatedAt) || created.Before(before) {
			t.Errorf("created_at %q", m.CreatedAt)
		}
		want := message{ID: m.ID, SmsPhoneNumberID: e.active.ID, Body: "Your code is 123456", FromNumber: "+447700900999",
			ToNumber: activePhone, CreatedAt: m.CreatedAt, Direction: "inbound"}
		if !reflect.DeepEqual(m, want) {
			t.Errorf("message %+v, want %+v", m, want)
		}
		var latest struct{ Data message }
		if resp := e.get(e.key, "/api/sms/+15550001111/latest", &latest); resp.StatusCode != 200 || latest.Data != want {
			t.Errorf("latest %d %+v", resp.StatusCode, latest.Data)
		}
		// The longest body is stored whole.
		long := strings.Repeat("é", sms.MaxBodyRunes)
		if m := e.virtual("+15559990000", activePhone, long); m.Body != long {
			t.Errorf("body of %d runes not kept", sms.MaxBodyRunes)
		}

		for _, c := range []struct {
			name   string
			key    string
			body   any
			status int
			code   string
			fields []string
		}{
			{"nothing", e.key, map[string]any{}, 400, "invalid_parameter", []string{"from_number", "to_number", "body"}},
			{"empty strings", e.key, map[string]any{"from_number": "", "to_number": "", "body": ""}, 400, "invalid_parameter", []string{"from_number", "to_number", "body"}},
			{"bad from", e.key, map[string]any{"from_number": "hello", "to_number": activePhone, "body": "x"}, 400, "invalid_parameter", []string{"from_number"}},
			{"short from", e.key, map[string]any{"from_number": "12345", "to_number": activePhone, "body": "x"}, 400, "invalid_parameter", []string{"from_number"}},
			{"bad to", e.key, map[string]any{"from_number": "+15559990000", "to_number": "+0123456789", "body": "x"}, 400, "invalid_parameter", []string{"to_number"}},
			{"long body", e.key, map[string]any{"from_number": "+15559990000", "to_number": activePhone, "body": long + "x"}, 400, "invalid_parameter", []string{"body"}},
			{"wrong type", e.key, map[string]any{"from_number": "+15559990000", "to_number": activePhone, "body": 5}, 400, "invalid_parameter", []string{"body"}},
			{"not JSON", e.key, "{", 400, "invalid_json", nil},
			{"unknown number", e.key, map[string]any{"from_number": "+15559990000", "to_number": "+15557770000", "body": "x"}, 404, "sms_number_not_found", nil},
			{"another organisation's number", e.key, map[string]any{"from_number": "+15559990000", "to_number": otherPhone, "body": "x"}, 404, "sms_number_not_found", nil},
			{"disabled", e.key, map[string]any{"from_number": "+15559990000", "to_number": disabledPhone, "body": "x"}, 409, "sms_number_inactive", nil},
			{"no key", "", map[string]any{"from_number": "+15559990000", "to_number": activePhone, "body": "x"}, 401, "missing_api_key", nil},
		} {
			var r errResp
			resp := e.do(http.MethodPost, c.key, "/api/sms/virtual", c.body, &r)
			if resp.StatusCode != c.status || r.Code != c.code || !reflect.DeepEqual(r.fields(), c.fields) {
				t.Errorf("%s: %d %+v, want %d %s %v", c.name, resp.StatusCode, r, c.status, c.code, c.fields)
			}
		}
		if n := e.count(); n != 2 {
			t.Errorf("%d messages stored, want 2 (rejected requests store nothing)", n)
		}
		// The other organisation can send to its own number.
		var r struct{ Data message }
		resp := e.do(http.MethodPost, e.otherKey, "/api/sms/virtual", map[string]string{"from_number": "+15559990000", "to_number": "447700900123", "body": "hi"}, &r)
		if resp.StatusCode != 201 || r.Data.SmsPhoneNumberID != e.otherNum.ID {
			t.Errorf("other organisation: %d %+v", resp.StatusCode, r.Data)
		}
	})
}

func TestPhoneNumberInPath(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.virtual("+15559990000", activePhone, "hello")
		for _, p := range []string{"+15550001111", "15550001111", "%2B15550001111", "%2b15550001111", "+1%20555%20000%201111",
			"1-555-000-1111", "+1%20(555)%20000-1111"} {
			var r searchResp
			if resp := e.get(e.key, "/api/sms/"+p+"/messages", &r); resp.StatusCode != 200 || r.TotalCount != 1 {
				t.Errorf("%s/messages: %d total %d", p, resp.StatusCode, r.TotalCount)
			}
			if resp := e.get(e.key, "/api/sms/"+p+"/latest", nil); resp.StatusCode != 200 {
				t.Errorf("%s/latest: %d", p, resp.StatusCode)
			}
		}
		for _, c := range []struct {
			key, path string
			status    int
			code      string
		}{
			{e.key, "/api/sms/not-a-number/messages", 400, "invalid_parameter"},
			{e.key, "/api/sms/+15557770000/messages", 404, "sms_number_not_found"},
			{e.key, "/api/sms/+447700900123/messages", 404, "sms_number_not_found"}, // another organisation's
			{e.key, "/api/sms/+447700900123/latest", 404, "sms_number_not_found"},
			{e.otherKey, "/api/sms/+15550001111/messages", 404, "sms_number_not_found"},
			{e.otherKey, "/api/sms/+15550001111/latest", 404, "sms_number_not_found"},
			{e.key, "/api/sms/+15550002222/latest", 404, "no_messages"}, // disabled, and empty
			{e.key, "/api/sms/+15550001111/messages?wait=true", 401, "invalid_api_key"},
		} {
			key := c.key
			if c.status == 401 {
				key = "cbx_wrong"
			}
			var r errResp
			if resp := e.get(key, c.path, &r); resp.StatusCode != c.status || r.Code != c.code {
				t.Errorf("%s: %d %s, want %d %s", c.path, resp.StatusCode, r.Code, c.status, c.code)
			}
		}
		// A disabled number's history stays readable.
		var r searchResp
		if resp := e.get(e.key, "/api/sms/+15550002222/messages", &r); resp.StatusCode != 200 || r.TotalCount != 0 {
			t.Errorf("disabled number: %d %+v", resp.StatusCode, r)
		}
	})
}

func TestSearchFilters(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		e.at(base, 0)
		e.virtual("+15551230001", activePhone, "Your code is 111111")
		e.at(base, 10_001)
		e.virtual("+447700900001", activePhone, "Grüße: 100%_done")
		e.at(base, 20_500)
		e.virtual("+15559870002", activePhone, "YOUR CODE IS 222222")
		e.at(base, 30_000)
		// A short-code sender, as a provider reports it.
		if _, _, err := e.svc.Receive(context.Background(), e.active, sms.Inbound{From: "12345", Body: "short code", ProviderMessageID: "SM1"}); err != nil {
			t.Fatal(err)
		}
		e.at(base, 40_000)
		// Another number's messages never appear.
		e.do(http.MethodPost, e.otherKey, "/api/sms/virtual", map[string]string{"from_number": "+15551230001", "to_number": otherPhone, "body": "Your code is 999999"}, nil)

		ts := func(us int64) string { // microseconds after base
			return url.QueryEscape(base.Add(time.Duration(us) * time.Microsecond).Format(time.RFC3339Nano))
		}
		all := []string{"short code", "YOUR CODE IS 222222", "Grüße: 100%_done", "Your code is 111111"}
		for _, c := range []struct {
			query  string
			bodies []string
			total  int
		}{
			{"", all, 4},
			{"limit=1", all[:1], 4},
			{"limit=2&offset=1", all[1:3], 4},
			{"offset=4", nil, 4},
			{"offset=100", nil, 4},
			{"body=code+is", []string{"YOUR CODE IS 222222", "Your code is 111111"}, 2},
			{"body=CODE%20IS%20111", []string{"Your code is 111111"}, 1},
			{"body=gr%C3%9C%C3%9FE", []string{"Grüße: 100%_done"}, 1},
			{"body=100%25_", []string{"Grüße: 100%_done"}, 1},
			{"body=%25", []string{"Grüße: 100%_done"}, 1},
			{"body=_", []string{"Grüße: 100%_done"}, 1},
			{"body=is+3", nil, 0},
			{"from_number=%2B1555", []string{"YOUR CODE IS 222222", "Your code is 111111"}, 2},
			{"from_number=+1555123", []string{"Your code is 111111"}, 1}, // '+' decoded to a space
			{"from_number=1555123", []string{"Your code is 111111"}, 1},
			{"from_number=%2B44%207700", []string{"Grüße: 100%_done"}, 1},
			{"from_number=(+44)7700-900", []string{"Grüße: 100%_done"}, 1},
			{"from_number=123", []string{"short code"}, 1},
			{"from_number=%2B123", nil, 0},
			{"from_number=+1555123&body=222", nil, 0},
			{"direction=inbound", all, 4},
			{"direction=outbound", nil, 0},
			{"from_date=" + ts(10_001_000), all[:3], 3},
			{"from_date=" + ts(10_002_000), all[:2], 2},
			{"to_date=" + ts(10_001_000), all[2:], 2},
			{"to_date=" + ts(10_000_900), all[3:], 1},
			{"from_date=" + ts(10_001_000) + "&to_date=" + ts(10_001_000), all[2:3], 1},
			{"from_date=" + ts(20_500_000) + "&to_date=" + ts(20_500_000), all[1:2], 1},
			{"from_date=2026-11-01T14:00:20.500%2B02:00", all[:2], 2},
			{"from_date=2026-11-01T14:00:20.5+02:00", all[:2], 2}, // unencoded '+' arrives as a space
			{"from_date=" + ts(50_000_000), nil, 0},
			{"from_date=" + ts(0) + "&direction=inbound&from_number=1555&body=code&limit=1", all[1:2], 2},
			{"limit=2.0&offset=1.0", all[1:3], 4},
			{"body=&from_number=&direction=&from_date=&to_date=&limit=&offset=&wait=", all, 4},
		} {
			var r searchResp
			resp := e.get(e.key, "/api/sms/%2B15550001111/messages?"+c.query, &r)
			var bodies []string
			for _, m := range r.Data {
				bodies = append(bodies, m.Body)
			}
			if resp.StatusCode != 200 || r.TotalCount != c.total || !reflect.DeepEqual(bodies, c.bodies) {
				t.Errorf("?%s: %d total %d %q, want total %d %q", c.query, resp.StatusCode, r.TotalCount, bodies, c.total, c.bodies)
			}
			if r.Data == nil && resp.StatusCode == 200 {
				t.Errorf("?%s: data is null, want []", c.query)
			}
		}
	})
}

func TestSearchOptionsEcho(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.virtual("+15551230001", activePhone, "hello")
		var r searchResp
		e.get(e.key, "/api/sms/15550001111/messages", &r)
		if want := map[string]any{"limit": 20.0, "offset": 0.0}; !reflect.DeepEqual(r.Options, want) {
			t.Errorf("default options %v, want %v", r.Options, want)
		}
		e.get(e.key, "/api/sms/15550001111/messages?limit=5&offset=0&body=hel&from_number=1%20(555)&direction=inbound"+
			"&from_date=2020-01-01T02:00:00%2B02:00&to_date=2099-01-01T00:00:00.123456Z&wait=false", &r)
		want := map[string]any{"limit": 5.0, "offset": 0.0, "body": "hel", "from_number": "+1555", "direction": "inbound",
			"from_date": "2020-01-01T00:00:00.000Z", "to_date": "2099-01-01T00:00:00.123Z", "wait": false}
		if !reflect.DeepEqual(r.Options, want) {
			t.Errorf("options %v, want %v", r.Options, want)
		}
		if r.TotalCount != 1 {
			t.Errorf("total %d", r.TotalCount)
		}
	})
}

func TestSearchValidation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		for _, c := range []struct {
			query  string
			fields []string
		}{
			{"limit=0", []string{"limit"}},
			{"limit=101", []string{"limit"}},
			{"limit=ten", []string{"limit"}},
			{"limit=2.5", []string{"limit"}},
			{"offset=-1", []string{"offset"}},
			{"direction=sideways", []string{"direction"}},
			{"from_date=yesterday", []string{"from_date"}},
			{"to_date=2026-11-01", []string{"to_date"}},
			{"to_date=1730000000", []string{"to_date"}},
			{"wait=maybe", []string{"wait"}},
			{"body=" + strings.Repeat("x", sms.MaxBodyRunes+1), []string{"body"}},
			{"from_number=" + strings.Repeat("x", 65), []string{"from_number"}},
			{"limit=0&offset=-1&direction=up&from_date=x&wait=2", []string{"limit", "offset", "wait", "direction", "from_date"}},
		} {
			var r errResp
			resp := e.get(e.key, "/api/sms/+15550001111/messages?"+c.query, &r)
			if resp.StatusCode != 400 || r.Code != "invalid_parameter" || !reflect.DeepEqual(r.fields(), c.fields) {
				t.Errorf("?%.40s: %d %s %v, want 400 %v", c.query, resp.StatusCode, r.Code, r.fields(), c.fields)
			}
		}
		for _, q := range []string{"limit=1", "limit=100", "offset=0", "wait=0", "wait=FALSE", "direction=outbound"} {
			if resp := e.get(e.key, "/api/sms/+15550001111/messages?"+q, nil); resp.StatusCode != 200 {
				t.Errorf("?%s: %d", q, resp.StatusCode)
			}
		}
	})
}

func TestRetentionAndReap(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		e.at(base, 0)
		e.virtual("+15551230001", activePhone, "old")
		e.at(base, 3_600_000)
		e.virtual("+15551230001", activePhone, "new")
		expiry := base.Add(sms.DefaultRetention)

		// Just before the first message's expiry both are visible; at it, only the newer.
		e.clock.Store(expiry.Add(-time.Millisecond).UnixMilli())
		var r searchResp
		if e.get(e.key, "/api/sms/+15550001111/messages", &r); r.TotalCount != 2 {
			t.Fatalf("before expiry: total %d", r.TotalCount)
		}
		e.clock.Store(expiry.UnixMilli())
		if e.get(e.key, "/api/sms/+15550001111/messages", &r); r.TotalCount != 1 || r.Data[0].Body != "new" {
			t.Fatalf("at expiry: %+v", r)
		}
		if n, err := sms.Reap(ctx, db, expiry.Add(-time.Millisecond)); err != nil || n != 0 {
			t.Fatalf("early reap deleted %d, %v", n, err)
		}
		if n, err := sms.Reap(ctx, db, expiry); err != nil || n != 1 {
			t.Fatalf("reap deleted %d, %v; want 1", n, err)
		}
		if n := e.count(); n != 1 {
			t.Fatalf("%d messages left, want 1", n)
		}
		e.clock.Store(expiry.Add(time.Hour).UnixMilli())
		var er errResp
		if resp := e.get(e.key, "/api/sms/+15550001111/latest", &er); resp.StatusCode != 404 || er.Code != "no_messages" {
			t.Fatalf("latest after every expiry: %d %s", resp.StatusCode, er.Code)
		}
		if n, err := sms.Reap(ctx, db, expiry.Add(time.Hour)); err != nil || n != 1 || e.count() != 0 {
			t.Fatalf("second reap deleted %d, %v", n, err)
		}
	})
}

func TestRetentionIsConfigurable(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		svc := sms.NewService(db, nil, time.Minute, nil)
		base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		svc.SetClock(func() time.Time { return base })
		if _, _, err := svc.Receive(ctx, e.active, sms.Inbound{From: "+15551230001", Body: "brief"}); err != nil {
			t.Fatal(err)
		}
		svc.SetClock(func() time.Time { return base.Add(time.Minute) })
		if res, err := svc.Search(ctx, sms.Query{NumberID: e.active.ID, Limit: 10}); err != nil || res.Total != 0 {
			t.Fatalf("after one minute: %+v, %v", res, err)
		}
		if n, err := sms.Reap(ctx, db, base.Add(time.Minute)); err != nil || n != 1 {
			t.Fatalf("reap %d, %v", n, err)
		}
	})
}

func TestReapInBatches(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		e.clock.Store(base.UnixMilli())
		const n = 1203
		err := db.InTx(ctx, func(tx *store.Tx) error {
			for i := 0; i < n; i++ {
				if _, err := tx.Exec(ctx, `INSERT INTO sms_messages (id, number_id, direction, from_number, to_number, body, body_fold, created_ms, expires_ms)
					VALUES (?, ?, 'inbound', '+15551230001', ?, 'x', 'x', ?, ?)`, fmt.Sprint("id-", i), e.active.ID, activePhone, base.UnixMilli(), base.UnixMilli()+int64(i)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := sms.Reap(ctx, db, base.Add(time.Hour)); err != nil || got != n || e.count() != 0 {
			t.Fatalf("reaped %d, %v; want %d", got, err, n)
		}
	})
}
