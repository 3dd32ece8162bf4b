package deliverability

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/catchbox/catchbox/internal/store"
)

// EventCompleted is the type of the event written when a report is ready.
const EventCompleted = "deliverability.completed"

// Events receives the package's events in the transaction of their cause
// (webhook.Service writes them to its outbox). It is defined here, where
// events are emitted, so that deliverability needs nothing of whoever takes
// them.
type Events interface {
	// Emit writes an event of the organisation in the namespace.
	Emit(ctx context.Context, tx *store.Tx, orgID, namespace, eventType string, data any) error
}

// CompletedEvent is the data of a deliverability.completed webhook event:
// which email's report is ready and its verdict; GET
// /api/emails/{emailId}/deliverability-report has the report.
type CompletedEvent struct {
	EmailID         string `json:"email_id"`
	Namespace       string `json:"namespace"`
	Status          string `json:"status"`
	OverallStatus   string `json:"overall_status"`
	AnalysisVersion string `json:"analysis_version"`
}

// emitCompleted writes the deliverability.completed event of the email's
// report in tx.
func (s *Service) emitCompleted(ctx context.Context, tx *store.Tx, emailID string, rep *Report) error {
	if s.events == nil {
		return nil
	}
	var orgID, ns string
	err := tx.QueryRow(ctx, `SELECT n.org_id, n.name FROM emails e JOIN namespaces n ON n.id = e.namespace_id
		WHERE e.id = ?`, emailID).Scan(&orgID, &ns)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // the email is gone
	}
	if err != nil {
		return fmt.Errorf("deliverability webhook event: %w", err)
	}
	return s.events.Emit(ctx, tx, orgID, ns, EventCompleted,
		CompletedEvent{EmailID: emailID, Namespace: ns, Status: "completed", OverallStatus: rep.OverallStatus,
			AnalysisVersion: AnalysisVersion})
}
