package outbound

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/catchbox/catchbox/internal/jobs"
)

// ExpireJob is Store.ExpireContent as periodic work (store.DB.Every): each run
// deletes the attachment bytes and built messages whose ContentTTL has passed,
// and logs how many went when any did.
func (s *Store) ExpireJob(ctx context.Context) error {
	attachments, messages, err := s.ExpireContent(ctx)
	if attachments+messages > 0 {
		slog.Info("Deleted expired outbound content", "attachments", attachments, "messages", messages)
	}
	return err
}

// HoldDelivery is the handler of delivery jobs while this version has no
// delivery: a job is tried again an hour later, so it stays in the queue
// and its email stays queued.
func HoldDelivery(ctx context.Context, job *jobs.Job) error {
	return jobs.RetryAt(time.Now().Add(time.Hour), errors.New("outbound delivery is not available in this version"))
}
