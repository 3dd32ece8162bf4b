// Package index is the in-memory index of inbox searches on the SQLite store:
// for each namespace searched, a copy of the columns a substring search reads
// (seq, received and expiry times, folded subject and From address), ordered
// as the inbox is, with a trigram index by block of 256 rows. inbox.Searcher
// asks it first, and searches in SQLite when it cannot answer (a namespace
// over the budget, a shared store). An exact total_count must see every
// match, and a common value has thousands: the copy checks them where they lie
// in memory, while SQLite would fetch each from the emails table, and a search
// reads only the blocks that may hold its value (docs/flow.md, section 6, has
// the figures). The copy is made on a namespace's first substring search,
// brought up to date at each search in the search's read transaction, and
// bounded in memory as a whole (least recently searched namespaces are dropped
// first).
//
// Keeping the copy exact needs no help from the writers. Emails are never
// changed once stored, and a SQLite seq is never less than one already
// committed, so the emails added since the copy's last update are those past
// its seq. Emails are deleted in two ways only: the quota deletes a
// namespace's oldest emails (a prefix in inbox order), and the reaper deletes
// expired ones, which a search skips anyway. Each update drops the prefix
// before the namespace's oldest email, then compares the copy's unexpired rows
// with the namespace's count (namespace_counts, less the expired emails not yet
// reaped): any other difference, whoever made it, makes the copy load again.
//
// Dropping a prefix only moves the start of the copy's arrays, so that searches
// still reading the previous copy are not disturbed; the memory is given back
// by compacting the copy into new arrays once the dropped rows or text outweigh
// the live ones. A namespace held at its quota, which drops as many rows as it
// gains, so stays within a small factor of a fresh load, and each compaction
// copies no more than what was dropped since the last.
package index

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/catchbox/catchbox/internal/store"
)

// DefaultBudget is the memory the copies may take unless configured.
const DefaultBudget = 128 << 20

// estRowBytes estimates a row's memory with its text, to decide before loading
// whether a namespace fits the budget, until a copy of the namespace over the
// budget has shown its own.
const estRowBytes = 112

// rowBytes is a row's memory besides its text: seq, received and expiry times,
// an offset and 8 bytes of trigram index per text column.
const rowBytes = 3*8 + 2*(4+blockWords*8/blockRows)

// logLoadRows is the size from which loading a namespace's copy is logged: a
// load long enough for an operator to want to see it.
const logLoadRows = 10000

// maxCatchUp is how far behind the store (in seq, across all namespaces) a copy
// may fall and still be caught up row by row rather than loaded again; it is
// raised to the copy's own length, so that catching up never costs more than
// a load.
const maxCatchUp = 10000

// Copy is one namespace's copy at one moment, as View returns it. A Copy is
// never changed once published: updates append past its length, or make a
// new one, so that a search may go on reading it while the next is made.
type Copy struct {
	through int64 // the highest seq the store had given when the copy was last updated
	base    int   // rows dropped before row 0 since the copy was made: row i is row base+i of the trigram index
	dead    int   // rows dropped since the arrays were made, still in their memory

	seq, recv, exp []int64 // in inbox order: received_ms, then seq
	subj, from     textColumn
}

// textColumn is one searched text of a copy, folded: the subjects or the From
// addresses.
type textColumn struct {
	text []byte
	off  []uint32 // row i's text is text[off[i]:off[i+1]]

	// How often each byte occurs in text (counted as rows are added, not taken
	// off when rows are dropped), for choosing the byte a search looks for. An
	// array, so that each published copy has its own.
	freq [256]uint32

	// The trigram index: for each block of blockRows rows, counted from the
	// copy's first row ever, a bit set of the byte trigrams the block's texts
	// hold, blockWords words a block from block firstBlock on. A search skips a
	// whole block that lacks one of the value's trigrams. A block is only read
	// once full: until then appends set its bits.
	firstBlock int
	blocks     []uint64
	deadWords  int // words of blocks dropped since the column was compacted, still in memory
}

// The trigram index's block: 256 rows, a 16,384-bit set per column (8 bytes a
// row each). The set is large for a block's trigrams, so that it stays sparse
// and a value with a few uncommon trigrams is looked for in few blocks.
const (
	blockRows  = 256
	blockBits  = 1 << 14
	blockWords = blockBits / 64
)

