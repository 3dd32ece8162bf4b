package preview

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// pageURL is the address the email is shown at. Chromium never asks the
// network for it: the request is answered from memory (Fetch.fulfillRequest).
const pageURL = "http://email.preview.invalid/"

// pageCSP is the policy the email is served with: no script, nothing fetched
// but inline data.
const pageCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; media-src data:; " +
	"form-action 'none'; base-uri 'none'"

// chromium renders HTML to PNG with one headless Chromium per render, in a
// fresh profile removed afterwards. Nothing a render loads can reach the
// network, three times over:
//   - every request of the page is intercepted before it is sent
//     (Fetch.enable on "*"): the page's own address is answered from memory,
//     every other request is failed as blocked;
//   - the browser resolves no host name (--host-resolver-rules "MAP *
//     ~NOTFOUND") and must send every connection, loopback ones included
//     (--proxy-bypass-list "<-loopback>"), through a proxy whose name does not
//     resolve, so a request that slipped past the interception has nowhere
//     to go;
//   - the page's policy (pageCSP) allows no fetch but data: URLs, and
//     scripts are off.
//
// (Chromium's local network access rules add a fourth for loopback and
// private addresses, which a page answered from memory may not ask.)
//
// The browser's background services (updates, safe browsing, metrics, sync)
// are off too.
type chromium struct {
	path    string
	timeout time.Duration

	// Tests take the guards away one at a time, to show that each alone
	// keeps the network out, and that without them a page would reach it.
	noCSP      bool // serve the page without pageCSP
	pageOnly   bool // intercept only the page's own request
	allowProxy bool // no proxy and no host resolver rules
	// noLNA turns Chromium's local network access rules off (they refuse a
	// page answered from memory its requests to loopback), so that they are
	// not what stops a loopback tracker.
	noLNA bool
}

func (c *chromium) lnaOff() string {
	if c.noLNA {
		return ",LocalNetworkAccessChecks"
	}
	return ""
}

// stats is what a render tells besides its image.
type stats struct {
	Blocked int // requests of the page refused
}

// args are Chromium's command line for a render with the profile dir.
func (c *chromium) args(dir string) []string {
	a := []string{
		"--headless", "--remote-debugging-pipe", "--user-data-dir=" + dir,
		"--no-first-run", "--no-default-browser-check", "--disable-gpu", "--hide-scrollbars", "--mute-audio",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--disable-default-apps", "--disable-domain-reliability", "--disable-client-side-phishing-detection",
		"--disable-breakpad", "--disable-crash-reporter", "--metrics-recording-only", "--no-pings",
		"--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication,CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions" + c.lnaOff(),
		"--disable-quic", "--dns-prefetch-disable",
		"--force-color-profile=srgb", "--font-render-hinting=none",
	}
	if !c.allowProxy {
		a = append(a, "--proxy-server=http://proxy.preview.invalid:9", "--proxy-bypass-list=<-loopback>",
			"--host-resolver-rules=MAP * ~NOTFOUND")
	}
	if os.Geteuid() == 0 {
		a = append(a, "--no-sandbox") // Chromium's sandbox refuses to run as root
	}
	return append(a, "about:blank")
}

// render shows doc at width CSS pixels in the scheme (light or dark) and
// returns a PNG of it, at most maxHeight pixels tall.
func (c *chromium) render(ctx context.Context, doc string, width int, scheme string) ([]byte, stats, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "catchbox-preview-")
	if err != nil {
		return nil, stats{}, fmt.Errorf("profile directory: %w", err)
	}
	defer os.RemoveAll(dir)

	toChrome, cmdIn, err := os.Pipe() // Chromium reads commands from fd 3
	if err != nil {
		return nil, stats{}, err
	}
	cmdOut, fromChrome, err := os.Pipe() // and writes answers to fd 4
	if err != nil {
		toChrome.Close()
		cmdIn.Close()
		return nil, stats{}, err
	}
	stderr := &limitedBuffer{max: 16 << 10}
	cmd := exec.Command(c.path, c.args(dir)...)
	cmd.ExtraFiles = []*os.File{toChrome, fromChrome}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.Env = append(os.Environ(), "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		toChrome.Close()
		fromChrome.Close()
		cmdIn.Close()
		cmdOut.Close()
		return nil, stats{}, fmt.Errorf("start %s: %w", c.path, err)
	}
	toChrome.Close()
	fromChrome.Close()
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		cmd.Wait()
	}()
	defer func() {
		cmdIn.Close()
		// The whole process group: Chromium's renderers and helpers too.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		cmdOut.Close()
	}()

	png, st, err := c.drive(ctx, newCDP(cmdIn, cmdOut), doc, width, scheme)
	if err != nil {
		if msg := stderr.String(); msg != "" && ctx.Err() == nil {
			err = fmt.Errorf("%w (chromium said: %.300s)", err, msg)
		}
		return nil, st, err
	}
	return png, st, nil
}

