// Package client is the Go client of Catchbox's HTTP API: disposable test
// inboxes, SMS numbers and virtual authenticators, for the tests of services
// that send sign-up mail, password resets and one-time codes.
//
// A Client has a typed method for every endpoint the server serves (namespaces
// and their settings, SMTP settings, SMTP fault rules, inbox search, latest, by id, deletion,
// attachments,
// raw source, share links, SMS numbers and messages, virtual SMS, TOTP devices
// and one-time passwords, sending, replying and forwarding with the outbound
// detail of each recipient, deliverability reports and link checks) and the calls most
// tests need:
//
//   - WaitForEmail and WaitForSMS hold until a matching message arrives,
//     following the server's 307 redirects for as long as the context allows;
//   - every Email and SMSMessage carries the Links and Codes the server read
//     from it, so a test follows the reset link or types the code without a
//     regular expression of its own;
//   - WaitForOutbound, WaitForDeliverabilityReport and WaitForLinkCheck read
//     until the sent email, the report or the link check is final.
//
// A request the server refuses with 429 Too Many Requests is sent again after
// the Retry-After it names, three times by default (WithRetries).
//
// Errors from the API are *Error values carrying its error body (statusCode,
// code, message and the field errors of a validation failure); branch on Code.
//
// The module has no dependencies beyond the standard library. Package
// catchboxtest builds on it with testing.TB helpers: a fresh namespace for one
// test, and waits that fail the test when nothing arrives.
//
// NewFromEnv reads CATCHBOX_URL (default http://127.0.0.1:8025) and
// CATCHBOX_API_KEY, the variables the catchbox command line reads too.
package client
