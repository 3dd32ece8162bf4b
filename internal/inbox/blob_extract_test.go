package inbox

import (
	"bytes"
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
		var se storedEmail
		if err := db.QueryRow(context.Background(), "SELECT "+emailCols+" FROM emails e"+rawJoin+" WHERE e.id = ?", ids[0]).Scan(se.dest()...); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(se.doc, "links") || strings.Contains(se.doc, "codes") {
			t.Errorf("document %s", se.doc)
		}
		// The body follows the raw source, which the namespace keeps.
		if !bytes.Equal(se.body, bodyInRaw) {
			t.Fatalf("emails.body is %q, want the marker of a body after the raw source", se.body)
		}
		content, err := decodeBlob(int(se.rawCodec.Int64), se.rawData)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(content[:se.rawSize.Int64]); got != raw {
			t.Fatalf("raw source stored as %q", got)
		}
		plain := content[se.rawSize.Int64:]
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
	js, err := bodyJSON(storedBody{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	e, err = decodeEmail(`{"id":"x","subject":"Welcome"}`, packBody(js))
	check("body read at ingest", e, err, []Link{}, []string{})
}
