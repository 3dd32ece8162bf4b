package inbox

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// TestLinksAndCodesAreStoredWithTheBodies checks where ingest keeps an email's
// links and codes: in its compressed body, not in its document.
func TestLinksAndCodesAreStoredWithTheBodies(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		in := NewIngester(db, notify.NewHub())
		defer in.Close()
		ns := extractBenchNamespace(t, db)
		raw := "From: a@example.com\r\nTo: x@default.localhost\r\nSubject: Welcome\r\n\r\nYour code is 482913: https://app.example/confirm?t=1\r\n"
		ids, err := in.Deliver(context.Background(), []byte(raw), Envelope{}, []Target{{Namespace: ns, Recipients: []string{"x@default.localhost"}}})
		if err != nil {
			t.Fatal(err)
		}
		var doc string
		var body []byte
		if err := db.QueryRow(context.Background(), "SELECT doc, body FROM emails WHERE id = ?", ids[0]).Scan(&doc, &body); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(doc, "links") || strings.Contains(doc, "codes") {
			t.Errorf("document %s", doc)
		}
		plain, err := decodeBlob(int(body[0]), body[1:])
		if err != nil {
			t.Fatal(err)
		}
		var sb storedBody
		if err := json.Unmarshal(plain, &sb); err != nil || !slices.Equal(sb.Codes, []string{"482913"}) ||
			!slices.Equal(sb.Links, []Link{{Href: "https://app.example/confirm?t=1"}}) {
			t.Errorf("stored body %s (%v)", plain, err)
		}
	})
}

// TestDecodeEmailReadsOlderRows checks that rows stored before links and codes
// were read at ingest get them when they are read, and that newer rows are not
// read again.
func TestDecodeEmailReadsOlderRows(t *testing.T) {
	const text = "Your code is 482913: https://app.example/confirm?t=1"
	wantLinks := []Link{{Href: "https://app.example/confirm?t=1"}}
	check := func(name string, e Email, err error, links []Link, codes []string) {
		t.Helper()
		if err != nil || !slices.Equal(e.Links, links) || !slices.Equal(e.Codes, codes) {
			t.Errorf("%s: links %+v, codes %q, %v", name, e.Links, e.Codes, err)
		}
	}
	// The oldest rows: bodies in the document, no body column.
	e, err := decodeEmail(`{"id":"x","subject":"Welcome","text":"`+text+`"}`, nil)
	check("bodies in the document", e, err, wantLinks, []string{"482913"})

	// Rows with a body column of text and html only.
	old, _ := json.Marshal(map[string]string{"text": text})
	p := pack(old)
	e, err = decodeEmail(`{"id":"x","subject":"Welcome"}`, append([]byte{byte(p.codec)}, p.data...))
	check("body without links", e, err, wantLinks, []string{"482913"})

	// A row read at ingest keeps what ingest read, [] included.
	body, err := encodeBody(storedBody{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	e, err = decodeEmail(`{"id":"x","subject":"Welcome"}`, body)
	check("body read at ingest", e, err, []Link{}, []string{})
}
