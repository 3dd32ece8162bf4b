// Package outbound is Catchbox's outbound email: messages sent from a namespace
// as new mail, as replies to an inbound email or as forwards of one, delivered
// in the background through the job queue (internal/jobs) to the recipients of
// the same namespace (into their inbox) and to verified external destinations
// (through the relay), with what happened to each recipient recorded as events.
//
// The package holds the operations on outbound mail (Service), the delivery
// job (Deliverer), what comes back to the return paths (Returns) and their
// HTTP adapters. The records, their statuses and the writes that move them
// are package outstore's; composing the message, the relay, reading returned
// reports and the verified destinations are the subpackages compose, relay,
// returns and destinations.
//
// docs/flow.md ("Outbound") describes the tables and the flow.
package outbound
