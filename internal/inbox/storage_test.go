package inbox_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// storageMessage has a compressible text body, an incompressible attachment
// (random bytes, as in a JPEG or a ZIP) and a compressible one (a log file).
func storageMessage(seed uint64) (raw, random, log []byte) {
	rng := rand.New(rand.NewPCG(seed, 7))
	random = make([]byte, 4096)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	log = []byte(strings.Repeat("2026-11-20T10:00:00Z INFO request served status=200\r\n", 100))
	var b strings.Builder
	b.WriteString("From: a@b.c\r\nTo: x@default.localhost\r\nSubject: storage\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=S\r\n\r\n")
	b.WriteString("--S\r\nContent-Type: text/plain\r\n\r\n" + strings.Repeat("lorem ipsum dolor sit amet ", 200) + "\r\n")
	b.WriteString("--S\r\nContent-Type: image/jpeg\r\nContent-Disposition: attachment; filename=photo.jpg\r\nContent-Transfer-Encoding: base64\r\n\r\n")
	b.WriteString(base64.StdEncoding.EncodeToString(random) + "\r\n")
	b.WriteString("--S\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=server.log\r\n\r\n")
	b.Write(log)
	b.WriteString("\r\n--S--\r\n") // the CRLF before a boundary belongs to the boundary (RFC 2046 section 5.1.1)
	return []byte(b.String()), random, log
}

