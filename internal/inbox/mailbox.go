package inbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/store"
)

// A namespace seen as an IMAP mailbox (internal/imapd): the UIDs and flags of
// its emails, kept in mailboxes and mailbox_messages (migration 0042). These
// are the queries over inbox's tables that IMAP needs; the protocol, the
// sessions and the copies in memory are imapd's. POP3 needs none of this: its
// message numbers last one session and its unique ids are the email ids.

// Flags is the set of an email's IMAP system flags (RFC 9051 section 2.3.2),
// stored per namespace. Keywords are not kept.
type Flags uint8

// The flags that are kept.
const (
	FlagSeen Flags = 1 << iota
	FlagAnswered
	FlagFlagged
	FlagDeleted
	FlagDraft
)

// Mailbox is a namespace's mailbox row.
type Mailbox struct {
	UIDValidity uint32
	UIDNext     uint32
	Modseq      int64
}

// MailboxMessage is an email with its UID: the columns IMAP shows without
// reading the message.
type MailboxMessage struct {
	UID        uint32
	EmailID    string
	Flags      Flags
	Modseq     int64
	ReceivedMs int64
	ExpiresMs  int64
	Size       int64 // of the raw source as received
	RawKept    bool  // false: the namespace did not capture the raw source
}

// OpenMailbox returns the namespace's mailbox row, making it on the first
// call: its UIDVALIDITY is the Unix second it was made (never 0, which RFC
// 9051 forbids), and stays.
func (s *Searcher) OpenMailbox(ctx context.Context, namespaceID string) (Mailbox, error) {
	m, err := s.mailboxRow(ctx, namespaceID)
	if !errors.Is(err, sql.ErrNoRows) {
		return m, err
	}
	validity := max(uint32(s.now().Unix()), 1)
	if _, err := s.db.Exec(ctx, `INSERT INTO mailboxes (namespace_id, uid_validity, uid_next, modseq) VALUES (?, ?, 1, 1)
		ON CONFLICT (namespace_id) DO NOTHING`, namespaceID, validity); err != nil {
		return Mailbox{}, fmt.Errorf("make mailbox: %w", err)
	}
	return s.mailboxRow(ctx, namespaceID)
}

func (s *Searcher) mailboxRow(ctx context.Context, namespaceID string) (Mailbox, error) {
	var m Mailbox
	var validity, next int64
	err := s.db.QueryRow(ctx, "SELECT uid_validity, uid_next, modseq FROM mailboxes WHERE namespace_id = ?", namespaceID).
		Scan(&validity, &next, &m.Modseq)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Mailbox{}, err
		}
		return Mailbox{}, fmt.Errorf("read mailbox: %w", err)
	}
	m.UIDValidity, m.UIDNext = uint32(validity), uint32(next)
	return m, nil
}

// MailboxCheck is what a copy of a mailbox compares against to know whether
// it must look closer: the mailbox row, the rows with a UID, and the unexpired
// emails of the namespace with or without one.
type MailboxCheck struct {
	Mailbox
	Rows int // mailbox_messages rows, expired emails not reaped yet included
	Live int // unexpired emails of the namespace
}

// CheckMailbox reads the namespace's MailboxCheck at now, in one statement.
// Live is read from namespace_counts, as an unfiltered search's total_count;
// Rows walks the namespace's entries of mailbox_messages' primary key.
func (s *Searcher) CheckMailbox(ctx context.Context, namespaceID string, now time.Time) (MailboxCheck, error) {
	var c MailboxCheck
	var validity, next int64
	err := s.db.QueryRow(ctx, `SELECT m.uid_validity, m.uid_next, m.modseq,
		(SELECT COUNT(*) FROM mailbox_messages WHERE namespace_id = m.namespace_id), `+liveCount(s.db)+`
		FROM mailboxes m WHERE m.namespace_id = ?`, namespaceID, now.UnixMilli(), namespaceID, namespaceID).
		Scan(&validity, &next, &c.Modseq, &c.Rows, &c.Live)
	if err != nil {
		return MailboxCheck{}, fmt.Errorf("check mailbox: %w", err)
	}
	c.UIDValidity, c.UIDNext = uint32(validity), uint32(next)
	return c, nil
}

// AssignUIDs gives the next UIDs to the namespace's unexpired emails that have
// none, oldest first, and returns how many it gave. It holds the mailbox row
// (PostgreSQL: FOR UPDATE; SQLite has one writer) while it looks and gives, so
// replicas assigning at once give each email one UID, in one increasing order.
func (s *Searcher) AssignUIDs(ctx context.Context, namespaceID string) (int, error) {
	var n int
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var next int64
		if err := tx.QueryRow(ctx, "SELECT uid_next FROM mailboxes WHERE namespace_id = ?"+tx.ForUpdate(), namespaceID).Scan(&next); err != nil {
			return fmt.Errorf("lock mailbox: %w", err)
		}
		seqs, err := selectColumn[int64](ctx, tx, `SELECT e.seq FROM emails e WHERE e.namespace_id = ? AND e.expires_ms > ?
			AND NOT EXISTS (SELECT 1 FROM mailbox_messages m WHERE m.email_seq = e.seq)
			ORDER BY e.received_ms, e.seq`, namespaceID, s.now().UnixMilli())
		if err != nil {
			return fmt.Errorf("find emails without a UID: %w", err)
		}
		if len(seqs) == 0 {
			return nil
		}
		if next+int64(len(seqs)) > 1<<32-1 {
			return fmt.Errorf("mailbox of namespace %s: UIDs exhausted", namespaceID)
		}
		var modseq int64
		if err := tx.QueryRow(ctx, "UPDATE mailboxes SET uid_next = ?, modseq = modseq + 1 WHERE namespace_id = ? RETURNING modseq",
			next+int64(len(seqs)), namespaceID).Scan(&modseq); err != nil {
			return fmt.Errorf("advance uid_next: %w", err)
		}
		for start := 0; start < len(seqs); start += inChunk {
			part := seqs[start:min(start+inChunk, len(seqs))]
			var b strings.Builder
			args := make([]any, 0, 4*len(part))
			b.WriteString("INSERT INTO mailbox_messages (namespace_id, uid, email_seq, flags, modseq) VALUES ")
			for i, seq := range part {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString("(?, ?, ?, 0, ?)")
				args = append(args, namespaceID, next, seq, modseq)
				next++
			}
			if _, err := tx.Exec(ctx, b.String(), args...); err != nil {
				return fmt.Errorf("give UIDs: %w", err)
			}
		}
		n = len(seqs)
		return nil
	})
	return n, err
}

// MailboxMessages returns the namespace's emails with a UID of at least
// fromUID, by UID, expired ones not reaped yet included.
func (s *Searcher) MailboxMessages(ctx context.Context, namespaceID string, fromUID uint32) ([]MailboxMessage, error) {
	rows, err := s.db.Query(ctx, `SELECT m.uid, e.id, m.flags, m.modseq, e.received_ms, e.expires_ms, e.size, e.raw_id IS NOT NULL
		FROM mailbox_messages m JOIN emails e ON e.seq = m.email_seq
		WHERE m.namespace_id = ? AND m.uid >= ? ORDER BY m.uid`, namespaceID, fromUID)
	if err != nil {
		return nil, fmt.Errorf("list mailbox: %w", err)
	}
	defer rows.Close()
	var out []MailboxMessage
	for rows.Next() {
		var m MailboxMessage
		var uid int64
		var flags int
		if err := rows.Scan(&uid, &m.EmailID, &flags, &m.Modseq, &m.ReceivedMs, &m.ExpiresMs, &m.Size, &m.RawKept); err != nil {
			return nil, fmt.Errorf("list mailbox: %w", err)
		}
		m.UID, m.Flags = uint32(uid), Flags(flags)
		out = append(out, m)
	}
	return out, rows.Err()
}

