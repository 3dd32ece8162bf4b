// Command testsummary reads `go test -json` on stdin, prints what a plain
// `go test` would (each package's result; the output of failing tests in
// full), and ends with the tests that were skipped, grouped by the reason
// they gave, so that `make test` says which suites did not run and why
// (PostgreSQL URL not set, spamd not configured, node missing, ...). It exits 1
// when a test or a package failed.
//
//	go test -json ./... | go run ./internal/testsummary
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func main() {
	failed, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// summarize copies the results from r to w and reports whether anything failed.
func summarize(r io.Reader, w io.Writer) (failed bool, err error) {
	type key struct{ pkg, test string }
	output := map[key][]string{}
	skips := map[string][]string{} // reason -> package.Test
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			fmt.Fprintln(w, sc.Text()) // not JSON: a build error printed as it is
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output":
			if e.Test == "" {
				if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "--- ") &&
					strings.TrimSpace(e.Output) != "PASS" && strings.TrimSpace(e.Output) != "FAIL" {
					fmt.Fprint(w, e.Output) // "ok pkg 1.2s", build errors, TestMain output
				}
				continue
			}
			output[k] = append(output[k], e.Output)
		case "fail":
			failed = true
			if e.Test != "" {
				out := strings.Join(output[k], "")
				if !strings.Contains(out, "--- FAIL: ") {
					out = fmt.Sprintf("--- FAIL: %s\n", e.Test) + out
				}
				fmt.Fprintf(w, "# %s\n%s", e.Package, out)
			}
			delete(output, k)
		case "skip":
			if e.Test != "" {
				reason := skipReason(output[k])
				skips[reason] = append(skips[reason], shortPkg(e.Package)+"."+e.Test)
			}
			delete(output, k)
		case "pass":
			delete(output, k)
		}
	}
	if err := sc.Err(); err != nil {
		return failed, err
	}
	printSkips(w, skips)
	return failed, nil
}

// skipReason is the message a skipped test gave (t.Skip's argument), without
// the file:line prefix go test puts before it. The test's other output (log
// lines of the server it started) has no such prefix and is passed over; the
// last prefixed line is the skip's.
func skipReason(lines []string) string {
	reason := ""
	for _, l := range lines {
		if m := testLogLine.FindStringSubmatch(strings.TrimRight(l, "\n")); m != nil {
			reason = strings.TrimSpace(m[1])
		}
	}
	if reason == "" {
		return "(no reason given)"
	}
	return reason
}

// testLogLine is a line of t.Log, t.Skip or t.Error: indented, file:line: text.
var testLogLine = regexp.MustCompile(`^\s+[\w.-]+\.go:\d+: (.*)$`)

func shortPkg(p string) string { return strings.TrimPrefix(p, "github.com/catchbox/catchbox/") }

// printSkips lists the reasons, the most common first, each with how many
// tests it skipped and a few of them.
func printSkips(w io.Writer, skips map[string][]string) {
	if len(skips) == 0 {
		fmt.Fprintln(w, "\nSkipped: none")
		return
	}
	reasons := make([]string, 0, len(skips))
	total := 0
	for r, ts := range skips {
		reasons = append(reasons, r)
		total += len(ts)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if len(skips[reasons[i]]) != len(skips[reasons[j]]) {
			return len(skips[reasons[i]]) > len(skips[reasons[j]])
		}
		return reasons[i] < reasons[j]
	})
	fmt.Fprintf(w, "\nSkipped: %d tests, for these reasons:\n", total)
	for _, r := range reasons {
		ts := skips[r]
		sort.Strings(ts)
		shown := ts
		if len(shown) > 3 {
			shown = shown[:3]
		}
		more := ""
		if len(ts) > len(shown) {
			more = fmt.Sprintf(", and %d more", len(ts)-len(shown))
		}
		fmt.Fprintf(w, "  %4d  %s\n        (%s%s)\n", len(ts), r, strings.Join(shown, ", "), more)
	}
}
