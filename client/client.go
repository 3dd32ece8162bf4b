package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultURL is the server's address when CATCHBOX_URL is not set: where
// catchbox serve listens by default.
const DefaultURL = "http://127.0.0.1:8025"

// Client talks to one Catchbox server with one API key. It is safe for
// concurrent use.
type Client struct {
	base *url.URL
	key  string
	http *http.Client
	// minHold is the shortest time a wait request may take before the next
	// one is sent (see follow).
	minHold time.Duration
	// retries is how many times a request answered 429 is sent again.
	retries int
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the Client send its requests with hc: for a proxy, TLS
// settings or a transport of the test's own. Its redirect policy is not used:
// the Client follows the 307 redirects of waits itself, and hc's Timeout must
// be longer than the server's wait hold (CATCHBOX_WAIT_HOLD, 20 s by default)
// or waits fail; prefer a context deadline.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		copied := *hc
		copied.CheckRedirect = noRedirects
		c.http = &copied
	}
}

// WithRetries sets how many times a request the server refuses with 429 Too
// Many Requests is sent again, each after the Retry-After the server names
// (3 by default; 0 returns the first 429 as an *Error).
func WithRetries(n int) Option {
	return func(c *Client) { c.retries = max(n, 0) }
}

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// New returns a Client of the server at baseURL (scheme, host and port, with
// or without a path prefix) using apiKey.
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("catchbox: server URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("catchbox: server URL %q: want http://host:port or https://host:port", baseURL)
	}
	if apiKey == "" {
		return nil, errors.New("catchbox: no API key (CATCHBOX_API_KEY)")
	}
	c := &Client{base: u, key: apiKey, http: &http.Client{CheckRedirect: noRedirects}, minHold: 100 * time.Millisecond, retries: 3}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// NewFromEnv returns a Client of the server named by CATCHBOX_URL (DefaultURL
// when unset) with the key in CATCHBOX_API_KEY.
func NewFromEnv(opts ...Option) (*Client, error) {
	base := os.Getenv("CATCHBOX_URL")
	if base == "" {
		base = DefaultURL
	}
	return New(base, os.Getenv("CATCHBOX_API_KEY"), opts...)
}

// BaseURL returns the server URL the Client talks to.
func (c *Client) BaseURL() string { return c.base.String() }

// request is one API call.
type request struct {
	method string
	path   string     // escaped path below the base URL, starting with /api/
	query  url.Values // nil for none
	body   any        // encoded as JSON when not nil
}

// do sends req and decodes a 2xx answer into out (unless nil). Any other
// answer is returned as an *Error.
func (c *Client) do(ctx context.Context, req request, out any) error {
	resp, err := c.send(ctx, req.method, c.url(req.path, req.query), req.body)
	if err != nil {
		return err
	}
	return decode(resp, out)
}

// url returns the absolute URL of an API path.
func (c *Client) url(path string, query url.Values) string {
	s := c.base.String() + path
	if len(query) > 0 {
		s += "?" + query.Encode()
	}
	return s
}

// send sends one request with the API key and returns the response. A 429
// (the server's request limit) is sent again after the Retry-After it names,
// up to the Client's retries, while ctx allows; the last 429 is returned as
// any other answer.
func (c *Client) send(ctx context.Context, method, target string, body any) (*http.Response, error) {
	var payload []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("catchbox: encode %s %s: %w", method, target, err)
		}
		payload = b
	}
	for attempt := 0; ; attempt++ {
		resp, err := c.sendOnce(ctx, method, target, payload, body != nil)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests || attempt >= c.retries {
			return resp, err
		}
		delay := retryAfter(resp.Header.Get("Retry-After"))
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < delay {
			return resp, nil // the wait would outlast the caller: give them the 429
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("catchbox: %s %s: %w", method, target, ctx.Err())
		case <-t.C:
		}
	}
}

// sendOnce sends one request with the API key.
func (c *Client) sendOnce(ctx context.Context, method, target string, payload []byte, hasBody bool) (*http.Response, error) {
	var rd io.Reader
	if hasBody {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("catchbox: %w", err)
	}
	req.Header.Set("X-Api-Key", c.key)
	req.Header.Set("Accept", "application/json")
	if hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("catchbox: %s %s: %w", method, req.URL.Path, err)
	}
	return resp, nil
}

// retryAfter reads a Retry-After header, in seconds or as an HTTP date; one
// second when it is missing or unreadable, at most a minute.
func retryAfter(h string) time.Duration {
	d := time.Second
	if n, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && n >= 0 {
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = time.Until(t)
	}
	return min(max(d, 0), time.Minute)
}

// decode reads a response: a 2xx body into out, anything else as an *Error.
func decode(resp *http.Response, out any) error {
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return readError(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("catchbox: %s %s: decode answer: %w", resp.Request.Method, resp.Request.URL.Path, err)
	}
	return nil
}

// follow sends a wait request, and the request again each time the server
// answers 307 because its hold ended with no match, until it answers anything
// else or ctx ends. A server whose hold is very short (or that redirects at
// once) is asked again no sooner than minHold after the previous request, so a
// wait never spins.
func (c *Client) follow(ctx context.Context, target string, out any) error {
	for {
		start := time.Now()
		resp, err := c.send(ctx, http.MethodGet, target, nil)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("catchbox: wait: %w", ctx.Err())
			}
			return err
		}
		if resp.StatusCode != http.StatusTemporaryRedirect {
			return decode(resp, out)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		next, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
		if err != nil || resp.Header.Get("Location") == "" {
			return fmt.Errorf("catchbox: wait: redirect without a valid Location (%q)", resp.Header.Get("Location"))
		}
		target = next.String()
		if rest := c.minHold - time.Since(start); rest > 0 {
			t := time.NewTimer(rest)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("catchbox: wait: %w", ctx.Err())
			case <-t.C:
			}
		}
	}
}

// Ptr returns a pointer to v, for the optional fields of requests:
// client.Ptr(3600).
func Ptr[T any](v T) *T { return &v }

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }
