package inbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/metrics"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Envelope is what the SMTP session knew about a message besides its bytes.
type Envelope struct {
	ClientIP string // remote IP address
	Helo     string // HELO/EHLO name
	MailFrom string // MAIL FROM reverse path ("" for a bounce)
}

// Target is one namespace a message is delivered into, with the envelope
// recipients (RCPT TO) addressed to that namespace.
type Target struct {
	Namespace  tenant.Namespace
	Recipients []string
}

// ErrClosed is returned by Deliver once the ingester is shutting down.
var ErrClosed = errors.New("ingester closed")

// NamespaceTopic is the notify topic of a namespace's arrivals.
func NamespaceTopic(namespaceID string) string { return "ns:" + namespaceID }

// row is one email ready to insert: a message as seen by one namespace.
type row struct {
	email       Email
	namespaceID string
	namespace   tenant.Namespace
	receivedMs  int64
	expiresMs   int64
	fromAddr    string
	recipients  []string // lower case, distinct
	attachments []parsedAttachment
	bytes       *messageBytes
	keepRaw     bool // the namespace captures raw email
	env         Envelope
	size        int64
	doc         string // email as stored in emails.doc, encoded by the sender
}

// messageBytes is how the bytes of one delivered message are stored, shared by the
// rows of every namespace it was delivered to (docs/inbox.md, "Storage"). A row
// that keeps the raw source refers to the raw source's content and reads its
// attachments back from it, so they are not stored twice; a row that does not
// refers to the attachments' own blobs.
//
// The body of a small message (its raw source under s2Content) is stored
// after the raw source, in the same content, and the rows that keep the raw
// source say so with bodyInRaw: compressed together, the body costs almost
// nothing, as it repeats the raw source's text. Rows that do not keep the raw
// source, and larger messages, keep the body in emails.body: reading a body
// after its raw source decompresses the raw source too, which for a message
// of 50 KB with an attachment made a page of search results a third slower.
type messageBytes struct {
	body        []byte   // text and html, as stored in emails.body: for the rows that do not refer to raw
	raw         *packed  // set when a target keeps the raw source
	bodyInRaw   bool     // raw holds the raw source, then the body's JSON
	attachments []*blob  // set when a target does not
	hashes      []string // SHA-256 of each attachment's bytes
}

// rowBody is what the row r stores in emails.body.
func (mb *messageBytes) rowBody(keepRaw bool) []byte {
	if keepRaw && mb.bodyInRaw {
		return bodyInRaw
	}
	return mb.body
}

// newMessageBytes encodes the bodies, and hashes and compresses what the targets
// need, once per message and outside the writer, so that compression runs in
// parallel on the senders' goroutines and not in the group commit.
func newMessageBytes(raw []byte, p parsed, targets []Target) (*messageBytes, error) {
	links, codes := extract(p.Subject, p.Text, p.HTML) // stored with the bodies they come from
	bodyJS, err := bodyJSON(storedBody{Text: p.Text, HTML: p.HTML, Links: links, Codes: codes})
	if err != nil {
		return nil, err
	}
	mb := &messageBytes{hashes: make([]string, len(p.Attachments))}
	for i, a := range p.Attachments {
		mb.hashes[i] = contentHash(a.Data)
	}
	for _, t := range targets {
		switch {
		case t.Namespace.CaptureRawEmail && mb.raw == nil:
			var c packed
			if len(raw) < s2Content {
				mb.bodyInRaw = true
				content := make([]byte, 0, len(raw)+len(bodyJS))
				c = pack(append(append(content, raw...), bodyJS...))
			} else {
				c = pack(raw) // raw sources are not content-addressed
			}
			c.size = int64(len(raw))
			mb.raw = &c
		case !t.Namespace.CaptureRawEmail && mb.attachments == nil:
			mb.attachments = make([]*blob, len(p.Attachments))
			for i, a := range p.Attachments {
				mb.attachments[i] = newHashedBlob(a.Data, mb.hashes[i])
			}
		}
	}
	for _, t := range targets {
		if mb.rowBody(t.Namespace.CaptureRawEmail) == nil {
			mb.body = packBody(bodyJS)
			break
		}
	}
	return mb, nil
}

type batchReq struct {
	rows []*row
	done chan error
}

// Ingester stores received messages. Deliver returns only after the message is
// committed to disk: concurrent deliveries are grouped into one transaction (group
// commit), so the cost of the fsync is shared and durability does not cost
// throughput.
type Ingester struct {
	db       *store.DB
	notifier notify.Notifier
	now      func() time.Time

	reqs    chan *batchReq
	mu      sync.RWMutex // guards closed against sends on reqs
	closed  bool
	writers sync.WaitGroup

	maxBatchRows  int
	maxBatchBytes int64

	hooks []IngestHook // run for each stored email, in its transaction (OnIngest)
}