func count(t *testing.T, db *store.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// orphans counts blobs and raw sources no row refers to: there must never be
// any.
func orphans(t *testing.T, db *store.DB) int {
	return count(t, db, `SELECT COUNT(*) FROM blobs b WHERE NOT EXISTS (SELECT 1 FROM attachments a WHERE a.blob_hash = b.hash)`) +
		count(t, db, `SELECT COUNT(*) FROM raw_sources r WHERE NOT EXISTS (SELECT 1 FROM emails e WHERE e.raw_id = r.id)`)
}

// zstdReader reads the zstd frames of stored content in tests.
var zstdReader, _ = zstd.NewReader(nil)

// bodyJSONOf reads, as stored, the body that follows an email's raw source:
// the content after the raw source's size bytes, decompressed when it is.
func bodyJSONOf(t *testing.T, e *env, id string) []byte {
	t.Helper()
	var codec int
	var size int64
	var data []byte
	if err := e.db.QueryRow(context.Background(), "SELECT r.codec, r.size, r.data FROM emails e JOIN raw_sources r ON r.id = e.raw_id WHERE e.id = ?", id).Scan(&codec, &size, &data); err != nil {
		t.Fatal(err)
	}
	var err error
	switch codec {
	case 1:
		data, err = zstdReader.DecodeAll(data, nil)
	case 2:
		data, err = s2.Decode(nil, data)
	}
	if err != nil {
		t.Fatal(err)
	}
	if size > int64(len(data)) || (int64(len(data)) > size && !json.Valid(data[size:])) {
		t.Fatalf("raw source of %d bytes: %d bytes of content do not end in a body's JSON", size, len(data))
	}
	return data[size:]
}

// attachmentBytes downloads every attachment of an email through the API.
func (e *env) attachmentBytes(id string) map[string][]byte {
	e.t.Helper()
	var list struct{ Data []inbox.Attachment }
	if resp := e.get(e.key, "/api/emails/"+id+"/attachments", &list); resp.StatusCode != 200 {
		e.t.Fatalf("attachments of %s: %d", id, resp.StatusCode)
	}
	out := map[string][]byte{}
	for _, a := range list.Data {
		resp, body := fetch(e.t, a.DownloadURL)
		if resp.StatusCode != 200 {
			e.t.Fatalf("download %s: %d", a.Filename, resp.StatusCode)
		}
		out[a.Filename] = body
	}
	return out
}

func TestStorageIsCompressedAndShared(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		org, _ := e.tenants.OrgByName(ctx, "default")
		off := false
		a, _ := e.tenants.CreateNamespace(ctx, org.ID, "keep-a", tenant.Settings{RetentionTime: ptr(60)})
		b, _ := e.tenants.CreateNamespace(ctx, org.ID, "keep-b", tenant.Settings{RetentionTime: ptr(120)})
		c, err := e.tenants.CreateNamespace(ctx, org.ID, "noraw", tenant.Settings{RetentionTime: ptr(180), CaptureRawEmail: &off})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		e.clock.Store(start.UnixMilli())
		raw, random, log := storageMessage(1)
		ids, err := e.ingester.Deliver(ctx, raw, inbox.Envelope{}, []inbox.Target{
			{Namespace: a, Recipients: []string{"x@keep-a.localhost"}},
			{Namespace: b, Recipients: []string{"x@keep-b.localhost"}},
			{Namespace: c, Recipients: []string{"x@noraw.localhost"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		// The raw source is stored once, compressed, for the two namespaces that
		// keep it, which read their attachments from it; the third has the
		// attachments' own blobs, the random one stored as it is.
		if n := count(t, db, "SELECT COUNT(*) FROM blobs"); n != 2 {
			t.Fatalf("%d blobs, want 2 (photo.jpg, server.log)", n)
		}
		var (
			codec  int
			size   int64
			stored []byte
		)
		rawSource := func() {
			t.Helper()
			if err := db.QueryRow(ctx, "SELECT r.codec, r.size, r.data FROM emails e JOIN raw_sources r ON r.id = e.raw_id WHERE e.id = ?", ids[0]).Scan(&codec, &size, &stored); err != nil {
				t.Fatal(err)
			}
		}
		// Over 16 KiB: compressed with zstd, and alone (the body is in the row).
		rawSource()
		if codec != 1 || size != int64(len(raw)) || len(stored) >= len(raw)*3/4 {
			t.Errorf("raw source: codec %d, size %d, %d bytes stored for %d", codec, size, len(stored), len(raw))
		}
		if body := bodyJSONOf(t, e, ids[0]); len(body) != 0 {
			t.Errorf("%d bytes follow the raw source of a message over 16 KiB", len(body))
		}
		if n := count(t, db, "SELECT COUNT(*) FROM raw_sources"); n != 1 {
			t.Errorf("%d raw sources for one delivery, want 1", n)
		}
		if n := count(t, db, "SELECT COUNT(DISTINCT raw_id) FROM emails WHERE raw_id IS NOT NULL"); n != 1 {
			t.Errorf("emails refer to %d raw sources, want 1", n)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM attachments WHERE in_raw AND blob_hash IS NULL"); n != 4 {
			t.Errorf("%d attachments read from the raw source, want 4", n)
		}
		if err := db.QueryRow(ctx, "SELECT b.codec, b.data FROM attachments a JOIN blobs b ON b.hash = a.blob_hash WHERE a.filename = 'photo.jpg'").Scan(&codec, &stored); err != nil {
			t.Fatal(err)
		}
		if codec != 0 || !bytes.Equal(stored, random) {
			t.Errorf("incompressible attachment stored with codec %d (%d bytes)", codec, len(stored))
		}
		if err := db.QueryRow(ctx, "SELECT b.codec, b.data FROM attachments a JOIN blobs b ON b.hash = a.blob_hash WHERE a.filename = 'server.log'").Scan(&codec, &stored); err != nil {
			t.Fatal(err)
		}
		if codec != 2 || len(stored) >= len(log)/4 {
			t.Errorf("compressible attachment: codec %d, %d bytes stored for %d", codec, len(stored), len(log))
		}
		if n := count(t, db, "SELECT COUNT(*) FROM attachments WHERE length(data) > 0"); n != 0 {
			t.Errorf("%d attachment rows still carry their bytes", n)
		}
		// The bodies are stored apart from a document without them, in
		// emails.body, compressed (S2: under 16 KiB); layout_test.go has the
		// small messages whose bodies follow their raw sources.
		for _, id := range ids {
			var doc string
			var body []byte
			if err := db.QueryRow(ctx, "SELECT doc, body FROM emails WHERE id = ?", id).Scan(&doc, &body); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(doc, "lorem") || len(body) < 2 || body[0] != 2 || len(body) > 1000 {
				t.Errorf("stored body: codec %v, %d bytes; doc carries the text: %v", body[:min(1, len(body))], len(body), strings.Contains(doc, "lorem"))
			}
		}
		var em struct{ Data inbox.Email }
		e.get(e.key, "/api/emails/"+ids[0], &em)
		if !strings.HasPrefix(em.Data.Text, "lorem ipsum dolor sit amet lorem") || len(em.Data.Text) < 5000 {
			t.Errorf("text read back: %d bytes", len(em.Data.Text))
		}
		// Every copy reads back exactly.
		for _, id := range ids {
			got := e.attachmentBytes(id)
			if !bytes.Equal(got["photo.jpg"], random) || !bytes.Equal(got["server.log"], log) {
				t.Errorf("email %s: attachments differ from what was sent", id)
			}
		}
		// The same message delivered again is another delivery with its own raw
		// source (raw sources are not content-addressed); its attachments' blobs
		// are shared.
		if _, err := e.ingester.Deliver(ctx, raw, inbox.Envelope{}, []inbox.Target{
			{Namespace: a, Recipients: []string{"y@keep-a.localhost"}},
			{Namespace: c, Recipients: []string{"y@noraw.localhost"}},
		}); err != nil {
			t.Fatal(err)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM blobs"); n != 2 {
			t.Errorf("%d blobs after a duplicate, want 2", n)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM raw_sources"); n != 2 {
			t.Errorf("%d raw sources after a second delivery, want 2", n)
		}
		// A raw source or a blob lives as long as one row refers to it.
		for _, step := range []struct {
			after            time.Duration
			blobs, raw, rows int
		}{
			{61 * time.Second, 2, 1, 3},  // keep-a gone; keep-b still refers to the first raw source
			{121 * time.Second, 2, 0, 2}, // only the namespace without raw source is left
			{181 * time.Second, 0, 0, 0},
		} {
			if _, err := inbox.Reap(ctx, db, start.Add(step.after)); err != nil {
				t.Fatal(err)
			}
			if n := count(t, db, "SELECT COUNT(*) FROM blobs"); n != step.blobs {
				t.Errorf("after %s: %d blobs, want %d", step.after, n, step.blobs)
			}
			if n := count(t, db, "SELECT COUNT(*) FROM raw_sources"); n != step.raw {
				t.Errorf("after %s: %d raw sources, want %d", step.after, n, step.raw)
			}
			if n := count(t, db, "SELECT COUNT(*) FROM emails"); n != step.rows {
				t.Errorf("after %s: %d emails, want %d", step.after, n, step.rows)
			}
			if n := orphans(t, db); n != 0 {
				t.Errorf("after %s: %d orphan blobs or raw sources", step.after, n)
			}
			if step.rows == 2 {
				e.clock.Store(start.Add(step.after).UnixMilli())
				if got := e.attachmentBytes(ids[2]); !bytes.Equal(got["photo.jpg"], random) {
					t.Error("the namespace without raw source lost its attachment")
				}
			}
		}
	})
}

// Rows written before blobs existed (bytes in the row, no blob) are still read.
func TestLegacyRowsStillRead(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		raw, random, log := storageMessage(2)
		ids, err := e.ingester.Deliver(ctx, raw, inbox.Envelope{}, []inbox.Target{{Namespace: e.ns, Recipients: []string{"x@default.localhost"}}})
		if err != nil {
			t.Fatal(err)
		}
		id := ids[0]
		var before struct{ Data inbox.Email }
		e.get(e.key, "/api/emails/"+id, &before)
		full, _ := json.Marshal(before.Data)
		// Turn the rows into the pre-migration form.
		for _, s := range []struct {
			q    string
			args []any
		}{
			{"UPDATE emails SET doc = ?, body = NULL WHERE id = ?", []any{string(full), id}},
			{"UPDATE raw_sources SET codec = 0, data = ? WHERE id = (SELECT raw_id FROM emails WHERE id = ?)", []any{raw, id}},
			{"UPDATE attachments SET data = ?, in_raw = FALSE, sha256 = '' WHERE email_id = ? AND filename = 'photo.jpg'", []any{random, id}},
			{"UPDATE attachments SET data = ?, in_raw = FALSE, sha256 = '' WHERE email_id = ? AND filename = 'server.log'", []any{log, id}},
			{"DELETE FROM blobs", nil},
		} {
			if _, err := db.Exec(ctx, s.q, s.args...); err != nil {
				t.Fatal(err)
			}
		}
		got := e.attachmentBytes(id)
		if !bytes.Equal(got["photo.jpg"], random) || !bytes.Equal(got["server.log"], log) {
			t.Error("legacy attachment bytes not read back")
		}
		var em struct{ Data inbox.Email }
		e.get(e.key, "/api/emails/"+id, &em)
		if !reflect.DeepEqual(em.Data, before.Data) || !strings.HasPrefix(em.Data.Text, "lorem") {
			t.Errorf("legacy document read back as %+v", em.Data)
		}
		var r rawSourceResp
		e.get(e.key, rawSourcePath("default", id, em.Data.ReceivedTimestamp), &r)
		if resp, body := fetch(t, r.Data.DownloadURL); resp.StatusCode != 200 || !bytes.Equal(body, raw) {
			t.Errorf("legacy raw source: %d, %d bytes", resp.StatusCode, len(body))
		}
		if n, err := inbox.Reap(ctx, db, time.Now().Add(48*time.Hour)); err != nil || n != 1 {
			t.Fatalf("Reap = %d, %v", n, err)
		}
	})
}

// subjects returns the subjects of the namespace's visible emails, newest first.
func (e *env) subjects(ns string) []string {
	e.t.Helper()
	var r searchResp
	if resp := e.get(e.key, "/api/emails/"+ns+"/inbox?limit=20", &r); resp.StatusCode != 200 {
		e.t.Fatalf("search %s: %d", ns, resp.StatusCode)
	}
	var out []string
	for _, m := range r.Data {
		out = append(out, m.Subject)
	}
	return out
}

func TestQuotaDeletesOldestAtIngest(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		org, _ := e.tenants.OrgByName(ctx, "default")
		q, err := e.tenants.CreateNamespace(ctx, org.ID, "quota", tenant.Settings{QuotaLimit: ptr(3)})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for i := 1; i <= 5; i++ {
			e.clock.Store(start.Add(time.Duration(i) * time.Second).UnixMilli())
			raw, _, _ := storageMessage(uint64(i))
			raw = bytes.Replace(raw, []byte("Subject: storage"), []byte(fmt.Sprintf("Subject: m%d", i)), 1)
			if _, err := e.ingester.Deliver(ctx, raw, inbox.Envelope{}, []inbox.Target{{Namespace: q, Recipients: []string{fmt.Sprintf("r%d@quota.localhost", i)}}}); err != nil {
				t.Fatal(err)
			}
		}
		if got := strings.Join(e.subjects("quota"), ","); got != "m5,m4,m3" {
			t.Fatalf("after 5 emails with quota 3: %s", got)
		}
		// Everything of the deleted emails went with them.
		for table, want := range map[string]int{"emails": 3, "raw_sources": 3, "attachments": 6, "blobs": 0} {
			if n := count(t, db, "SELECT COUNT(*) FROM "+table); n != want {
				t.Errorf("%s: %d rows, want %d", table, n, want)
			}
		}
		if n := count(t, db, "SELECT COUNT(*) FROM email_recipients WHERE addr IN ('r1@quota.localhost', 'r2@quota.localhost')"); n != 0 {
			t.Errorf("%d recipients of deleted emails remain", n)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM email_recipients WHERE addr IN ('r3@quota.localhost', 'r4@quota.localhost', 'r5@quota.localhost')"); n != 3 {
			t.Errorf("%d recipients of kept emails, want 3", n)
		}
		if n := orphans(t, db); n != 0 {
			t.Errorf("%d orphan blobs or raw sources", n)
		}
		// Lowering the quota applies at the next arrival; null means no limit.
		if _, err := e.tenants.UpsertNamespace(ctx, org.ID, "quota", tenant.Settings{QuotaLimit: ptr(2)}); err != nil {
			t.Fatal(err)
		}
		e.clock.Store(start.Add(10 * time.Second).UnixMilli())
		e.deliver(q, msg{from: "a@b.c", to: "x@quota.localhost", subject: "m6", body: "x"})
		if got := strings.Join(e.subjects("quota"), ","); got != "m6,m5" {
			t.Fatalf("after lowering the quota to 2: %s", got)
		}
		if _, err := e.tenants.UpsertNamespace(ctx, org.ID, "quota", tenant.Settings{ClearQuota: true}); err != nil {
			t.Fatal(err)
		}
		for i := 7; i <= 9; i++ {
			e.clock.Store(start.Add(time.Duration(10+i) * time.Second).UnixMilli())
			e.deliver(q, msg{from: "a@b.c", to: "x@quota.localhost", subject: fmt.Sprintf("m%d", i), body: "x"})
		}
		if got := strings.Join(e.subjects("quota"), ","); got != "m9,m8,m7,m6,m5" {
			t.Fatalf("with the server default (no limit): %s", got)
		}
		// Other namespaces are untouched by a quota.
		e.deliver(e.ns, msg{from: "a@b.c", to: "x@default.localhost", subject: "elsewhere", body: "x"})
		if got := e.subjects("default"); len(got) != 1 {
			t.Fatalf("default namespace: %v", got)
		}
	})
}

