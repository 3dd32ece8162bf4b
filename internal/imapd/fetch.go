package imapd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-message/textproto"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/store"
)

// Fetch implements imapserver.Session (FETCH and UID FETCH). The message is
// the raw source byte for byte, or for a namespace that does not capture raw
// email a rebuild (inbox.Searcher.Rebuild); it is read only when an item
// needs it. A BODY[...] fetch without PEEK sets \Seen (RFC 9051 section
// 6.4.5), and the FETCH response then carries the new FLAGS.
func (s *session) Fetch(w *imapserver.FetchWriter, numSet imap.NumSet, options *imap.FetchOptions) error {
	return s.do("FETCH", func(ctx context.Context) error {
		targets := s.view.resolve(numSet)
		seen := map[uint32]bool{}
		if !s.view.readOnly && setsSeen(options) {
			var uids []uint32
			for _, t := range targets {
				if t.msg.Flags&inbox.FlagSeen == 0 {
					uids = append(uids, t.msg.UID)
					seen[t.msg.UID] = true
				}
			}
			if len(uids) > 0 {
				if err := s.srv.searcher.StoreFlags(ctx, s.ns.ID, uids, inbox.FlagsAdd, inbox.FlagSeen); err != nil {
					return err
				}
				s.mb.requestSync()
			}
		}
		for _, t := range targets {
			m := t.msg
			if seen[m.UID] {
				m.Flags |= inbox.FlagSeen
				if i := t.seq - 1; int(i) < len(s.view.uids) && s.view.uids[i] == m.UID {
					s.view.flags[i] = m.Flags
				}
			}
			err := s.fetchOne(ctx, w.CreateMessage(t.seq), m, options, seen[m.UID])
			if errors.Is(err, store.ErrNotFound) {
				continue // deleted since the view learnt of it
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// setsSeen reports whether a FETCH sets \Seen: a BODY[...] without PEEK
// (RFC822 and RFC822.TEXT are such fetches in go-imap's options).
func setsSeen(options *imap.FetchOptions) bool {
	for _, bs := range options.BodySection {
		if !bs.Peek {
			return true
		}
	}
	for _, bs := range options.BinarySection {
		if !bs.Peek {
			return true
		}
	}
	return false
}

// needsSource reports whether a FETCH item needs the message itself: the
// size of a rebuilt message is known once it was built.
func (s *session) needsSource(options *imap.FetchOptions, m inbox.MailboxMessage) bool {
	if options.Envelope || options.BodyStructure != nil || len(options.BodySection) > 0 ||
		len(options.BinarySection) > 0 || len(options.BinarySectionSize) > 0 {
		return true
	}
	if options.RFC822Size && !m.RawKept {
		_, known := s.mb.rebuiltSize(m.EmailID)
		return !known
	}
	return false
}

func (s *session) fetchOne(ctx context.Context, rw *imapserver.FetchResponseWriter, m inbox.MailboxMessage, options *imap.FetchOptions, flagsChanged bool) error {
	var src []byte
	if s.needsSource(options, m) {
		var err error
		if src, err = s.source(ctx, m); err != nil {
			return err
		}
	}
	rw.WriteUID(imap.UID(m.UID))
	if options.Flags || flagsChanged {
		rw.WriteFlags(flagList(m.Flags))
	}
	if options.InternalDate {
		rw.WriteInternalDate(time.UnixMilli(m.ReceivedMs).UTC())
	}
	if options.RFC822Size {
		size := m.Size
		if !m.RawKept && src != nil {
			size = int64(len(src))
		} else if !m.RawKept {
			size, _ = s.mb.rebuiltSize(m.EmailID) // known, or needsSource would have read it
		}
		rw.WriteRFC822Size(size)
	}
	if options.Envelope {
		if h, err := textproto.ReadHeader(bufio.NewReader(bytes.NewReader(src))); err == nil {
			rw.WriteEnvelope(imapserver.ExtractEnvelope(h))
		} else {
			rw.WriteEnvelope(&imap.Envelope{})
		}
	}
	if options.BodyStructure != nil {
		rw.WriteBodyStructure(imapserver.ExtractBodyStructure(bytes.NewReader(src)))
	}
	for _, bs := range options.BodySection {
		buf := imapserver.ExtractBodySection(bytes.NewReader(src), bs)
		if err := writeLiteral(rw.WriteBodySection(bs, int64(len(buf))), buf); err != nil {
			return err
		}
	}
	for _, bs := range options.BinarySection {
		buf := imapserver.ExtractBinarySection(bytes.NewReader(src), bs)
		if err := writeLiteral(rw.WriteBinarySection(bs, int64(len(buf))), buf); err != nil {
			return err
		}
	}
	for _, bss := range options.BinarySectionSize {
		rw.WriteBinarySectionSize(bss, imapserver.ExtractBinarySectionSize(bytes.NewReader(src), bss))
	}
	return rw.Close()
}

func writeLiteral(wc interface {
	Write([]byte) (int, error)
	Close() error
}, b []byte) error {
	_, werr := wc.Write(b)
	cerr := wc.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

// source returns the message's bytes (inbox.Searcher.Source).
func (s *session) source(ctx context.Context, m inbox.MailboxMessage) ([]byte, error) {
	src, rebuilt, err := s.srv.searcher.Source(ctx, m.EmailID)
	if err != nil {
		return nil, err
	}
	if rebuilt {
		s.mb.setRebuiltSize(m.EmailID, int64(len(src)))
	}
	return src, nil
}