// NewIngester starts the ingester's writers: one on SQLite (it has one writer at a
// time), several on PostgreSQL. hooks run for every stored email, in its
// transaction (IngestHook).
func NewIngester(db *store.DB, n notify.Notifier, hooks ...IngestHook) *Ingester {
	in := &Ingester{
		db: db, notifier: n, now: time.Now, hooks: hooks,
		reqs:          make(chan *batchReq, 1024),
		maxBatchRows:  256,
		maxBatchBytes: 64 << 20,
	}
	writers := 1
	if db.ConcurrentWriters() {
		writers = 4
	}
	for i := 0; i < writers; i++ {
		in.writers.Add(1)
		go in.writeLoop(i)
	}
	return in
}

// SetClock replaces the clock (tests).
func (in *Ingester) SetClock(now func() time.Time) { in.now = now }

// Close stops accepting messages and waits for queued ones to be committed.
func (in *Ingester) Close() {
	in.mu.Lock()
	if !in.closed {
		in.closed = true
		close(in.reqs)
	}
	in.mu.Unlock()
	in.writers.Wait()
}

// Deliver parses raw once and stores one email per target namespace, returning
// their ids after the commit. A returned error means nothing was stored.
func (in *Ingester) Deliver(ctx context.Context, raw []byte, env Envelope, targets []Target) ([]string, error) {
	if len(targets) == 0 {
		return nil, errors.New("deliver: no target namespace")
	}
	p := parseMessage(raw)
	mb, err := newMessageBytes(raw, p, targets)
	if err != nil {
		return nil, err
	}
	now := in.now()
	rows := make([]*row, 0, len(targets))
	for _, t := range targets {
		r := buildRow(p, raw, env, t, now)
		r.bytes = mb
		if r.doc, err = encodeDoc(r.email); err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	req := &batchReq{rows: rows, done: make(chan error, 1)}
	in.mu.RLock()
	if in.closed {
		in.mu.RUnlock()
		return nil, ErrClosed
	}
	select {
	case in.reqs <- req:
		in.mu.RUnlock()
	case <-ctx.Done():
		in.mu.RUnlock()
		return nil, ctx.Err()
	}
	// Once queued, wait for the outcome even if ctx ends: the caller must learn
	// whether the message was stored.
	if err := <-req.done; err != nil {
		return nil, err
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.email.ID
	}
	return ids, nil
}

func buildRow(p parsed, raw []byte, env Envelope, t Target, now time.Time) *row {
	ms := now.UnixMilli()
	expires := ms + int64(t.Namespace.RetentionTime)*1000
	e := Email{
		ID:                tenant.NewID(),
		From:              p.From,
		To:                p.To,
		Cc:                p.Cc,
		Subject:           p.Subject,
		HTML:              p.HTML,
		Text:              p.Text,
		ReceivedDate:      httpx.TimeMillis(ms),
		ReceivedTimestamp: ms / 1000,
		ExpiresTimestamp:  expires / 1000,
		Headers:           p.Headers,
	}
	if e.To == nil {
		e.To = []Address{}
	}
	// Envelope recipients of this namespace that the headers do not name were
	// blind copies (contract section 5).
	seen := map[string]bool{}
	var rcpts []string
	add := func(a string) {
		a = strings.ToLower(strings.TrimSpace(a))
		if a != "" && !seen[a] {
			seen[a] = true
			rcpts = append(rcpts, a)
		}
	}
	for _, a := range p.To {
		add(a.Address)
	}
	for _, a := range p.Cc {
		add(a.Address)
	}
	for _, r := range t.Recipients {
		if !seen[strings.ToLower(r)] {
			e.Bcc = append(e.Bcc, Address{Address: r})
		}
		add(r)
	}
	r := &row{
		namespaceID: t.Namespace.ID,
		namespace:   t.Namespace,
		receivedMs:  ms,
		expiresMs:   expires,
		fromAddr:    strings.ToLower(p.From.Address),
		recipients:  rcpts,
		env:         env,
		size:        int64(len(raw)),
	}
	for _, a := range p.Attachments {
		id := tenant.NewID()
		e.Attachments = append(e.Attachments, AttachmentSummary{ID: id, Filename: a.Filename, ContentType: a.ContentType,
			Size: int64(len(a.Data)), ContentID: a.ContentID})
	}
	r.attachments = p.Attachments
	r.keepRaw = t.Namespace.CaptureRawEmail
	r.email = e
	return r
}

// writeLoop stores batches; shard is the writer's own row in namespace_counts.
//
// Every batch is committed, made durable, and only then answered. On
// PostgreSQL the commit is durable by itself. On SQLite the commit returns
// before its fsync (store.DB.InTxUnsynced), and the writer overlaps that fsync
// with the next batch, in one goroutine:
//
//  1. commit batch k, and ask the kernel to start writing its WAL frames to the
//     device (store.DB.StartWriteback);
//  2. open the transaction of batch k+1 and insert the messages queued by now,
//     while the device writes;
//  3. fsync the WAL (store.DB.Sync), which now has less left to wait for, and
//     answer batch k's senders;
//  4. add the messages that arrived meanwhile to batch k+1, and commit it.
//
// With nothing queued after a commit, the writer syncs and answers at once.
// An earlier design handed each fsync to a goroutine of its own; the two
// hand-offs per commit cost more on two busy cores than the overlap saved
// (docs/benchmarks.md).
func (in *Ingester) writeLoop(shard int) {
	defer in.writers.Done()
	var unsynced []*batchReq // committed on SQLite, not yet durable
	settle := func() {
		if len(unsynced) > 0 {
			in.syncAndAnswer(unsynced)
			unsynced = nil
		}
	}
	defer settle()
	for {
		var batch []*batchReq
		if len(unsynced) > 0 {
			if batch = in.gather(nil); len(batch) == 0 {
				settle()
				continue
			}
		} else {
			first, ok := <-in.reqs
			if !ok {
				return
			}
			batch = in.gather([]*batchReq{first})
		}
		batch, err := in.insert(batch, shard, settle)
		settle() // if the transaction failed before it got there
		if err != nil && len(batch) > 1 {
			// Retry each request alone so that one bad message cannot fail
			// the others.
			var stored []*batchReq
			for _, req := range batch {
				one, err := in.insert([]*batchReq{req}, shard, nil)
				if err != nil {
					in.answer(one, err)
					continue
				}
				stored = append(stored, one...)
			}
			in.syncAndAnswer(stored)
			continue
		}
		switch {
		case err != nil:
			in.answer(batch, err)
		case in.db.CommitsNeedSync():
			in.db.StartWriteback()
			unsynced = batch
		default:
			in.answer(batch, nil)
		}
	}
}

// syncAndAnswer makes the committed batch durable and answers it.
func (in *Ingester) syncAndAnswer(batch []*batchReq) {
	if len(batch) == 0 {
		return
	}
	start := time.Now()
	err := in.db.Sync()
	metrics.IngestSync(time.Since(start))
	if err != nil {
		slog.Error("Making received mail durable failed", "err", err)
	}
	in.answer(batch, err)
}

// gather adds to batch the requests already queued, up to the batch limits.
func (in *Ingester) gather(batch []*batchReq) []*batchReq {
	rows, bytes := 0, int64(0)
	for _, req := range batch {
		rows += len(req.rows)
		bytes += rowsBytes(req.rows)
	}
	for rows < in.maxBatchRows && bytes < in.maxBatchBytes {
		select {
		case r, ok := <-in.reqs:
			if !ok {
				return batch
			}
			batch = append(batch, r)
			rows += len(r.rows)
			bytes += rowsBytes(r.rows)
		default:
			return batch
		}
	}
	return batch
}

func rowsBytes(rows []*row) int64 {
	var n int64
	for _, r := range rows {
		n += r.size
	}
	return n
}

// answer wakes this process's searches waiting on a durable batch's namespaces
// and then answers its senders: a 250 is never sent for a message a power loss
// could take back, and a held search that wakes finds the message committed.
// The other replicas' searches were woken by the commit (insert).
func (in *Ingester) answer(batch []*batchReq, err error) {
	if err == nil && len(batch) > 0 {
		in.notifier.PublishEvents(context.Background(), arrivals(batch)...)
	}
	for _, req := range batch {
		req.done <- err
	}
}

// arrivals are the wake-up events of the emails batch stores, one per email.
func arrivals(batch []*batchReq) []notify.Event {
	var events []notify.Event
	for _, req := range batch {
		for _, r := range req.rows {
			events = append(events, r.arrival())
		}
	}
	return events
}

// insert commits batch in one transaction (durable on PostgreSQL, not yet
// synced on SQLite), which announces its namespaces to the other replicas.
// Once batch is inserted it calls midway, if set, then adds the requests
// queued by then, up to the batch limits, and returns every request of the
// transaction. A failure, a panic included, is logged and returned.
func (in *Ingester) insert(batch []*batchReq, shard int, midway func()) (stored []*batchReq, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic while storing mail: %v", p)
		}
		if err != nil {
			slog.Error("Storing received mail failed", "messages", len(batch), "err", err)
		}
	}()
	ctx := context.Background()
	if in.db.Shared() {
		// A statement that waits on the network or a lock ends here. On
		// SQLite the single writer waits on nothing but its busy timeout, and
		// a context that can end would cost every statement a goroutine: the
		// driver watches the context with one to interrupt the statement
		// (docs/benchmarks.md, "Ingest after issue 20").
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
	}
	// The commit's latency for the metrics leaves out midway, the previous
	// batch's fsync, which is measured as its own.
	start, midwayTook := time.Now(), time.Duration(0)
	if midway != nil {
		m := midway
		midway = func() {
			t := time.Now()
			m()
			midwayTook = time.Since(t)
		}
	}
	defer func() {
		if err == nil {
			metrics.IngestCommit(len(stored), time.Since(start)-midwayTook)
		}
	}()
	err = in.db.InTxUnsynced(ctx, func(tx *store.Tx) error {
		var nsIDs []string
		added := map[string]int64{}
		rawIDs := map[*messageBytes]int64{} // one raw source per delivery
		insert := func(reqs []*batchReq) error {
			blobs := map[string]*blob{}
			for _, req := range reqs {
				for _, r := range req.rows {
					for _, b := range r.blobs() {
						blobs[b.hash] = b
					}
					if added[r.namespaceID] == 0 {
						nsIDs = append(nsIDs, r.namespaceID)
					}
					added[r.namespaceID]++
				}
			}
			if err := putBlobs(ctx, tx, blobs); err != nil {
				return err
			}
			for _, req := range reqs {
				for _, r := range req.rows {
					if _, err := insertRow(ctx, tx, r, rawIDs); err != nil {
						return err
					}
					if err := in.runHooks(ctx, tx, r); err != nil {
						return err
					}
				}
			}
			return nil
		}
		if err := insert(batch); err != nil {
			return err
		}
		if midway != nil {
			midway()
			all := in.gather(batch)
			more := all[len(batch):]
			batch = all
			if len(more) > 0 {
				if err := insert(more); err != nil {
					return err
				}
			}
		}
		if err := addCounts(ctx, tx, shard, added); err != nil {
			return err
		}
		if err := enforceQuotas(ctx, tx, nsIDs, in.now().UnixMilli()); err != nil {
			return err
		}
		return in.notifier.AnnounceEvents(ctx, tx, arrivals(batch)...)
	})
	return batch, err
}