// Expired emails do not count against the quota; once the quota is exceeded
// they go with the oldest.
func TestQuotaCountsUnexpiredEmails(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		org, _ := e.tenants.OrgByName(ctx, "default")
		q, err := e.tenants.CreateNamespace(ctx, org.ID, "quota", tenant.Settings{QuotaLimit: ptr(2), RetentionTime: ptr(60)})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		at := func(sec int) { e.clock.Store(start.Add(time.Duration(sec) * time.Second).UnixMilli()) }
		at(0)
		e.deliver(q, msg{from: "a@b.c", to: "x@quota.localhost", subject: "old1", body: "x"})
		at(1)
		e.deliver(q, msg{from: "a@b.c", to: "x@quota.localhost", subject: "old2", body: "x"})
		at(100) // both expired, not yet reaped
		e.deliver(q, msg{from: "a@b.c", to: "x@quota.localhost", subject: "new1", body: "x"})
		at(101)
		e.deliver(q, msg{from: "a@b.c", to: "x@quota.localhost", subject: "new2", body: "x"})
		if got := strings.Join(e.subjects("quota"), ","); got != "new2,new1" {
			t.Fatalf("visible: %s", got)
		}
		at(102)
		e.deliver(q, msg{from: "a@b.c", to: "x@quota.localhost", subject: "new3", body: "x"})
		if got := strings.Join(e.subjects("quota"), ","); got != "new3,new2" {
			t.Fatalf("visible: %s", got)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM emails"); n != 2 {
			t.Errorf("%d emails stored, want 2 (the expired ones went with new1)", n)
		}
	})
}