// trigramBit is the bit of a block's set for the trigram at s[0:3].
func trigramBit(s []byte) uint32 {
	x := uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16
	return (x * 2654435761) >> (32 - 14)
}

// trigramBits returns the bits of s's trigrams.
func trigramBits(s []byte) []uint32 {
	var bits []uint32
	for i := 0; i+3 <= len(s); i++ {
		bits = append(bits, trigramBit(s[i:]))
	}
	return bits
}

func newTextColumn() textColumn { return textColumn{off: []uint32{0}} }

// add appends the text of row abs (counted as the trigram index counts),
// folding it unless it is folded already. It fails when the text would pass
// what uint32 offsets can address.
func (t *textColumn) add(s []byte, folded bool, abs int) error {
	n := len(t.text)
	if folded {
		t.text = append(t.text, s...)
	} else {
		t.text = appendFolded(t.text, s)
	}
	if int64(len(t.text)) > 1<<32-1 {
		return errTooLarge
	}
	for _, b := range t.text[n:] {
		t.freq[b]++
	}
	at := (abs/blockRows - t.firstBlock) * blockWords
	for len(t.blocks) < at+blockWords {
		t.blocks = append(t.blocks, make([]uint64, blockWords)...)
	}
	set := t.blocks[at : at+blockWords]
	for i := n; i+3 <= len(t.text); i++ {
		b := trigramBit(t.text[i:])
		set[b/64] |= 1 << (b % 64)
	}
	t.off = append(t.off, uint32(len(t.text)))
	return nil
}

// at returns row i's text.
func (t *textColumn) at(i int) []byte { return t.text[t.off[i]:t.off[i+1]] }

// dropRows forgets the first k rows, base being the new first row's number.
// Their text stays in the array until the column is compacted; the index keeps
// the block that base is in.
func (t *textColumn) dropRows(k, base int) {
	t.off = t.off[k:]
	if drop := base/blockRows - t.firstBlock; drop > 0 {
		t.blocks = t.blocks[drop*blockWords:]
		t.firstBlock += drop
		t.deadWords += drop * blockWords
	}
}

// deadText is the text of the rows dropped since the column was compacted.
func (t *textColumn) deadText() int { return int(t.off[0]) }

// liveText is the text of the column's rows.
func (t *textColumn) liveText() int { return int(t.off[len(t.off)-1] - t.off[0]) }

// compacted returns the column's rows in new arrays of their size, with its
// byte frequencies counted again. The trigram index keeps its blocks: rows keep
// their numbers.
func (t *textColumn) compacted() textColumn {
	start := t.off[0]
	out := textColumn{firstBlock: t.firstBlock}
	out.text = append([]byte(nil), t.text[start:t.off[len(t.off)-1]]...)
	out.off = make([]uint32, len(t.off))
	for i, o := range t.off {
		out.off[i] = o - start
	}
	for _, b := range out.text {
		out.freq[b]++
	}
	out.blocks = append([]uint64(nil), t.blocks...)
	return out
}