// blobs are the blobs the row refers to.
func (r *row) blobs() []*blob {
	if r.keepRaw {
		return nil // its attachments are read from the raw source
	}
	return r.bytes.attachments
}

// insertRow inserts one email and what belongs to it, and returns its seq.
// rawIDs holds the raw sources inserted by this transaction, so the rows of one
// delivery share theirs.
func insertRow(ctx context.Context, tx *store.Tx, r *row, rawIDs map[*messageBytes]int64) (int64, error) {
	var rawID any // NULL: the namespace does not keep raw email
	if r.keepRaw {
		id, ok := rawIDs[r.bytes]
		if !ok {
			raw := r.bytes.raw
			var err error
			if id, err = tx.Insert(ctx, "INSERT INTO raw_sources (codec, size, data) VALUES (?, ?, ?)", "id",
				raw.codec, raw.size, raw.data); err != nil {
				return 0, fmt.Errorf("insert raw source: %w", err)
			}
			rawIDs[r.bytes] = id
		}
		rawID = id
	}
	seq, err := tx.Insert(ctx, `INSERT INTO emails (id, namespace_id, received_ms, expires_ms, from_addr, subject, size, client_ip, helo, mail_from, doc, body, raw_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, "seq",
		r.email.ID, r.namespaceID, r.receivedMs, r.expiresMs, r.fromAddr, r.email.Subject, r.size,
		r.env.ClientIP, r.env.Helo, r.env.MailFrom, r.doc, r.bytes.rowBody(r.keepRaw), rawID)
	if err != nil {
		return 0, fmt.Errorf("insert email: %w", err)
	}
	if len(r.recipients) > 0 {
		var b strings.Builder
		args := make([]any, 0, 3*len(r.recipients))
		b.WriteString("INSERT INTO email_recipients (namespace_id, addr, email_seq) VALUES ")
		for i, a := range r.recipients {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?)")
			args = append(args, r.namespaceID, a, seq)
		}
		if _, err := tx.Exec(ctx, b.String(), args...); err != nil {
			return 0, fmt.Errorf("insert recipients: %w", err)
		}
	}
	for i, a := range r.attachments {
		sum := r.email.Attachments[i]
		var blobHash any // nil: the bytes are read from the raw source
		if !r.keepRaw {
			blobHash = r.bytes.attachments[i].hash
		}
		if _, err := tx.Exec(ctx, `INSERT INTO attachments (id, email_id, position, filename, content_type, content_id, inline, size, data, blob_hash, sha256, in_raw)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, sum.ID, r.email.ID, i, sum.Filename, sum.ContentType, a.ContentID, a.Inline, sum.Size,
			[]byte{}, blobHash, r.bytes.hashes[i], r.keepRaw); err != nil {
			return 0, fmt.Errorf("insert attachment: %w", err)
		}
	}
	return seq, nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
