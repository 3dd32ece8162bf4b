package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Latency summarises a set of durations by the percentiles the benchmark
// targets are written in. Values are milliseconds so that the JSON output
// can be pasted into a table without conversion.
type Latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
	Mean  float64 `json:"mean_ms"`
}

// summarize computes nearest-rank percentiles: the reported p99 is a latency
// that was actually observed, never an interpolation between two samples.
func summarize(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Latency{
		Count: len(s),
		P50:   ms(percentile(s, 50)),
		P90:   ms(percentile(s, 90)),
		P99:   ms(percentile(s, 99)),
		Max:   ms(s[len(s)-1]),
		Mean:  ms(sum / time.Duration(len(s))),
	}
}

// percentile returns the nearest-rank p-th percentile of sorted samples.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

func ms(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

// String renders the summary on one line, in the order the docs use.
func (l Latency) String() string {
	return fmt.Sprintf("p50=%.2fms p90=%.2fms p99=%.2fms max=%.2fms", l.P50, l.P90, l.P99, l.Max)
}

// report writes either one JSON object or one plain line of key=value pairs:
// the JSON is for scripts that build docs/benchmarks.md, the line for people.
func report(w io.Writer, asJSON bool, v any, line string) error {
	if asJSON {
		enc := json.NewEncoder(w)
		return enc.Encode(v)
	}
	_, err := fmt.Fprintln(w, strings.TrimSpace(line))
	return err
}
