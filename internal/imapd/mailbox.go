package imapd

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/metrics"
)

// How a mailbox keeps up with its namespace (docs/imap.md, "Keeping up"):
// a wake-up from notify (an email committed on any replica) makes it look at
// once; between wake-ups it checks every pollInterval with one cheap
// statement, which is how deletions by the API, retention and quota on any
// replica, and flag changes made on another replica, are noticed; and every
// fullInterval it looks closer whatever the check said.
const (
	pollInterval = time.Second
	fullInterval = 30 * time.Second
	syncTimeout  = 30 * time.Second
)

// mailboxes are the namespaces open in this process: one mailbox per
// namespace, shared by every session that selected it, so that a thousand
// idle clients of one namespace cost one wake-up subscription and one check a
// second.
type mailboxes struct {
	srv *Server

	mu sync.Mutex
	m  map[string]*mailbox
}

// snapshot is a mailbox's messages at one moment, by UID, expired emails the
// reaper has not deleted yet included (a view hides them). A snapshot is never
// changed once published: a change makes a new one.
type snapshot struct {
	msgs        []inbox.MailboxMessage
	uidValidity uint32
	uidNext     uint32
	modseq      int64
}

// live is the number of messages not expired at nowMs.
func (s *snapshot) live(nowMs int64) int {
	n := 0
	for i := range s.msgs {
		if s.msgs[i].ExpiresMs > nowMs {
			n++
		}
	}
	return n
}

// find returns the message of uid, if the snapshot holds it.
func (s *snapshot) find(uid uint32) (*inbox.MailboxMessage, bool) {
	i := sort.Search(len(s.msgs), func(i int) bool { return s.msgs[i].UID >= uid })
	if i < len(s.msgs) && s.msgs[i].UID == uid {
		return &s.msgs[i], true
	}
	return nil, false
}

