// Package outstore keeps Catchbox's outbound email: the records of what a
// namespace sent (emails, their recipients, attachments and events, the
// organisation's suppressed addresses), their statuses, and the queries and
// writes over them on SQLite and PostgreSQL. Package outbound holds the
// operations that decide what to write (send, reply, forward, cancel), the
// delivery job and the HTTP adapters; this package holds the rows and the
// rules that keep them consistent.
//
// An outbound email is stored once, at creation, with the RFC 5322 message as
// built (every attempt sends the same bytes and Message-ID), its recipients
// and its attachments, in the caller's transaction (Store.Create), the one
// that also enqueues its delivery job (outbound.EnqueueDelivery). From then on
// every change of a recipient's state is an event, recorded by
// Store.RecordEvent, the one function that writes recipient states: it stores
// the event and the recipients it concerns, moves each of them, and derives
// the message's status from theirs. Store.MarkSending is the only other writer
// of a status: it moves a queued message to sending when a delivery attempt
// starts.
//
// A recipient's delivery_status is the seed's: it starts pending, and the
// event of the same name moves it (opened and clicked move nothing). Statuses
// fall in three classes:
//
//	open       pending, accepted, queued, deferred, delayed
//	succeeded  sent, delivered, complained, unsubscribed   (final)
//	failed     bounced, expired, failed, rejected, suppressed, cancelled   (final)
//
// A final status is not left for an open one, except that a relay's 250
// (sent) is not the end of the road: a delivery status notification may still
// report the message delayed, delivered or bounced beyond the relay. An event
// that may not move the status is still recorded, with its timestamp.
//
//	from                                 moved by events of type
//	pending, accepted, queued,
//	  deferred, delayed                  every type but opened, clicked
//	sent                                 delayed, delivered, bounced, expired, failed,
//	                                     rejected, complained, unsubscribed
//	delivered                            complained, unsubscribed
//	complained, unsubscribed             complained, unsubscribed
//	bounced, expired, failed, rejected,
//	  suppressed, cancelled              none
//
// The message's status follows from its recipients' (contract section 5):
// queued at creation; sending once an attempt starts (MarkSending) or any
// recipient has left pending, accepted and queued; sent when every recipient
// is final and at least one succeeded; failed when every recipient is final
// and none succeeded. It never moves back towards queued: a sent message
// whose recipient a later report calls delayed stays sent, and becomes failed
// if the report's bounce leaves no recipient that succeeded.
//
// docs/flow.md ("Outbound") describes the tables and the flow.
package outstore
