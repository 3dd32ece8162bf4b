package outbound

import (
	"context"
	"errors"
	"log/slog"

	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/outbound/returns"
	"github.com/catchbox/catchbox/internal/routing"
	"github.com/catchbox/catchbox/internal/secret"
)

// Returns receives what comes back to the return paths of outbound mail: the
// SMTP listener hands it every message addressed to one (smtpd.Returns), and
// package returns reads it. Delivery status notifications become bounced, delayed or delivered events
// of the recipients they name, feedback reports complained events; a hard
// bounce or a complaint suppresses the address for the organisation. Anything
// else sent to a return path is accepted and dropped with a log line: the
// seed's events have no type for an auto-reply.
type Returns struct {
	Store *outstore.Store
	// Routes and Key make and check return paths (routing.Rule.ReturnPath).
	Routes *routing.Rule
	Key    *secret.Key
}

// ReturnPath reports the outbound email a return path was made for, and
// false for any other address, a forged tag included.
func (r *Returns) ReturnPath(addr string) (string, bool) {
	return r.Routes.ParseReturnPath(r.Key, addr)
}

// Receive records what a message sent to the return paths of the emails ids
// reports, and returns once it is committed. A message that is not a report
// is dropped (nil); so is a report about an email that does not exist.
func (r *Returns) Receive(ctx context.Context, raw []byte, mailFrom string, ids []string) error {
	rep, err := returns.Parse(raw)
	if err != nil {
		slog.Info("Mail to a return path is not a delivery status notification or feedback report; dropped",
			"mail_from", mailFrom, "outbound_ids", ids, "size", len(raw), "reason", err.Error())
		return nil
	}
	for _, id := range ids {
		n, err := r.Store.RecordReport(ctx, id, rep)
		if errors.Is(err, outstore.ErrNotFound) {
			slog.Info("Report for an unknown outbound email; dropped", "outbound_id", id, "kind", rep.Kind)
			continue
		}
		if err != nil {
			return err
		}
		slog.Info("Report received on a return path", "outbound_id", id, "kind", rep.Kind, "events", n)
	}
	return nil
}
