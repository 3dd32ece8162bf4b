package client

// Outbound email and deliverability reports.
//
// The API Catchbox follows also has sending (POST /api/emails/send, and
// /api/emails/{emailId}/reply and /forward), the outbound detail and list
// (GET /api/emails/outbound/{id}, GET /api/emails/outbound), outbound
// attachments, and deliverability reports (POST and GET
// /api/emails/{emailId}/deliverability-report). The server does not serve them
// yet (docs/api.md, "Not here yet"), so this client has no methods for them:
// they are added here, with their types and tests against a real server, when
// the server serves them. Their names will be Send, Reply, Forward,
// OutboundEmail, OutboundEmails, OutboundAttachment,
// GenerateDeliverabilityReport and DeliverabilityReport.
