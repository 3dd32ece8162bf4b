package outstore

import (
	"context"
	"log/slog"
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
