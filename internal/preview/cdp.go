package preview

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
)

// cdp speaks the Chrome DevTools Protocol over the pipes Chromium opens with
// --remote-debugging-pipe: one JSON message per command, answer and event,
// each ended by a NUL byte. Commands to a page carry the session id that
// attaching to it gave (flat mode).
type cdp struct {
	w      io.Writer
	mu     sync.Mutex // serializes writes and guards the fields below
	nextID int64
	wait   map[int64]chan cdpMessage
	events chan cdpMessage
	done   chan struct{} // closed when the reader ends
	err    error         // why the reader ended
}

// cdpMessage is any message Chromium sends.
type cdpMessage struct {
	ID        int64           `json:"id"`
	Method    string          `json:"method"`
	SessionID string          `json:"sessionId"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// maxMessage bounds one message from Chromium: a screenshot of the largest
// preview, base64-encoded, fits with room to spare.
const maxMessage = 64 << 20

func newCDP(w io.Writer, r io.Reader) *cdp {
	c := &cdp{w: w, wait: map[int64]chan cdpMessage{}, events: make(chan cdpMessage, 256), done: make(chan struct{})}
	go c.read(r)
	return c
}

// read dispatches Chromium's messages: answers to their command's waiter,
// events to the events channel.
func (c *cdp) read(r io.Reader) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("Preview: DevTools reader panicked", "err", fmt.Errorf("%v", p))
			c.fail(errors.New("devtools reader failed"))
		}
	}()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxMessage)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, 0); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	for sc.Scan() {
		var m cdpMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue
		}
		if m.ID != 0 {
			c.mu.Lock()
			ch := c.wait[m.ID]
			delete(c.wait, m.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		select {
		case c.events <- m:
		default: // nobody reads events this busy; the render will time out
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	c.fail(fmt.Errorf("devtools pipe closed: %w", err))
}

func (c *cdp) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.done:
	default:
		c.err = err
		close(c.done)
	}
}

// call sends a command (to the page of session, or to the browser when
// session is "") and decodes its result into out, unless nil.
func (c *cdp) call(ctx context.Context, session, method string, params, out any) error {
	ch := make(chan cdpMessage, 1)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.wait[id] = ch
	msg, err := json.Marshal(map[string]any{"id": id, "sessionId": session, "method": method, "params": params})
	if err == nil {
		_, err = c.w.Write(append(msg, 0))
	}
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("devtools %s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("devtools %s: %s", method, m.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
