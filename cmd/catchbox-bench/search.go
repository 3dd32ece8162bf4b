package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// searchQuery is one of the three first-page searches the benchmark times.
type searchQuery struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// searchResult is the timing of one query.
type searchResult struct {
	Name   string `json:"name"`
	URL    string `json:"url"`
	Total  int64  `json:"total_count"` // matches the server reported
	Errors int    `json:"errors"`
	Error  string `json:"error,omitempty"`
	// FirstMs is the first request's time (a warm-up one when there are
	// any): what a server pays once, such as loading a cache.
	FirstMs float64 `json:"first_ms"`
	Latency Latency `json:"latency"`
}

// searchReport is the JSON form of the search subcommand's result.
type searchReport struct {
	Label    string         `json:"label,omitempty"`
	Server   string         `json:"server"` // catchbox or mailpit
	API      string         `json:"api"`
	Requests int            `json:"requests"`
	Queries  []searchResult `json:"queries"`
}

// runSearch times the first page of an inbox search, unfiltered and with each
// of the two filters the search benchmark is specified for. With --mailpit it
// asks Mailpit's own API the equivalent questions, so one tool measures both.
func runSearch(args []string, stdout io.Writer) error {
	fs := newFlagSet("search")
	api := fs.String("api", "http://127.0.0.1:8025", "HTTP base URL")
	key := fs.String("key", "", "API key (X-Api-Key); not used with --mailpit")
	ns := fs.String("namespace", "default", "namespace to search; not used with --mailpit")
	requests := fs.Int("requests", 500, "requests per query (1 to 100000)")
	warmup := fs.Int("warmup", 5, "untimed requests per query before timing")
	limit := fs.Int("limit", 10, "page size")
	subject := fs.String("subject-includes", "", "subject substring to search for (required)")
	toPrefix := fs.String("to-addr-prefix", "", "recipient address prefix to search for (required)")
	mailpit := fs.Bool("mailpit", false, "query Mailpit's API (/api/v1/messages and /api/v1/search) instead of Catchbox's")
	label := fs.String("label", "", "name of the server under test, echoed in the report")
	timeout := fs.Duration("request-timeout", 60*time.Second, "give up on one request after this long")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *requests < 1 || *requests > 100000 {
		return fmt.Errorf("--requests must be between 1 and 100000")
	}
	if *subject == "" || *toPrefix == "" {
		return fmt.Errorf("--subject-includes and --to-addr-prefix are required")
	}
	base := strings.TrimRight(*api, "/")
	var queries []searchQuery
	server := "catchbox"
	if *mailpit {
		server = "mailpit"
		queries = mailpitQueries(base, *limit, *subject, *toPrefix)
	} else {
		queries = catchboxQueries(base, *ns, *limit, *subject, *toPrefix)
	}

	client := &http.Client{Timeout: *timeout}
	rep := searchReport{Label: *label, Server: server, API: base, Requests: *requests}
	var line strings.Builder
	fmt.Fprintf(&line, "search %s server=%s requests=%d", *label, server, *requests)
	for _, q := range queries {
		r := timeQuery(client, q, *key, *warmup, *requests)
		rep.Queries = append(rep.Queries, r)
		fmt.Fprintf(&line, "\n  %-16s total=%d errors=%d first=%.2fms %s", q.Name, r.Total, r.Errors, r.FirstMs, r.Latency)
		if r.Error != "" {
			fmt.Fprintf(&line, " first_error=%q", r.Error)
		}
	}
	return report(stdout, *asJSON, rep, line.String())
}

// catchboxQueries are the seed's GET /api/emails/{namespace}/inbox searches.
func catchboxQueries(base, ns string, limit int, subject, toPrefix string) []searchQuery {
	u := func(extra url.Values) string {
		q := url.Values{"limit": {strconv.Itoa(limit)}, "offset": {"0"}}
		for k, v := range extra {
			q[k] = v
		}
		return base + "/api/emails/" + url.PathEscape(ns) + "/inbox?" + q.Encode()
	}
	return []searchQuery{
		{"unfiltered", u(nil)},
		{"subject_includes", u(url.Values{"subject_includes": {subject}})},
		{"to_addr_prefix", u(url.Values{"to_addr_prefix": {toPrefix}})},
	}
}

// mailpitQueries are the nearest Mailpit equivalents: its message list, and
// its search with subject: and to: terms (both substring matches there).
func mailpitQueries(base string, limit int, subject, toPrefix string) []searchQuery {
	search := func(term string) string {
		q := url.Values{"query": {term}, "limit": {strconv.Itoa(limit)}}
		return base + "/api/v1/search?" + q.Encode()
	}
	return []searchQuery{
		{"unfiltered", base + "/api/v1/messages?limit=" + strconv.Itoa(limit)},
		{"subject_includes", search(`subject:"` + subject + `"`)},
		{"to_addr_prefix", search(`to:"` + toPrefix + `"`)},
	}
}

// timeQuery runs one query warmup+requests times, sequentially on one
// keep-alive connection, and times each request to its last body byte.
func timeQuery(client *http.Client, q searchQuery, key string, warmup, requests int) searchResult {
	r := searchResult{Name: q.Name, URL: q.URL}
	lat := make([]time.Duration, 0, requests)
	for i := range warmup + requests {
		start := time.Now()
		total, err := getPage(client, q.URL, key)
		d := time.Since(start)
		if i == 0 {
			r.FirstMs = float64(d.Microseconds()) / 1000
		}
		if err != nil {
			r.Errors++
			if r.Error == "" {
				r.Error = err.Error()
			}
			continue
		}
		r.Total = total
		if i >= warmup {
			lat = append(lat, d)
		}
	}
	r.Latency = summarize(lat)
	return r
}

// getPage fetches one page and returns the number of matches it reports:
// total_count for Catchbox, messages_count for Mailpit.
func getPage(client *http.Client, u, key string) (int64, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("build request: %w", err)
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("search: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, fmt.Errorf("read search answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("search answered %s: %.200s", resp.Status, body)
	}
	var page struct {
		TotalCount    *int64 `json:"total_count"`
		MessagesCount *int64 `json:"messages_count"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return 0, fmt.Errorf("decode search answer: %w", err)
	}
	switch {
	case page.TotalCount != nil:
		return *page.TotalCount, nil
	case page.MessagesCount != nil:
		return *page.MessagesCount, nil
	}
	return 0, errors.New("search answer has neither total_count nor messages_count")
}