// MailboxUIDs returns every UID of the namespace, in order.
func (s *Searcher) MailboxUIDs(ctx context.Context, namespaceID string) ([]uint32, error) {
	rows, err := s.db.Query(ctx, "SELECT uid FROM mailbox_messages WHERE namespace_id = ? ORDER BY uid", namespaceID)
	if err != nil {
		return nil, fmt.Errorf("list UIDs: %w", err)
	}
	defer rows.Close()
	var out []uint32
	for rows.Next() {
		var uid int64
		if err := rows.Scan(&uid); err != nil {
			return nil, err
		}
		out = append(out, uint32(uid))
	}
	return out, rows.Err()
}

// FlagChange is the flags of one UID as of Modseq.
type FlagChange struct {
	UID    uint32
	Flags  Flags
	Modseq int64
}

// ChangedFlags returns the flags changed after modseq.
func (s *Searcher) ChangedFlags(ctx context.Context, namespaceID string, modseq int64) ([]FlagChange, error) {
	rows, err := s.db.Query(ctx, "SELECT uid, flags, modseq FROM mailbox_messages WHERE namespace_id = ? AND modseq > ?", namespaceID, modseq)
	if err != nil {
		return nil, fmt.Errorf("read changed flags: %w", err)
	}
	defer rows.Close()
	var out []FlagChange
	for rows.Next() {
		var c FlagChange
		var uid int64
		var flags int
		if err := rows.Scan(&uid, &flags, &c.Modseq); err != nil {
			return nil, err
		}
		c.UID, c.Flags = uint32(uid), Flags(flags)
		out = append(out, c)
	}
	return out, rows.Err()
}

// FlagOp is how StoreFlags changes flags (RFC 9051 section 6.4.6): FLAGS,
// +FLAGS or -FLAGS.
type FlagOp int

// The ways of StoreFlags.
const (
	FlagsSet FlagOp = iota
	FlagsAdd
	FlagsRemove
)

// StoreFlags changes the flags of the namespace's UIDs in one transaction, as
// bit operations in SQL: two clients adding different flags to one message at
// once both keep theirs.
func (s *Searcher) StoreFlags(ctx context.Context, namespaceID string, uids []uint32, op FlagOp, flags Flags) error {
	if len(uids) == 0 {
		return nil
	}
	set := "flags = ?"
	switch op {
	case FlagsAdd:
		set = "flags = flags | ?"
	case FlagsRemove:
		set = "flags = flags & ~CAST(? AS INTEGER)"
	}
	return s.db.InTx(ctx, func(tx *store.Tx) error {
		var modseq int64
		if err := tx.QueryRow(ctx, "UPDATE mailboxes SET modseq = modseq + 1 WHERE namespace_id = ? RETURNING modseq", namespaceID).Scan(&modseq); err != nil {
			return fmt.Errorf("store flags: %w", err)
		}
		return eachChunk(uids, func(part []any) error {
			args := append([]any{int(flags), modseq, namespaceID}, part...)
			_, err := tx.Exec(ctx, "UPDATE mailbox_messages SET "+set+", modseq = ? WHERE namespace_id = ? AND uid IN "+store.Placeholders(len(part)), args...)
			if err != nil {
				return fmt.Errorf("store flags: %w", err)
			}
			return nil
		})
	})
}

// Listed is an unexpired email as POP3 lists it.
type Listed struct {
	ID      string
	Size    int64 // of the raw source as received
	RawKept bool
}

// List returns the namespace's unexpired emails, oldest first: a POP3
// maildrop as the session starts (RFC 1939 section 4).
func (s *Searcher) List(ctx context.Context, namespaceID string) ([]Listed, error) {
	rows, err := s.db.Query(ctx, `SELECT e.id, e.size, e.raw_id IS NOT NULL FROM emails e
		WHERE e.namespace_id = ? AND e.expires_ms > ? ORDER BY e.received_ms, e.seq`, namespaceID, s.now().UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("list emails: %w", err)
	}
	defer rows.Close()
	var out []Listed
	for rows.Next() {
		var l Listed
		if err := rows.Scan(&l.ID, &l.Size, &l.RawKept); err != nil {
			return nil, fmt.Errorf("list emails: %w", err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}
