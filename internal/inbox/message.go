package inbox

import "github.com/catchbox/catchbox/internal/message"

// Ingest and the attachment download read messages with internal/message; these
// names are how the rest of the package refers to it.
type (
	parsed           = message.Parsed
	parsedAttachment = message.Attachment
)

// parseMessage reads raw once, for ingest, or again, to find an attachment in
// a stored raw source (message.Parse is deterministic).
func parseMessage(raw []byte) parsed { return message.Parse(raw) }

// extract reads a message's links and codes, once per message at ingest. It is
// a variable so that BenchmarkExtractShare can measure ingest without it.
var extract = message.Extract
