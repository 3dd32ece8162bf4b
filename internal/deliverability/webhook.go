package deliverability

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/webhook"
)

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
	if s.Webhooks == nil {
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
	return s.Webhooks.Emit(ctx, tx, webhook.Event{OrgID: orgID, Namespace: ns, Type: webhook.DeliverabilityCompleted,
		Data: CompletedEvent{EmailID: emailID, Namespace: ns, Status: "completed", OverallStatus: rep.OverallStatus,
			AnalysisVersion: AnalysisVersion}})
}