// Concurrent deliveries into a full namespace leave exactly quota_limit emails.
func TestQuotaUnderConcurrentIngest(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		org, _ := e.tenants.OrgByName(ctx, "default")
		q, err := e.tenants.CreateNamespace(ctx, org.ID, "quota", tenant.Settings{QuotaLimit: ptr(5)})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := 0; i < 40; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := msg{from: "a@b.c", to: "x@quota.localhost", subject: fmt.Sprintf("c%d", i), extra: attachmentMIME}
				_, err := e.ingester.Deliver(ctx, m.raw(), inbox.Envelope{}, []inbox.Target{{Namespace: q, Recipients: []string{"x@quota.localhost"}}})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := count(t, db, "SELECT COUNT(*) FROM emails WHERE namespace_id = ?", q.ID); n != 5 {
			t.Errorf("%d emails after 40 concurrent deliveries with quota 5", n)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM attachments"); n != 5 {
			t.Errorf("%d attachments, want 5", n)
		}
		if n := orphans(t, db); n != 0 {
			t.Errorf("%d orphan blobs or raw sources", n)
		}
	})
}

// TestQuotaKeepsFileSizeBounded holds a namespace at its quota for many rounds
// of arrivals, each round replacing every email it holds, and checks that the
// SQLite file stops growing: the pages the quota's deletions free are reused
// by the next arrivals. Were anything of a deleted email left behind (its raw
// source, its body, its recipients), the file would grow by a round's worth
// every round.
func TestQuotaKeepsFileSizeBounded(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	e := newEnv(t, db)
	ctx := context.Background()
	org, _ := e.tenants.OrgByName(ctx, "default")
	const quota, rounds, senders = 100, 30, 8
	q, err := e.tenants.CreateNamespace(ctx, org.ID, "full", tenant.Settings{QuotaLimit: ptr(quota)})
	if err != nil {
		t.Fatal(err)
	}
	pages := func() (total, free int64) {
		if err := db.W.QueryRow("PRAGMA page_count").Scan(&total); err != nil {
			t.Fatal(err)
		}
		if err := db.W.QueryRow("PRAGMA freelist_count").Scan(&free); err != nil {
			t.Fatal(err)
		}
		return total, free
	}
	var settled, largest, freed int64
	for round := 1; round <= rounds; round++ {
		var wg sync.WaitGroup
		errs := make(chan error, quota)
		for s := 0; s < senders; s++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := s; i < quota; i += senders {
					raw, _, _ := storageMessage(uint64(round*quota + i)) // 12 KB, attachments in the raw source
					raw = bytes.Replace(raw, []byte("Subject: storage"), []byte(fmt.Sprintf("Subject: r%d-%d", round, i)), 1)
					_, err := e.ingester.Deliver(ctx, raw, inbox.Envelope{}, []inbox.Target{{Namespace: q, Recipients: []string{"x@full.localhost"}}})
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		total, free := pages()
		freed = max(freed, free)
		switch {
		case round == 3:
			settled = total // the quota is full and one round's deletions are free
		case round > 3:
			largest = max(largest, total)
		}
	}
	if n := count(t, db, "SELECT COUNT(*) FROM emails WHERE namespace_id = ?", q.ID); n != quota {
		t.Fatalf("%d emails held, want the quota's %d", n, quota)
	}
	if freed == 0 {
		t.Errorf("no page was ever free: the deletions freed nothing")
	}
	// A round's emails take about a quarter of the settled file; growth by a
	// tenth over 27 more rounds would mean pages are not coming back.
	if largest > settled+settled/10 {
		t.Errorf("file grew from %d pages after round 3 to %d by round %d: freed pages are not reused", settled, largest, rounds)
	}
	t.Logf("pages: %d after round 3, at most %d over rounds 4 to %d; most free at once %d", settled, largest, rounds, freed)
}
