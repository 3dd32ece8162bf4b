package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/store"
)

// httpClient bounds every API call; held searches use their own context.
var httpClient = &http.Client{Timeout: 90 * time.Second}

// apiEmail is the part of the Email resource the tests look at.
type apiEmail struct {
	ID          string `json:"id"`
	Subject     string `json:"subject"`
	Attachments []struct {
		ID       string `json:"id"`
		Filename string `json:"filename"`
		Size     int64  `json:"size"`
	} `json:"attachments"`
}

type searchResult struct {
	TotalCount int        `json:"total_count"`
	Data       []apiEmail `json:"data"`
}

// apiGet calls the API with the test key and decodes a 200 response into out.
func apiGet(ctx context.Context, base, path string, query url.Values, out any) error {
	return apiGetWith(ctx, httpClient, base, path, query, out)
}

// apiGetWith is apiGet through client: heldSearch's client answers a 307 as
// the failure it is, where httpClient would follow it.
// A 429 is waited out for its Retry-After and asked again, as a client of the
// API must: the checks after a load test ask thousands of questions with one
// key, faster than the key's rate on a quick machine.
func apiGetWith(ctx context.Context, client *http.Client, base, path string, query url.Values, out any) error {
	u := base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var (
		res  *http.Response
		body []byte
	)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		req.Header.Set("X-Api-Key", testAPIKey)
		if res, err = client.Do(req); err != nil {
			return err
		}
		body, err = io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return fmt.Errorf("GET %s: %w", path, err)
		}
		if res.StatusCode != http.StatusTooManyRequests {
			break
		}
		wait, err := strconv.Atoi(res.Header.Get("Retry-After"))
		if err != nil || wait < 1 {
			return fmt.Errorf("GET %s: status 429 with Retry-After %q: %s", path, res.Header.Get("Retry-After"), body)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("GET %s: status 429, and %w before its Retry-After", path, ctx.Err())
		case <-time.After(time.Duration(wait) * time.Second):
		}
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d: %s", path, res.StatusCode, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GET %s: decode: %w", path, err)
	}
	return nil
}

// heldSearch runs a wait=true search of the default namespace that must be
// answered within its first hold: a 307 (the hold ended without a wake-up) is
// an error, not a redirect to follow.
func heldSearch(ctx context.Context, base string, query url.Values) (searchResult, error) {
	var r searchResult
	client := &http.Client{Transport: httpClient.Transport, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	err := apiGetWith(ctx, client, base, "/api/emails/"+namespace+"/inbox", query, &r)
	return r, err
}

// search runs an inbox search of the default namespace.
func search(ctx context.Context, base string, query url.Values) (searchResult, error) {
	var r searchResult
	err := apiGet(ctx, base, "/api/emails/"+namespace+"/inbox", query, &r)
	return r, err
}

// findMessage returns the one stored email of m, found by its subject and by
// its recipient (both must find exactly it).
func findMessage(ctx context.Context, base string, m message) (apiEmail, error) {
	bySubject, err := search(ctx, base, url.Values{"subject_includes": {m.Subject}})
	if err != nil {
		return apiEmail{}, err
	}
	if bySubject.TotalCount != 1 || len(bySubject.Data) != 1 || bySubject.Data[0].Subject != m.Subject {
		return apiEmail{}, fmt.Errorf("subject_includes=%q: total_count %d, want 1", m.Subject, bySubject.TotalCount)
	}
	byRcpt, err := search(ctx, base, url.Values{"to_addr_prefix": {m.To}})
	if err != nil {
		return apiEmail{}, err
	}
	if byRcpt.TotalCount != 1 || len(byRcpt.Data) != 1 || byRcpt.Data[0].ID != bySubject.Data[0].ID {
		return apiEmail{}, fmt.Errorf("to_addr_prefix=%q: total_count %d, want the email found by subject", m.To, byRcpt.TotalCount)
	}
	return bySubject.Data[0], nil
}

// attachmentLink is the seed's Attachment as listed for an email.
type attachmentLink struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	Size        int64  `json:"size"`
	DownloadURL string `json:"download_url"`
}

// attachments lists an email's attachments with their signed links.
func attachments(ctx context.Context, base, emailID string) ([]attachmentLink, error) {
	var r struct {
		Data []attachmentLink `json:"data"`
	}
	err := apiGet(ctx, base, "/api/emails/"+url.PathEscape(emailID)+"/attachments", nil, &r)
	return r.Data, err
}

// download fetches a signed link without the API key, as clients do.
func download(ctx context.Context, link string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return nil, err
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download: status %d: %s", res.StatusCode, body)
	}
	return body, nil
}

// checkAttachment verifies that m's attachment is listed for e and downloads
// with the bytes that were sent.
func checkAttachment(ctx context.Context, base string, m message, e apiEmail) error {
	if len(e.Attachments) != 1 || e.Attachments[0].Filename != m.attachmentName() {
		return fmt.Errorf("email of %s lists attachments %+v, want one named %s", m.Token, e.Attachments, m.attachmentName())
	}
	links, err := attachments(ctx, base, e.ID)
	if err != nil {
		return err
	}
	if len(links) != 1 || links[0].ID != e.Attachments[0].ID {
		return fmt.Errorf("attachments of %s: %+v, want the one its email lists", m.Token, links)
	}
	data, err := download(ctx, links[0].DownloadURL)
	if err != nil {
		return fmt.Errorf("attachment of %s: %w", m.Token, err)
	}
	if !bytes.Equal(data, m.attachmentData()) {
		return fmt.Errorf("attachment of %s: %d bytes differ from the %d sent", m.Token, len(data), len(m.attachmentData()))
	}
	return nil
}

