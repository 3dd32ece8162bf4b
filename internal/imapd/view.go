package imapd

import (
	"sort"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/catchbox/catchbox/internal/inbox"
)

// view is one session's sight of its selected mailbox: the messages the
// client knows, in the order of their sequence numbers (RFC 9051 section
// 2.3.1.2), and their flags as last told. The mailbox's snapshot moves on
// without it; update tells the client what changed (EXISTS, EXPUNGE, FETCH
// FLAGS) at the moments the protocol allows, and only then does the view move.
type view struct {
	mb       *mailbox
	readOnly bool

	uids  []uint32      // sequence number i+1 is uids[i]
	flags []inbox.Flags // flags of uids[i] as last told
	// searchRes is the saved result of SEARCH RETURN (SAVE) (RFC 5182).
	searchRes imap.UIDSet

	updates chan struct{} // a value when the mailbox changed
}

// newView makes a view of the mailbox's unexpired messages now.
func newView(mb *mailbox, readOnly bool) *view {
	v := &view{mb: mb, readOnly: readOnly, updates: make(chan struct{}, 1)}
	now := time.Now().UnixMilli()
	for _, m := range mb.snapshot().msgs {
		if m.ExpiresMs > now {
			v.uids = append(v.uids, m.UID)
			v.flags = append(v.flags, m.Flags)
		}
	}
	mb.mu.Lock()
	mb.views[v] = struct{}{}
	mb.mu.Unlock()
	return v
}

// close detaches the view from its mailbox.
func (v *view) close() {
	v.mb.mu.Lock()
	delete(v.mb.views, v)
	v.mb.mu.Unlock()
}

// updateWriter is what update writes to: the library's UpdateWriter, or a
// command's own writer for EXPUNGE.
type updateWriter interface {
	WriteExpunge(seqNum uint32) error
	WriteNumMessages(n uint32) error
	WriteMessageFlags(seqNum uint32, uid imap.UID, flags []imap.Flag) error
}

// update tells the client how the mailbox changed since the view last moved,
// and moves it: expunged messages (only when expunge is allowed: not during
// FETCH, STORE or SEARCH, RFC 9051 section 7.5.1), changed flags, and new
// messages (one EXISTS). Expired messages count as expunged.
func (v *view) update(w updateWriter, expunge bool) error {
	snap := v.mb.snapshot()
	now := time.Now().UnixMilli()
	visible := func(uid uint32) (*inbox.MailboxMessage, bool) {
		m, ok := snap.find(uid)
		if !ok || m.ExpiresMs <= now {
			return nil, false
		}
		return m, true
	}
	if expunge {
		// From the highest sequence number down, so that each EXPUNGE leaves
		// the numbers below it as the client has them.
		for i := len(v.uids) - 1; i >= 0; i-- {
			if _, ok := visible(v.uids[i]); ok {
				continue
			}
			if err := w.WriteExpunge(uint32(i + 1)); err != nil {
				return err
			}
			v.uids = append(v.uids[:i], v.uids[i+1:]...)
			v.flags = append(v.flags[:i], v.flags[i+1:]...)
		}
	}
	for i, uid := range v.uids {
		m, ok := visible(uid)
		if !ok || m.Flags == v.flags[i] {
			continue
		}
		if err := w.WriteMessageFlags(uint32(i+1), imap.UID(uid), flagList(m.Flags)); err != nil {
			return err
		}
		v.flags[i] = m.Flags
	}
	last := uint32(0)
	if len(v.uids) > 0 {
		last = v.uids[len(v.uids)-1]
	}
	start := sort.Search(len(snap.msgs), func(i int) bool { return snap.msgs[i].UID > last })
	added := false
	for _, m := range snap.msgs[start:] {
		if m.ExpiresMs > now {
			v.uids = append(v.uids, m.UID)
			v.flags = append(v.flags, m.Flags)
			added = true
		}
	}
	if added {
		return w.WriteNumMessages(uint32(len(v.uids)))
	}
	return nil
}

// target is a message a command names: its sequence number in the view and
// its current state, when the mailbox still has it.
type target struct {
	seq uint32
	msg inbox.MailboxMessage
}

// resolve returns the messages numSet names, in sequence order: sequence
// numbers and UIDs as the client knows them ("*" is the last), "$" the saved
// search result. A message expunged since the client learnt of it is left out.
func (v *view) resolve(numSet imap.NumSet) []target {
	snap := v.mb.snapshot()
	if imap.IsSearchRes(numSet) {
		numSet = v.searchRes
	}
	var out []target
	add := func(i int) {
		if m, ok := snap.find(v.uids[i]); ok {
			out = append(out, target{seq: uint32(i + 1), msg: *m})
		}
	}
	switch set := numSet.(type) {
	case imap.SeqSet:
		n := uint32(len(v.uids))
		for _, r := range set {
			start, stop := dynamic(r.Start, r.Stop, n)
			for s := start; s <= stop && s <= n && s >= 1; s++ {
				add(int(s - 1))
			}
		}
		sortTargets(out)
	case imap.UIDSet:
		last := uint32(0)
		if len(v.uids) > 0 {
			last = v.uids[len(v.uids)-1]
		}
		for _, r := range set {
			start, stop := dynamic(uint32(r.Start), uint32(r.Stop), last)
			i := sort.Search(len(v.uids), func(i int) bool { return v.uids[i] >= start })
			for ; i < len(v.uids) && v.uids[i] <= stop; i++ {
				add(i)
			}
		}
		sortTargets(out)
	}
	return dedup(out)
}

// dynamic turns a range whose ends may be "*" (0) into a static one (RFC 9051
// section 9, seq-range: "*" is the largest number in use, and a range may be
// given in either order).
func dynamic(start, stop, largest uint32) (uint32, uint32) {
	if start == 0 {
		start = largest
	}
	if stop == 0 {
		stop = largest
	}
	if start > stop {
		start, stop = stop, start
	}
	return start, stop
}

func sortTargets(t []target) {
	sort.Slice(t, func(i, j int) bool { return t[i].seq < t[j].seq })
}

func dedup(t []target) []target {
	out := t[:0]
	for i, x := range t {
		if i == 0 || x.seq != t[i-1].seq {
			out = append(out, x)
		}
	}
	return out
}

// flagList is flags as IMAP writes them.
func flagList(f inbox.Flags) []imap.Flag {
	out := make([]imap.Flag, 0, 5)
	for _, kf := range knownFlags {
		if f&kf.bit != 0 {
			out = append(out, kf.flag)
		}
	}
	return out
}

// knownFlags are the flags kept, with their names (RFC 9051 section 2.3.2).
var knownFlags = []struct {
	flag imap.Flag
	bit  inbox.Flags
}{
	{imap.FlagSeen, inbox.FlagSeen},
	{imap.FlagAnswered, inbox.FlagAnswered},
	{imap.FlagFlagged, inbox.FlagFlagged},
	{imap.FlagDeleted, inbox.FlagDeleted},
	{imap.FlagDraft, inbox.FlagDraft},
}

// flagBits is the set of the kept flags among flags; keywords and \Recent
// are left out (docs/imap.md).
func flagBits(flags []imap.Flag) inbox.Flags {
	var f inbox.Flags
	for _, fl := range flags {
		for _, kf := range knownFlags {
			if equalFold(string(fl), string(kf.flag)) {
				f |= kf.bit
			}
		}
	}
	return f
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