// mayHold reports whether block (counted as the index counts) has every bit
// of bits, that is, whether its texts may hold a value with those trigrams.
func (t *textColumn) mayHold(block int, bits []uint32) bool {
	set := t.blocks[(block-t.firstBlock)*blockWords:][:blockWords]
	for _, b := range bits {
		if set[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// rarest returns the index in needle of its byte that is rarest in the text.
func (t *textColumn) rarest(needle []byte) int {
	j := 0
	for i := range needle {
		if t.freq[needle[i]] < t.freq[needle[j]] {
			j = i
		}
	}
	return j
}

// bytes is the column's memory; dead is the number of rows dropped since it
// was compacted, whose offsets the array still holds.
func (t *textColumn) bytes(dead int) int64 {
	return int64(cap(t.text)) + int64(cap(t.off)+dead)*4 + int64(cap(t.blocks)+t.deadWords)*8
}

func (c *Copy) len() int { return len(c.seq) }

// bytes is the copy's memory, with the rows dropped since it was compacted
// (counted until then, although an append that moves an array to a larger one
// leaves them behind sooner).
func (c *Copy) bytes() int64 {
	return int64(cap(c.seq)+cap(c.recv)+cap(c.exp)+3*c.dead)*8 + c.subj.bytes(c.dead) + c.from.bytes(c.dead)
}

// freshBytes is the memory a fresh load of the copy's rows would take.
func (c *Copy) freshBytes() int64 {
	return loadBytes(int64(c.len()), int64(c.subj.liveText()+c.from.liveText()))
}

// loadBytes is the memory of a copy of rows rows holding text bytes of text.
func loadBytes(rows, text int64) int64 {
	return rows*rowBytes + text + 2*blockWords*8 // and the part-filled block
}

// compacted returns the copy in new arrays of its rows' size.
func (c *Copy) compacted() Copy {
	out := *c
	out.dead = 0
	out.seq = append([]int64(nil), c.seq...)
	out.recv = append([]int64(nil), c.recv...)
	out.exp = append([]int64(nil), c.exp...)
	out.subj, out.from = c.subj.compacted(), c.from.compacted()
	return out
}

// emailRow is one email's searched columns, as read from the store.
type emailRow struct {
	seq, recv, exp int64
	subj, from     string
}

func (r emailRow) before(recv, seq int64) bool {
	return r.recv < recv || (r.recv == recv && r.seq < seq)
}

// emptyCopy returns a copy with no rows.
func emptyCopy(through int64) Copy {
	return Copy{through: through, subj: newTextColumn(), from: newTextColumn()}
}

// add appends rows, which must come after the copy's last row in inbox order.
func (c *Copy) add(rows []emailRow) error {
	for _, r := range rows {
		if err := c.addRow(r.seq, r.recv, r.exp, []byte(r.subj), []byte(r.from), false); err != nil {
			return err
		}
	}
	return nil
}

// addRow appends one row, folding its subject and From address unless they are
// folded already. It fails when the text would pass what a copy can address.
func (c *Copy) addRow(seq, recv, exp int64, subj, from []byte, folded bool) error {
	abs := c.base + c.len()
	if err := c.subj.add(subj, folded, abs); err != nil {
		return err
	}
	if err := c.from.add(from, folded, abs); err != nil {
		return err
	}
	c.seq = append(c.seq, seq)
	c.recv = append(c.recv, recv)
	c.exp = append(c.exp, exp)
	return nil
}

// copyRow appends row i of src.
func (c *Copy) copyRow(src *Copy, i int) error {
	return c.addRow(src.seq[i], src.recv[i], src.exp[i], src.subj.at(i), src.from.at(i), true)
}

// appendFolded appends store.Fold(s) to dst, without a string for ASCII text.
func appendFolded(dst, s []byte) []byte {
	for _, b := range s {
		if b >= utf8.RuneSelf {
			return append(dst, store.Fold(string(s))...)
		}
	}
	for _, b := range s {
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		dst = append(dst, b)
	}
	return dst
}

// merged returns a new copy with the rows of c and rows (sorted in inbox
// order), for rows that do not all come after c's last one.
func (c *Copy) merged(rows []emailRow) (Copy, error) {
	out := emptyCopy(c.through)
	out.seq = make([]int64, 0, c.len()+len(rows))
	out.recv = make([]int64, 0, c.len()+len(rows))
	out.exp = make([]int64, 0, c.len()+len(rows))
	i, j := 0, 0
	for i < c.len() || j < len(rows) {
		var err error
		if j == len(rows) || (i < c.len() && !rows[j].before(c.recv[i], c.seq[i])) {
			err = out.copyRow(c, i)
			i++
		} else {
			r := rows[j]
			err = out.addRow(r.seq, r.recv, r.exp, []byte(r.subj), []byte(r.from), false)
			j++
		}
		if err != nil {
			return Copy{}, err
		}
	}
	return out, nil
}

// dropBefore returns the copy without its rows before (recv, seq) in inbox
// order. The arrays are resliced, and shared with c, until the rows dropped
// outweigh the rows kept, in number or in either text; then the copy is
// compacted into new arrays.
func (c Copy) dropBefore(recv, seq int64) Copy {
	k := sort.Search(c.len(), func(i int) bool { return c.recv[i] > recv || (c.recv[i] == recv && c.seq[i] >= seq) })
	if k == 0 {
		return c
	}
	c.seq, c.recv, c.exp = c.seq[k:], c.recv[k:], c.exp[k:]
	c.base += k
	c.dead += k
	c.subj.dropRows(k, c.base)
	c.from.dropRows(k, c.base)
	if c.dead > c.len() || c.subj.deadText() > c.subj.liveText() || c.from.deadText() > c.from.liveText() {
		c = c.compacted()
	}
	return c
}

// unexpired counts the rows that expire after nowMs.
func (c *Copy) unexpired(nowMs int64) int64 {
	var n int64
	for _, e := range c.exp {
		if e > nowMs {
			n++
		}
	}
	return n
}

// Query is what a search of a copy asks: the emails whose subject holds
// Subject and whose From address holds From (as substrings, folded as
// store.Fold folds; at least one of the two is set), received within the
// bounds (Unix ms, inclusive; nil for none); and the page of Limit of them
// from Offset, newest first.
type Query struct {
	Subject, From string
	FromMs, ToMs  *int64
	Offset, Limit int
}

// needles returns q's substrings folded, nil where not set.
func (q Query) needles() (subj, from []byte) {
	if q.Subject != "" {
		subj = []byte(store.Fold(q.Subject))
	}
	if q.From != "" {
		from = []byte(store.Fold(q.From))
	}
	return subj, from
}

// Search counts the emails matching q that expire after nowMs, and returns
// the seqs of q's page of them, newest first.
func (c *Copy) Search(q Query, nowMs int64) (total int, page []int64) {
	subj, from := q.needles()
	return c.search(q, nowMs, subj, from)
}

// Matches returns the seqs of every email matching q's substrings and time
// bounds that expires after nowMs, oldest first; q's page is not applied.
func (c *Copy) Matches(q Query, nowMs int64) []int64 {
	subj, from := q.needles()
	var seqs []int64
	lo, hi := c.timeRange(q)
	c.scan(lo, hi, nowMs, subj, from, func(row int) { seqs = append(seqs, c.seq[row]) })
	return seqs
}

// search counts the rows matching q's time bounds and needles that expire
// after nowMs and returns the seqs of the page's rows, newest first. The
// needles are folded; at least one is set. The last offset+limit matches are
// kept in a ring, as the page is counted from the newest.
func (c *Copy) search(q Query, nowMs int64, subj, from []byte) (total int, page []int64) {
	lo, hi := c.timeRange(q)
	keep := max(hi-lo, 0)
	if q.Offset < keep && q.Offset+q.Limit < keep {
		keep = max(q.Offset+q.Limit, 1)
	}
	ring := make([]int64, keep)
	c.scan(lo, hi, nowMs, subj, from, func(row int) {
		ring[total%keep] = c.seq[row]
		total++
	})
	page = make([]int64, 0, q.Limit)
	for m := total - 1 - q.Offset; m >= 0 && m >= total-q.Offset-q.Limit; m-- {
		page = append(page, ring[m%keep])
	}
	return total, page
}

// timeRange returns the rows lo to hi (exclusive) received within q's time
// bounds.
func (c *Copy) timeRange(q Query) (lo, hi int) {
	lo, hi = 0, c.len()
	if q.FromMs != nil {
		min := *q.FromMs
		lo = sort.Search(c.len(), func(i int) bool { return c.recv[i] >= min })
	}
	if q.ToMs != nil {
		max := *q.ToMs
		hi = sort.Search(c.len(), func(i int) bool { return c.recv[i] > max })
	}
	return lo, hi
}

// scan calls match, oldest first, with each row from lo to hi (exclusive)
// whose texts hold the needles and that expires after nowMs.
//
// One needle drives: it is sought in the text of all the rows at once, by its
// byte that is rarest in that text (SIMD byte search, at memory speed between
// occurrences; a value's first bytes are often in every row, "for user …"),
// and each row it is found in is then checked for the rest.
func (c *Copy) scan(lo, hi int, nowMs int64, subj, from []byte, match func(row int)) {
	if lo >= hi {
		return
	}
	col, needle, other, otherNeedle := &c.subj, subj, &c.from, from
	if len(subj) == 0 {
		col, needle, otherNeedle = &c.from, from, nil
	}
	text, off, j := col.text, col.off, col.rarest(needle)
	bits, otherBits := trigramBits(needle), trigramBits(otherNeedle)
	for first := lo; first < hi; {
		// One block at a time: rows first to last (relative), skipped whole
		// when the block is full and lacks one of the values' trigrams.
		block := (c.base + first) / blockRows
		last := min(hi, (block+1)*blockRows-c.base)
		if (block+1)*blockRows-c.base <= c.len() &&
			(!col.mayHold(block, bits) || (otherNeedle != nil && !other.mayHold(block, otherBits))) {
			first = last
			continue
		}
		row, pos, end := first, int(off[first]), int(off[last])
		first = last
		for pos+len(needle) <= end {
			k := bytes.IndexByte(text[pos+j:end], needle[j])
			if k < 0 {
				break
			}
			at := pos + k // where the needle would start
			if at+len(needle) > end {
				break
			}
			if !bytes.Equal(text[at:at+len(needle)], needle) {
				pos = at + 1
				continue
			}
			// The row holding at: the first from row on whose text ends past it.
			row += sort.Search(last-row, func(j int) bool { return int(off[row+j+1]) > at })
			rowEnd := int(off[row+1])
			if at+len(needle) > rowEnd {
				pos = at + 1 // runs into the next row: not a match in this one
				continue
			}
			pos = rowEnd
			if c.exp[row] <= nowMs ||
				(otherNeedle != nil && !bytes.Contains(other.at(row), otherNeedle)) {
				continue
			}
			match(row)
		}
	}
}

// Cache holds the copies of the namespaces searched, within a budget of
// memory. It is safe for concurrent use.
type Cache struct {
	budget    int64
	liveCount string

	mu    sync.Mutex
	used  int64
	tick  uint64
	ns    map[string]*nsEntry
	loads int // namespaces loaded whole, since the start (tests)
}

// nsEntry is one namespace's place in the cache.
type nsEntry struct {
	update sync.Mutex // held while the copy is brought up to date

	// Guarded by Cache.mu.
	cols    Copy
	loaded  bool
	bytes   int64
	lastUse uint64
	// The text bytes a row of the namespace held when its copy was over the
	// budget (0 if it never was): a namespace is loaded again only once a
	// fresh load at this rate fits.
	tooBigText int64
}

// New returns a cache of copies that may take budget bytes in all.
//
// liveCount is the SQL expression of the number of a namespace's unexpired
// emails, with the arguments namespace, now (Unix ms), namespace: the count
// that the writers keep (inbox's namespace_counts) and that a copy's
// unexpired rows must match, or else the copy is loaded again.
func New(budget int64, liveCount string) *Cache {
	return &Cache{budget: budget, liveCount: liveCount, ns: map[string]*nsEntry{}}
}

// Budget is the memory the copies may take in all.
func (cc *Cache) Budget() int64 { return cc.budget }

// Loaded reports whether the namespace's copy is in memory.
func (cc *Cache) Loaded(nsID string) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	e, ok := cc.ns[nsID]
	return ok && e.loaded
}

// Size is the memory the namespace's copy takes, and whether it has one.
func (cc *Cache) Size(nsID string) (int64, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	e, ok := cc.ns[nsID]
	if !ok || !e.loaded {
		return 0, false
	}
	return e.bytes, true
}

// Loads is how many times a namespace's copy was loaded whole (rather than
// caught up) since the cache was made.
func (cc *Cache) Loads() int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.loads
}

// entry returns the namespace's place in the cache, made if new.
func (cc *Cache) entry(nsID string) *nsEntry {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	e, ok := cc.ns[nsID]
	if !ok {
		e = &nsEntry{}
		cc.ns[nsID] = e
	}
	cc.tick++
	e.lastUse = cc.tick
	return e
}

// publish makes cols the namespace's copy and drops the least recently
// searched copies until the cache is within its budget. A copy larger than the
// whole budget is not kept (the caller has compacted one that a fresh load
// would fit), and the namespace is searched in SQLite until a fresh load of it
// would fit. Nor is a copy kept whose entry was dropped meanwhile; the search
// that made it uses it all the same, as it is exact for its snapshot.
func (cc *Cache) publish(nsID string, e *nsEntry, cols Copy) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.ns[nsID] != e {
		return
	}
	size := cols.bytes()
	if size > cc.budget {
		cc.used -= e.bytes
		e.cols, e.loaded, e.bytes = Copy{}, false, 0
		n := int64(max(cols.len(), 1))
		e.tooBigText = max((int64(cols.subj.liveText()+cols.from.liveText())+n-1)/n, 1)
		return
	}
	cc.used += size - e.bytes
	e.cols, e.loaded, e.bytes, e.tooBigText = cols, true, size, 0
	for cc.used > cc.budget {
		var victim string
		var oldest uint64
		for id, o := range cc.ns {
			if o.loaded && o != e && (victim == "" || o.lastUse < oldest) {
				victim, oldest = id, o.lastUse
			}
		}
		if victim == "" {
			break
		}
		v := cc.ns[victim]
		cc.used -= v.bytes
		delete(cc.ns, victim)
		v.cols, v.loaded, v.bytes = Copy{}, false, 0
	}
}