// mailbox is one namespace's messages in this process, kept up to date by a
// goroutine of its own while at least one session holds it.
type mailbox struct {
	boxes       *mailboxes
	namespaceID string
	refs        int // sessions holding it, under boxes.mu

	syncMu sync.Mutex // one sync at a time
	mu     sync.Mutex
	snap   *snapshot
	views  map[*view]struct{}
	sizes  map[string]int64 // sizes of rebuilt messages, by email id
	synced time.Time        // end of the last sync

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// acquire returns the namespace's mailbox, opening it (its row made on the
// first IMAP access, its messages read) if no session holds it yet.
func (b *mailboxes) acquire(ctx context.Context, namespaceID string) (*mailbox, error) {
	b.mu.Lock()
	if mb := b.m[namespaceID]; mb != nil {
		mb.refs++
		b.mu.Unlock()
		return mb, nil
	}
	b.mu.Unlock()

	mb := &mailbox{boxes: b, namespaceID: namespaceID, views: map[*view]struct{}{}, sizes: map[string]int64{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	row, err := b.srv.searcher.OpenMailbox(ctx, namespaceID)
	if err != nil {
		return nil, err
	}
	mb.snap = &snapshot{uidValidity: row.UIDValidity, uidNext: 1}
	if err := mb.sync(ctx, true); err != nil {
		return nil, err
	}

	b.mu.Lock()
	if other := b.m[namespaceID]; other != nil {
		// Another session opened it meanwhile: use that one.
		other.refs++
		b.mu.Unlock()
		return other, nil
	}
	mb.refs = 1
	b.m[namespaceID] = mb
	b.mu.Unlock()
	go mb.watch()
	return mb, nil
}

// release gives back a mailbox acquire returned; the last one closes it.
func (b *mailboxes) release(mb *mailbox) {
	b.mu.Lock()
	mb.refs--
	last := mb.refs == 0
	if last {
		delete(b.m, mb.namespaceID)
	}
	b.mu.Unlock()
	if last {
		close(mb.stop)
		<-mb.done
	}
}

// snapshot returns the current snapshot.
func (mb *mailbox) snapshot() *snapshot {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return mb.snap
}

// watch keeps the mailbox up to date until it is released: it looks on every
// wake-up of the namespace's topic, checks every pollInterval, looks closer
// every fullInterval, and tells the views when a message expires.
func (mb *mailbox) watch() {
	defer close(mb.done)
	defer func() {
		if p := recover(); p != nil {
			slog.Error("Panic in an IMAP mailbox watcher", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	sub := mb.boxes.srv.notifier.Subscribe(inbox.NamespaceTopic(mb.namespaceID))
	defer sub.Close()
	poll := time.NewTicker(pollInterval)
	defer poll.Stop()
	expiry := time.NewTimer(time.Hour)
	defer expiry.Stop()
	lastFull := time.Now()
	for {
		mb.armExpiry(expiry)
		full := false
		select {
		case <-mb.stop:
			return
		case <-sub.C:
		case <-mb.kick:
		case <-poll.C:
			full = time.Since(lastFull) >= fullInterval
		case <-expiry.C:
			mb.notify()
			continue
		}
		if full {
			lastFull = time.Now()
		}
		ctx, cancel := context.WithTimeout(mb.boxes.srv.ctx, syncTimeout)
		if err := mb.sync(ctx, full); err != nil && ctx.Err() == nil {
			slog.Warn("Bringing an IMAP mailbox up to date failed; trying again", "namespace_id", mb.namespaceID, "err", err)
		}
		cancel()
	}
}

// armExpiry sets t to fire when the next unexpired message expires.
func (mb *mailbox) armExpiry(t *time.Timer) {
	now := time.Now().UnixMilli()
	next := int64(0)
	for _, m := range mb.snapshot().msgs {
		if m.ExpiresMs > now && (next == 0 || m.ExpiresMs < next) {
			next = m.ExpiresMs
		}
	}
	wait := time.Hour
	if next != 0 {
		wait = time.Duration(next-now)*time.Millisecond + time.Millisecond
	}
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(wait)
}

// refresh brings the mailbox up to date now if it was not within maxAge: the
// cheap check, and a closer look only when it finds a change.
func (mb *mailbox) refresh(ctx context.Context, maxAge time.Duration) error {
	mb.mu.Lock()
	fresh := time.Since(mb.synced) < maxAge
	mb.mu.Unlock()
	if fresh {
		return nil
	}
	return mb.sync(ctx, false)
}

// sync brings the snapshot up to date with the store and tells the views when
// it changed. The check (inbox.CheckMailbox) says whether anything changed
// since the snapshot: new UIDs, changed flags (modseq), deleted rows, or
// emails without a UID yet (then they are given theirs); only what changed is
// read. full gives UIDs and reads every message whatever the check says, in
// case the counts it compares were ever off.
func (mb *mailbox) sync(ctx context.Context, full bool) error {
	mb.syncMu.Lock()
	defer mb.syncMu.Unlock()
	srv := mb.boxes.srv
	start := time.Now()
	old := mb.snapshot()
	check, err := srv.searcher.CheckMailbox(ctx, mb.namespaceID, start)
	if err != nil {
		return err
	}
	unassigned := check.Live - old.live(start.UnixMilli())
	if unassigned > 0 || full {
		n, err := srv.searcher.AssignUIDs(ctx, mb.namespaceID)
		if err != nil {
			return err
		}
		if n > 0 {
			if check, err = srv.searcher.CheckMailbox(ctx, mb.namespaceID, start); err != nil {
				return err
			}
		}
	}
	changed := check.UIDNext != old.uidNext || check.Modseq != old.modseq || check.Rows != len(old.msgs)
	if !changed && !full {
		mb.markSynced()
		return nil
	}
	next := &snapshot{uidValidity: old.uidValidity, uidNext: check.UIDNext, modseq: check.Modseq}
	msgs := old.msgs
	if full {
		if msgs, err = srv.searcher.MailboxMessages(ctx, mb.namespaceID, 0); err != nil {
			return err
		}
	} else {
		if check.UIDNext != old.uidNext {
			added, err := srv.searcher.MailboxMessages(ctx, mb.namespaceID, old.uidNext)
			if err != nil {
				return err
			}
			// A read may see UIDs given after the check: keep each once.
			last := uint32(0)
			if len(msgs) > 0 {
				last = msgs[len(msgs)-1].UID
			}
			for len(added) > 0 && added[0].UID <= last {
				added = added[1:]
			}
			msgs = append(append(make([]inbox.MailboxMessage, 0, len(msgs)+len(added)), msgs...), added...)
		}
		if check.Modseq != old.modseq {
			changes, err := srv.searcher.ChangedFlags(ctx, mb.namespaceID, old.modseq)
			if err != nil {
				return err
			}
			if len(changes) > 0 {
				msgs = append([]inbox.MailboxMessage(nil), msgs...)
				tmp := &snapshot{msgs: msgs}
				for _, c := range changes {
					if m, ok := tmp.find(c.UID); ok {
						m.Flags, m.Modseq = c.Flags, c.Modseq
					}
				}
			}
		}
		if check.Rows < len(msgs) {
			uids, err := srv.searcher.MailboxUIDs(ctx, mb.namespaceID)
			if err != nil {
				return err
			}
			keep := make(map[uint32]bool, len(uids))
			for _, u := range uids {
				keep[u] = true
			}
			kept := make([]inbox.MailboxMessage, 0, len(uids))
			for _, m := range msgs {
				if keep[m.UID] {
					kept = append(kept, m)
				}
			}
			msgs = kept
		}
	}
	next.msgs = msgs
	if n := len(msgs); n > 0 && msgs[n-1].UID >= next.uidNext {
		// UIDs given between the check and the read: the next look starts
		// after them.
		next.uidNext = msgs[n-1].UID + 1
	}
	mb.mu.Lock()
	mb.snap = next
	mb.synced = time.Now()
	mb.mu.Unlock()
	metrics.MailboxSync(time.Since(start))
	if !sameMessages(old, next) {
		mb.notify()
	}
	return nil
}

func (mb *mailbox) markSynced() {
	mb.mu.Lock()
	mb.synced = time.Now()
	mb.mu.Unlock()
}

// sameMessages reports whether two snapshots hold the same messages with the
// same flags.
func sameMessages(a, b *snapshot) bool {
	if len(a.msgs) != len(b.msgs) {
		return false
	}
	for i := range a.msgs {
		if a.msgs[i].UID != b.msgs[i].UID || a.msgs[i].Flags != b.msgs[i].Flags {
			return false
		}
	}
	return true
}

// notify tells every view of the mailbox that it may have updates to send.
func (mb *mailbox) notify() {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	for v := range mb.views {
		select {
		case v.updates <- struct{}{}:
		default: // one is pending already
		}
	}
}

// requestSync asks the watcher to look now.
func (mb *mailbox) requestSync() {
	select {
	case mb.kick <- struct{}{}:
	default:
	}
}

// rebuiltSize remembers and returns the size of a rebuilt message.
func (mb *mailbox) rebuiltSize(emailID string) (int64, bool) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	n, ok := mb.sizes[emailID]
	return n, ok
}

func (mb *mailbox) setRebuiltSize(emailID string, n int64) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if len(mb.sizes) > 100_000 {
		clear(mb.sizes)
	}
	mb.sizes[emailID] = n
}
