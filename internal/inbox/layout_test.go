package inbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// layoutMessage is a small text message of about 1 KB, different for each i,
// with a link and a code for the body to carry.
func layoutMessage(i int, to string) []byte {
	words := strings.Fields("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore")
	var b strings.Builder
	fmt.Fprintf(&b, "From: Sender <s@example.com>\r\nTo: %s\r\nSubject: Your code %06d\r\nMessage-ID: <%d@compact.test>\r\n\r\n", to, 100000+i, i)
	for j := 0; b.Len() < 900; j++ {
		b.WriteString(words[(i*7+j*j)%len(words)] + " ")
	}
	fmt.Fprintf(&b, "\r\nConfirm: https://app.example/confirm?n=%d\r\n", i)
	return []byte(b.String())
}

// layoutNamespaces returns three namespaces of one organisation: two that
// keep raw sources and one that does not.
func layoutNamespaces(t *testing.T, db *store.DB) (a, b, noRaw tenant.Namespace) {
	t.Helper()
	ctx := context.Background()
	ts := tenant.NewService(db, secret.New([]byte("test-secret-key-0123456789")), 720*time.Hour)
	if _, err := ts.Bootstrap(ctx, ""); err != nil {
		t.Fatal(err)
	}
	org, err := ts.OrgByName(ctx, tenant.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	off := false
	a, err = ts.CreateNamespace(ctx, org.ID, "keep-a", tenant.Settings{})
	if err == nil {
		b, err = ts.CreateNamespace(ctx, org.ID, "keep-b", tenant.Settings{})
	}
	if err == nil {
		noRaw, err = ts.CreateNamespace(ctx, org.ID, "no-raw", tenant.Settings{CaptureRawEmail: &off})
	}
	if err != nil {
		t.Fatal(err)
	}
	return a, b, noRaw
}

func target(ns tenant.Namespace) Target {
	return Target{Namespace: ns, Recipients: []string{"x@" + ns.Name + ".localhost"}}
}

// A small message's body is stored after its raw source, for every email of
// the delivery that keeps the raw source; a large message's body, and that of
// an email whose namespace keeps no raw source, in its own row. Whichever way,
// every email reads back as it was received: its raw source byte for byte, its
// body, links and codes, from a lookup and from a search.
func TestSmallBodiesFollowTheirRawSource(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, b, noRaw := layoutNamespaces(t, db)
		in := NewIngester(db, notify.NewHub())
		defer in.Close()
		s := NewSearcher(db, DefaultColumnBudget)
		type sent struct {
			id, text  string
			raw       []byte
			bodyCodec byte
		}
		var all []sent
		deliver := func(raw []byte, targets ...Target) {
			t.Helper()
			ids, err := in.Deliver(ctx, raw, Envelope{ClientIP: "127.0.0.1"}, targets)
			if err != nil {
				t.Fatal(err)
			}
			text := parseMessage(raw).Text
			for i, id := range ids {
				codec := byte(codecInRaw)
				switch {
				case len(raw) >= s2Content:
					codec = codecZstd // in its row, and as large as the raw source
				case !targets[i].Namespace.CaptureRawEmail:
					codec = codecS2
				}
				all = append(all, sent{id, text, raw, codec})
			}
		}
		deliver(layoutMessage(1, "x@keep-a.localhost"), target(a))
		deliver(layoutMessage(2, "x@keep-a.localhost"), target(a), target(b))     // one raw source for both
		deliver(layoutMessage(3, "x@keep-a.localhost"), target(a), target(noRaw)) // one after the raw source, one in its row
		large := append(layoutMessage(4, "x@keep-a.localhost"), bytes.Repeat([]byte("0123456789abcdef\r\n"), 4000)...)
		deliver(large, target(a))

		for _, m := range all {
			var body []byte
			if err := db.QueryRow(ctx, "SELECT body FROM emails WHERE id = ?", m.id).Scan(&body); err != nil {
				t.Fatal(err)
			}
			if len(body) == 0 || body[0] != m.bodyCodec || (m.bodyCodec == codecInRaw) != (len(body) == 1) {
				t.Errorf("email of %d bytes: emails.body starts with %v (%d bytes), want codec %d", len(m.raw), body[:min(1, len(body))], len(body), m.bodyCodec)
			}
			e, err := s.ByID(ctx, m.id)
			if err != nil {
				t.Fatal(err)
			}
			if e.Text != m.text || len(e.Links) != 1 || len(e.Codes) != 1 {
				t.Errorf("email of %d bytes reads back text %q, links %v, codes %v", len(m.raw), e.Text, e.Links, e.Codes)
			}
			raw, err := s.RawMessage(ctx, m.id)
			switch {
			case e.NamespaceID == noRaw.ID && err != ErrRawNotCaptured:
				t.Errorf("raw source of an email in a namespace that keeps none: %d bytes, %v", len(raw), err)
			case e.NamespaceID != noRaw.ID && (err != nil || !bytes.Equal(raw, m.raw)):
				t.Errorf("raw source of %d bytes read back as %d bytes (%v)", len(m.raw), len(raw), err)
			}
			res, err := s.Search(ctx, Query{NamespaceID: e.NamespaceID, SubjectIncludes: strings.TrimPrefix(e.Subject, "Your "), Limit: 10})
			if err != nil || len(res.Emails) != 1 || res.Emails[0].Text != m.text {
				t.Errorf("search for %q: %d found (%v)", e.Subject, len(res.Emails), err)
			}
		}
		// The small raw sources hold the raw source, then the body, compressed
		// together with S2; the large one holds the raw source alone, with zstd.
		rows, err := db.Query(ctx, "SELECT codec, size, data FROM raw_sources ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var got []string
		for rows.Next() {
			var codec int
			var size int64
			var data []byte
			if err := rows.Scan(&codec, &size, &data); err != nil {
				t.Fatal(err)
			}
			content, err := decodeBlob(codec, data)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("codec %d, %d of %d bytes after the raw source", codec, int64(len(content))-size, len(content)))
			if codec == codecS2 && (int64(len(content)) <= size || !json.Valid(content[size:]) || len(data) >= len(content)*3/4) {
				t.Errorf("small raw source of %d bytes: %d stored, %d of content", size, len(data), len(content))
			}
		}
		if len(got) != 4 || !strings.HasPrefix(got[3], "codec 1, 0 of") {
			t.Errorf("raw sources: %q, want three small ones and a large one", got)
		}
	})
}