// Drop forgets a namespace's copy: a search found it out of step with the
// store. The next search loads the namespace again.
func (cc *Cache) Drop(nsID string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if e, ok := cc.ns[nsID]; ok {
		cc.used -= e.bytes
		delete(cc.ns, nsID)
		e.cols, e.loaded, e.bytes = Copy{}, false, 0
	}
}

// fits reports whether a fresh load of the namespace's want rows would fit the
// budget, at its text's rate if a copy of it was ever over the budget, else at
// estRowBytes a row. A namespace that does not fit loses its copy.
func (cc *Cache) fits(e *nsEntry, want int64) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	size := want * estRowBytes
	if e.tooBigText > 0 {
		size = loadBytes(want, want*e.tooBigText)
	}
	if size <= cc.budget {
		return true
	}
	cc.used -= e.bytes
	e.cols, e.loaded, e.bytes = Copy{}, false, 0
	return false
}

// current returns the namespace's copy, if one is loaded.
func (cc *Cache) current(e *nsEntry) (Copy, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return e.cols, e.loaded
}

// selectColumns reads the searched columns of emails.
const selectColumns = "SELECT seq, received_ms, expires_ms, subject, from_addr FROM emails "

func readRows(ctx context.Context, tx *store.Tx, q string, args ...any) ([]emailRow, error) {
	rows, err := tx.Query(ctx, selectColumns+q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []emailRow
	for rows.Next() {
		var r emailRow
		if err := rows.Scan(&r.seq, &r.recv, &r.exp, &r.subj, &r.from); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// View returns the namespace's copy as of the snapshot of tx, a read
// transaction of the SQLite store that takes its snapshot here (View's is its
// first query), brought up to date or loaded. ok is false when the namespace
// is too large for the budget: it is then searched in SQLite.
func (cc *Cache) View(ctx context.Context, tx *store.Tx, nsID string, nowMs int64) (cols Copy, ok bool, err error) {
	e := cc.entry(nsID)
	// Held before the snapshot is taken, so that updates apply snapshots in
	// order: a copy is never newer than the snapshot that updates it.
	e.update.Lock()
	defer e.update.Unlock()

	var through, want int64
	// The highest seq ever given (AUTOINCREMENT's), not the highest stored:
	// the newest emails may have been deleted.
	err = tx.QueryRow(ctx, `SELECT (SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence WHERE name = 'emails'), `+cc.liveCount,
		nsID, nowMs, nsID).Scan(&through, &want)
	if err != nil {
		return Copy{}, false, fmt.Errorf("size of namespace: %w", err)
	}
	if !cc.fits(e, want) {
		return Copy{}, false, nil
	}

	cols, loaded := cc.current(e)
	if loaded && cols.through > through {
		loaded = false // cannot happen while updates hold e.update; load to be sure
	}
	if loaded {
		cols, loaded, err = catchUp(ctx, tx, nsID, cols, through, want, nowMs)
		if err != nil {
			return Copy{}, false, err
		}
	}
	if !loaded {
		cc.mu.Lock()
		cc.loads++
		cc.mu.Unlock()
		start := time.Now()
		cols, err = load(ctx, tx, nsID, through, want, nowMs)
		if errors.Is(err, errTooLarge) {
			cc.Drop(nsID)
			return Copy{}, false, nil
		}
		if err != nil {
			return Copy{}, false, err
		}
		if int64(cols.len()) != want {
			slog.Warn("Namespace email count differs from its rows", "namespace", nsID, "count", want, "rows", cols.len())
		}
		if cols.len() >= logLoadRows {
			slog.Info("Loaded namespace for substring search", "namespace", nsID, "emails", cols.len(),
				"bytes", cols.bytes(), "took", time.Since(start).Round(time.Millisecond))
		}
	}
	if cols.bytes() > cc.budget && cols.freshBytes() <= cc.budget {
		cols = cols.compacted()
	}
	cc.publish(nsID, e, cols)
	return cols, true, nil
}

// load reads the namespace's unexpired emails into a new copy, rows
// scanned straight into it (want, the expected count, sizes the arrays).
func load(ctx context.Context, tx *store.Tx, nsID string, through, want, nowMs int64) (Copy, error) {
	rows, err := tx.Query(ctx, selectColumns+"WHERE namespace_id = ? AND +expires_ms > ? ORDER BY received_ms, seq", nsID, nowMs)
	if err != nil {
		return Copy{}, fmt.Errorf("load namespace for search: %w", err)
	}
	defer rows.Close()
	cols := emptyCopy(through)
	n := int(min(max(want, 0), 1<<24)) + 1
	cols.seq, cols.recv, cols.exp = make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n)
	cols.subj.off, cols.from.off = append(make([]uint32, 0, n+1), 0), append(make([]uint32, 0, n+1), 0)
	var (
		seq, recv, exp int64
		subj, from     sql.RawBytes
	)
	for rows.Next() {
		if err := rows.Scan(&seq, &recv, &exp, &subj, &from); err != nil {
			return Copy{}, fmt.Errorf("load namespace for search: %w", err)
		}
		if err := cols.addRow(seq, recv, exp, subj, from, false); err != nil {
			return Copy{}, errTooLarge
		}
	}
	if err := rows.Err(); err != nil {
		return Copy{}, fmt.Errorf("load namespace for search: %w", err)
	}
	return cols, nil
}

// errTooLarge is the answer for a namespace whose text passes what a copy can
// address (uint32 offsets).
var errTooLarge = errors.New("namespace text too large to keep in memory")

// catchUp brings a copy from its seq to through, within tx: it adds the
// namespace's emails past the copy's seq, drops the rows before the
// namespace's oldest email, and checks the unexpired rows against want.
// loaded is false when the copy must be loaded again.
func catchUp(ctx context.Context, tx *store.Tx, nsID string, cols Copy, through, want, nowMs int64) (Copy, bool, error) {
	if through-cols.through > max(maxCatchUp, int64(cols.len())) {
		return Copy{}, false, nil
	}
	if through > cols.through {
		// seq is the rowid: a range of the table, every namespace's new rows.
		// (The unary + here and in the load keeps SQLite from seeking the
		// expiry index instead, which would visit every email of the store.)
		rows, err := readRows(ctx, tx, "WHERE seq > ? AND +namespace_id = ? AND +expires_ms > ?", cols.through, nsID, nowMs)
		if err != nil {
			return Copy{}, false, fmt.Errorf("catch up namespace for search: %w", err)
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].before(rows[j].recv, rows[j].seq) })
		n := cols.len()
		if len(rows) > 0 && n > 0 && rows[0].before(cols.recv[n-1], cols.seq[n-1]) {
			if cols, err = cols.merged(rows); err != nil {
				return Copy{}, false, nil
			}
		} else if err := cols.add(rows); err != nil {
			return Copy{}, false, nil
		}
		cols.through = through
	}
	var recv, seq int64
	err := tx.QueryRow(ctx, "SELECT received_ms, seq FROM emails WHERE namespace_id = ? ORDER BY received_ms, seq LIMIT 1", nsID).Scan(&recv, &seq)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		cols = cols.dropBefore(1<<63-1, 0)
	case err != nil:
		return Copy{}, false, fmt.Errorf("oldest email of namespace: %w", err)
	default:
		cols = cols.dropBefore(recv, seq)
	}
	live := cols.unexpired(nowMs)
	if live != want {
		return Copy{}, false, nil
	}
	if n := int64(cols.len()); n > 1024 && live < n/2 {
		// Mostly expired rows the reaper has not deleted: keep the live ones.
		fresh := emptyCopy(cols.through)
		for i := 0; i < cols.len(); i++ {
			if cols.exp[i] > nowMs {
				if err := fresh.copyRow(&cols, i); err != nil {
					return Copy{}, false, nil
				}
			}
		}
		cols = fresh
	}
	return cols, true, nil
}
