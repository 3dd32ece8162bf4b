package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/mail"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/catchbox/catchbox/internal/outbound/relaytest"
)

// runRelay runs an SMTP relay sink for outbound mail (internal/outbound/
// relaytest): it requires AUTH PLAIN with the given credentials and answers
// each recipient by its local part (defer... 451, bounce... 550, any other
// 250). It prints one JSON line with its CATCHBOX_RELAY_URL, then one per
// message it accepts, until its standard input ends or it is signalled. The
// end-to-end suite starts it before catchbox serve and reads what it got.
func runRelay(args []string, stdout io.Writer) error {
	fs := newFlagSet("relay")
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	user := fs.String("user", "catchbox", "AUTH PLAIN user the relay requires")
	pass := fs.String("pass", "relay-secret", "AUTH PLAIN password the relay requires")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	r, err := relaytest.StartOn(*addr, *user, *pass)
	if err != nil {
		return err
	}
	defer r.Close()
	var mu sync.Mutex
	enc := json.NewEncoder(stdout)
	emit := func(v any) {
		mu.Lock()
		defer mu.Unlock()
		enc.Encode(v)
	}
	r.Notify(func(m relaytest.Message) {
		line := map[string]any{"from": m.From, "to": m.To, "queue_id": m.QueueID, "size": len(m.Data),
			"at": m.At.UTC().Format("2006-01-02T15:04:05.000Z07:00")}
		if msg, err := mail.ReadMessage(strings.NewReader(string(m.Data))); err == nil {
			line["message_id"] = msg.Header.Get("Message-Id")
			line["subject"] = msg.Header.Get("Subject")
		}
		emit(line)
	})
	emit(map[string]any{"url": r.URL(), "addr": r.Addr})
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-done:
	case s := <-sig:
		fmt.Fprintln(os.Stderr, "catchbox-bench relay:", s)
	}
	return nil
}
