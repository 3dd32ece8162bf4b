package inbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/catchbox/catchbox/internal/store"
)

// txShard is the namespace_counts shard of emails stored by DeliverInTx, apart
// from the ingester's writers' own shards (0 and up) and deletions' (-1).
const txShard = -2

// DeliverInTx stores raw in the caller's transaction tx, one email per target
// with the id ids[i] given for targets[i], as Deliver stores a message
// received over SMTP: the same rows, counts, quotas, ingest hooks, and the
// wake-up of waiting searches on every replica once tx commits. It is the
// ingest path of outbound mail delivered to this server's namespaces, which
// must commit the email together with the recipient's delivered state: the
// email exists exactly when its delivery is recorded, and a delivery run
// again after a crash finds it recorded and stores nothing twice.
//
// An id already stored fails the insert (store.IsUniqueViolation), and with
// it tx.
func (in *Ingester) DeliverInTx(ctx context.Context, tx *store.Tx, raw []byte, env Envelope, targets []Target, ids []string) error {
	if len(targets) == 0 || len(ids) != len(targets) {
		return errors.New("deliver in transaction: one id per target namespace is needed")
	}
	p := parseMessage(raw)
	mb, err := newMessageBytes(raw, p, targets)
	if err != nil {
		return err
	}
	now := in.now()
	blobs := map[string]*blob{}
	rows := make([]*row, 0, len(targets))
	added := map[string]int64{}
	var nsIDs []string
	for i, t := range targets {
		r := buildRow(p, raw, env, t, now)
		r.email.ID = ids[i]
		r.bytes = mb
		if r.doc, err = encodeDoc(r.email); err != nil {
			return err
		}
		for _, b := range r.blobs() {
			blobs[b.hash] = b
		}
		if added[r.namespaceID] == 0 {
			nsIDs = append(nsIDs, r.namespaceID)
		}
		added[r.namespaceID]++
		rows = append(rows, r)
	}
	if err := putBlobs(ctx, tx, blobs); err != nil {
		return err
	}
	rawIDs := map[*messageBytes]int64{}
	for _, r := range rows {
		if _, err := insertRow(ctx, tx, r, rawIDs); err != nil {
			return fmt.Errorf("deliver %s: %w", r.email.ID, err)
		}
		if err := in.runHooks(ctx, tx, r); err != nil {
			return err
		}
	}
	if err := addCounts(ctx, tx, txShard, added); err != nil {
		return err
	}
	if err := enforceQuotas(ctx, tx, nsIDs, now.UnixMilli()); err != nil {
		return err
	}
	events := arrivals([]*batchReq{{rows: rows}})
	if err := in.notifier.AnnounceEvents(ctx, tx, events...); err != nil {
		return err
	}
	tx.AfterCommit(func() { in.notifier.PublishEvents(context.Background(), events...) })
	return nil
}
