package inbox

// ParseForBenchmark exposes the MIME parser to the external benchmarks.
func ParseForBenchmark(raw []byte) { parseMessage(raw) }
