package inbox_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// updateGolden rewrites the corpus expectations from what is received. Review
// every change to testdata/mail/*.json by hand before committing it: the files
// are the specification of what each message must become.
var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/mail/*.json from the current results")

const corpusDir = "../../testdata/mail"

// golden is what one corpus message must become through SMTP-equivalent ingest
// and the API. Every field is compared; headers lists the headers checked (the
// message has others).
type golden struct {
	Rcpts       []string           `json:"rcpts,omitempty"` // envelope recipients; default test@default.localhost
	From        inbox.Address      `json:"from"`
	To          []inbox.Address    `json:"to"`
	Cc          []inbox.Address    `json:"cc,omitempty"`
	Bcc         []inbox.Address    `json:"bcc,omitempty"`
	Subject     string             `json:"subject"`
	Text        string             `json:"text"`
	HTML        string             `json:"html"`
	Headers     map[string]string  `json:"headers"`
	Attachments []goldenAttachment `json:"attachments"`
}

type goldenAttachment struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	ContentID   string `json:"content_id,omitempty"`
	SHA256      string `json:"sha256"`
}

// goldenHeaders are the headers a golden file pins when it is rewritten.
var goldenHeaders = []string{"from", "to", "cc", "subject", "reply-to", "x-mailer", "comments", "thread-topic",
	"list-unsubscribe", "list-id", "x-folded", "content-type", "mime-version", "auto-submitted"}

func corpusFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.eml"))
	if err != nil || len(files) < 15 {
		t.Fatalf("corpus: %d files, %v", len(files), err)
	}
	sort.Strings(files)
	return files
}

// TestCorpus ingests every message of testdata/mail as the SMTP listener would,
// reads it back through the API (email, attachment list, each attachment's
// download, raw source) and compares every field with its golden file.
func TestCorpus(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		for _, file := range corpusFiles(t) {
			name := strings.TrimSuffix(filepath.Base(file), ".eml")
			t.Run(name, func(t *testing.T) {
				raw, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				goldenPath := strings.TrimSuffix(file, ".eml") + ".json"
				var want golden
				if data, err := os.ReadFile(goldenPath); err == nil {
					if err := json.Unmarshal(data, &want); err != nil {
						t.Fatalf("%s: %v", goldenPath, err)
					}
				} else if !*updateGolden {
					t.Fatalf("no golden file: %v", err)
				}
				rcpts := want.Rcpts
				if len(rcpts) == 0 {
					rcpts = []string{"test@default.localhost"}
				}
				got := e.ingestCorpus(raw, rcpts)
				got.Rcpts = want.Rcpts
				if *updateGolden {
					if db.Dialect == store.SQLite {
						writeGolden(t, goldenPath, got)
					}
					return
				}
				compareGolden(t, want, got)
			})
		}
	})
}

// ingestCorpus delivers raw and reads it back through the API as a golden.
func (e *env) ingestCorpus(raw []byte, rcpts []string) golden {
	t := e.t
	t.Helper()
	ids, err := e.ingester.Deliver(context.Background(), raw, inbox.Envelope{ClientIP: "192.0.2.1", Helo: "mx.example.net", MailFrom: "sender@example.net"},
		[]inbox.Target{{Namespace: e.ns, Recipients: rcpts}})
	if err != nil {
		t.Fatal(err)
	}
	id := ids[0]
	var em struct{ Data inbox.Email }
	if resp := e.get(e.key, "/api/emails/"+id, &em); resp.StatusCode != 200 {
		t.Fatalf("GET email: %d", resp.StatusCode)
	}
	g := golden{From: em.Data.From, To: em.Data.To, Cc: em.Data.Cc, Bcc: em.Data.Bcc, Subject: em.Data.Subject,
		Text: em.Data.Text, HTML: em.Data.HTML, Headers: map[string]string{}, Attachments: []goldenAttachment{}}
	for _, h := range goldenHeaders {
		if v, ok := em.Data.Headers[h]; ok {
			g.Headers[h] = v
		}
	}
	var list struct{ Data []inbox.Attachment }
	if resp := e.get(e.key, "/api/emails/"+id+"/attachments", &list); resp.StatusCode != 200 {
		t.Fatalf("GET attachments: %d", resp.StatusCode)
	}
	if len(list.Data) != len(em.Data.Attachments) {
		t.Fatalf("%d attachments listed, %d in the email", len(list.Data), len(em.Data.Attachments))
	}
	for i, a := range list.Data {
		s := em.Data.Attachments[i]
		if s.ID != a.ID || s.Filename != a.Filename || s.ContentType != a.ContentType || s.Size != a.Size || s.ContentID != a.ContentID {
			t.Errorf("attachment %d: summary %+v differs from metadata %+v", i, s, a)
		}
		body := download(t, a.DownloadURL)
		if int64(len(body)) != a.Size {
			t.Errorf("attachment %s: downloaded %d bytes, size says %d", a.Filename, len(body), a.Size)
		}
		sum := sha256.Sum256(body)
		g.Attachments = append(g.Attachments, goldenAttachment{Filename: a.Filename, ContentType: a.ContentType, Size: a.Size,
			ContentID: a.ContentID, SHA256: hex.EncodeToString(sum[:])})
	}
	// The raw source is the exact bytes received.
	var rs struct {
		Data struct {
			DownloadURL string `json:"download_url"`
			Size        int64  `json:"size"`
		}
	}
	path := fmt.Sprintf("/api/emails/default/%s/deliverability-report/raw-source?received_timestamp=%d", id, em.Data.ReceivedTimestamp)
	if resp := e.get(e.key, path, &rs); resp.StatusCode != 200 {
		t.Fatalf("GET raw-source: %d", resp.StatusCode)
	}
	if got := download(t, rs.Data.DownloadURL); !bytes.Equal(got, raw) || rs.Data.Size != int64(len(raw)) {
		t.Errorf("raw source: %d bytes (size %d), want the %d bytes received", len(got), rs.Data.Size, len(raw))
	}
	return g
}

func download(t *testing.T, link string) []byte {
	t.Helper()
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v %s", link, resp.StatusCode, err, body)
	}
	return body
}

func compareGolden(t *testing.T, want, got golden) {
	t.Helper()
	check := func(field string, w, g any) {
		if !reflect.DeepEqual(w, g) {
			t.Errorf("%s:\n got %#v\nwant %#v", field, g, w)
		}
	}
	check("from", want.From, got.From)
	check("to", want.To, got.To)
	check("cc", want.Cc, got.Cc)
	check("bcc", want.Bcc, got.Bcc)
	check("subject", want.Subject, got.Subject)
	check("text", want.Text, got.Text)
	check("html", want.HTML, got.HTML)
	for k, v := range want.Headers {
		check("headers["+k+"]", v, got.Headers[k])
	}
	for k := range got.Headers {
		if _, ok := want.Headers[k]; !ok {
			t.Errorf("headers[%s] = %q is not in the golden file", k, got.Headers[k])
		}
	}
	if len(want.Attachments) != len(got.Attachments) {
		t.Errorf("attachments: got %d, want %d: %+v", len(got.Attachments), len(want.Attachments), got.Attachments)
		return
	}
	for i := range want.Attachments {
		check(fmt.Sprintf("attachments[%d]", i), want.Attachments[i], got.Attachments[i])
	}
}

func writeGolden(t *testing.T, path string, g golden) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(g); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