// verifyAcked checks through the API of base that every acknowledged attempt
// is stored and searchable, with its attachment. It checks in a few parallel
// workers and reports every missing message, not just the first.
func verifyAcked(t *testing.T, base string, as []attempt) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	work := make(chan attempt)
	var (
		mu       sync.Mutex
		problems []string
		checked  int
		wg       sync.WaitGroup
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range work {
				e, err := findMessage(ctx, base, a.Msg)
				if err == nil && a.Msg.Attach {
					err = checkAttachment(ctx, base, a.Msg, e)
				}
				mu.Lock()
				checked++
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s (acknowledged by %s at %s): %v", a.Msg.Token, a.Addr, a.At.Format("15:04:05.000"), err))
				}
				mu.Unlock()
			}
		}()
	}
	for _, a := range as {
		if a.Outcome == acked {
			work <- a
		}
	}
	close(work)
	wg.Wait()
	if len(problems) > 0 {
		if len(problems) > 20 {
			problems = append(problems[:20], fmt.Sprintf("... and %d more", len(problems)-20))
		}
		t.Errorf("%d of %d acknowledged messages are not stored as sent:", len(problems), checked)
		for _, p := range problems {
			t.Errorf("  %s", p)
		}
	}
}

// integrity is what checkIntegrity found in the store.
type integrity struct {
	Emails, Attachments int
}

// checkIntegrity opens the store at dbURL and fails the test if any message is
// half stored: an email without its recipient rows or raw source, an email
// whose document lists an attachment that is missing (or points elsewhere), or
// an attachment without its email.
func checkIntegrity(t *testing.T, dbURL string) integrity {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatalf("open store for the integrity check: %v", err)
	}
	defer db.Close()
	ids := func(q string) []string {
		t.Helper()
		rows, err := db.Query(ctx, q)
		if err != nil {
			t.Fatalf("integrity query %q: %v", q, err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatalf("integrity query %q: %v", q, err)
			}
			out = append(out, id)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("integrity query %q: %v", q, err)
		}
		return out
	}
	if bad := ids("SELECT e.id FROM emails e WHERE NOT EXISTS (SELECT 1 FROM email_recipients r WHERE r.email_seq = e.seq)"); len(bad) > 0 {
		t.Errorf("%d emails have no recipient rows, e.g. %s", len(bad), bad[0])
	}
	if bad := ids("SELECT e.id FROM emails e WHERE NOT EXISTS (SELECT 1 FROM raw_sources s WHERE s.id = e.raw_id)"); len(bad) > 0 {
		t.Errorf("%d emails have no raw source although the namespace captures it, e.g. %s", len(bad), bad[0])
	}
	if bad := ids("SELECT a.id FROM attachments a WHERE NOT EXISTS (SELECT 1 FROM emails e WHERE e.id = a.email_id)"); len(bad) > 0 {
		t.Errorf("%d attachments belong to no email, e.g. %s", len(bad), bad[0])
	}

	owner := map[string]string{} // attachment id -> email id
	rows, err := db.Query(ctx, "SELECT id, email_id FROM attachments")
	if err != nil {
		t.Fatalf("list attachments: %v", err)
	}
	for rows.Next() {
		var id, email string
		if err := rows.Scan(&id, &email); err != nil {
			t.Fatalf("list attachments: %v", err)
		}
		owner[id] = email
	}
	rows.Close()
	var res integrity
	res.Attachments = len(owner)
	rows, err = db.Query(ctx, "SELECT id, doc FROM emails")
	if err != nil {
		t.Fatalf("list emails: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, doc string
		if err := rows.Scan(&id, &doc); err != nil {
			t.Fatalf("list emails: %v", err)
		}
		res.Emails++
		var e apiEmail
		if err := json.Unmarshal([]byte(doc), &e); err != nil {
			t.Errorf("email %s: document does not decode: %v", id, err)
			continue
		}
		for _, a := range e.Attachments {
			if owner[a.ID] != id {
				t.Errorf("email %s lists attachment %s, which is not stored with it", id, a.ID)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("list emails: %v", err)
	}
	return res
}

// metric reads the server's GET /metrics and returns the sum of the samples of
// the family name whose labels include labels (none: every sample); a family
// with no such sample yet is 0.
func metric(t *testing.T, ctx context.Context, base, name string, labels map[string]string) float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", res.StatusCode, err)
	}
	var sum float64
	for line := range strings.Lines(string(body)) {
		series, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || strings.HasPrefix(series, "#") {
			continue
		}
		family, set, _ := strings.Cut(strings.TrimSuffix(series, "}"), "{")
		if family != name {
			continue
		}
		have := map[string]string{}
		for pair := range strings.SplitSeq(set, ",") {
			if k, v, ok := strings.Cut(pair, "="); ok {
				have[k], _ = strconv.Unquote(v)
			}
		}
		match := true
		for k, v := range labels {
			match = match && have[k] == v
		}
		if !match {
			continue
		}
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("/metrics: %q: %v", line, err)
		}
		sum += f
	}
	return sum
}