// drive runs one render over DevTools.
func (c *chromium) drive(ctx context.Context, t *cdp, doc string, width int, scheme string) ([]byte, stats, error) {
	var st stats
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := t.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, st, err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := t.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return nil, st, err
	}
	s := attached.SessionID
	metrics := func(height int) map[string]any {
		return map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}
	}
	for _, step := range []struct {
		method string
		params any
	}{
		{"Fetch.enable", map[string]any{"patterns": []map[string]any{{"urlPattern": c.intercepted()}}}},
		{"Emulation.setScriptExecutionDisabled", map[string]any{"value": true}},
		{"Emulation.setEmulatedMedia", map[string]any{"media": "screen",
			"features": []map[string]any{{"name": "prefers-color-scheme", "value": scheme}}}},
		// The page is laid out in a viewport 1 px tall, so that its content's
		// height is its own, not the viewport's.
		{"Emulation.setDeviceMetricsOverride", metrics(1)},
		{"Page.enable", map[string]any{}},
	} {
		if err := t.call(ctx, s, step.method, step.params, nil); err != nil {
			return nil, st, err
		}
	}
	// Page.navigate answers once the page's request is answered, which serve
	// does: the two run side by side.
	navigated := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				navigated <- fmt.Errorf("navigate: %v", p)
			}
		}()
		navigated <- t.call(ctx, s, "Page.navigate", map[string]any{"url": pageURL}, nil)
	}()
	if err := c.serve(ctx, t, s, doc, &st); err != nil {
		return nil, st, err
	}
	if err := <-navigated; err != nil {
		return nil, st, err
	}
	var layout struct {
		CSSContentSize struct {
			Height float64 `json:"height"`
		} `json:"cssContentSize"`
	}
	if err := t.call(ctx, s, "Page.getLayoutMetrics", map[string]any{}, &layout); err != nil {
		return nil, st, err
	}
	height := int(math.Ceil(layout.CSSContentSize.Height))
	height = min(max(height, 1), MaxHeight)
	if err := t.call(ctx, s, "Emulation.setDeviceMetricsOverride", metrics(height), nil); err != nil {
		return nil, st, err
	}
	var shot struct {
		Data string `json:"data"`
	}
	err := t.call(ctx, s, "Page.captureScreenshot", map[string]any{"format": "png", "fromSurface": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": width, "height": height, "scale": 1}}, &shot)
	if err != nil {
		return nil, st, err
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		return nil, st, fmt.Errorf("screenshot: %w", err)
	}
	t.call(ctx, "", "Browser.close", map[string]any{}, nil)
	return png, st, nil
}

// serve answers the page's requests until it has loaded: its own address
// with the email, anything else refused.
func (c *chromium) serve(ctx context.Context, t *cdp, session, doc string, st *stats) error {
	body := base64.StdEncoding.EncodeToString([]byte(doc))
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.done:
			return t.err
		case ev := <-t.events:
			if ev.SessionID != session {
				continue
			}
			switch ev.Method {
			case "Page.loadEventFired":
				return nil
			case "Fetch.requestPaused":
				var p struct {
					RequestID string `json:"requestId"`
					Request   struct {
						URL string `json:"url"`
					} `json:"request"`
				}
				if err := jsonUnmarshal(ev.Params, &p); err != nil {
					return err
				}
				var err error
				if p.Request.URL == pageURL {
					headers := []map[string]string{{"name": "Content-Type", "value": "text/html; charset=utf-8"}}
					if !c.noCSP {
						headers = append(headers, map[string]string{"name": "Content-Security-Policy", "value": pageCSP})
					}
					err = t.call(ctx, session, "Fetch.fulfillRequest", map[string]any{"requestId": p.RequestID, "responseCode": 200,
						"responseHeaders": headers, "body": body}, nil)
				} else {
					st.Blocked++
					err = t.call(ctx, session, "Fetch.failRequest", map[string]any{"requestId": p.RequestID, "errorReason": "BlockedByClient"}, nil)
				}
				if err != nil {
					return err
				}
			}
		}
	}
}

// intercepted is the pattern of the requests paused: all of them.
func (c *chromium) intercepted() string {
	if c.pageOnly {
		return pageURL
	}
	return "*"
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	b   bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
