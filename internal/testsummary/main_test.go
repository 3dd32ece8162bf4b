package main

import (
	"strings"
	"testing"
)

// TestSummarize feeds the tool what go test -json writes for a package with
// a passing, a failing and two skipped tests, and checks the summary.
func TestSummarize(t *testing.T) {
	in := `{"Action":"start","Package":"github.com/catchbox/catchbox/internal/store"}
{"Action":"run","Package":"github.com/catchbox/catchbox/internal/store","Test":"TestA"}
{"Action":"output","Package":"github.com/catchbox/catchbox/internal/store","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"github.com/catchbox/catchbox/internal/store","Test":"TestA"}
{"Action":"output","Package":"github.com/catchbox/catchbox/internal/store","Test":"TestB/postgres","Output":"=== RUN   TestB/postgres\n"}
{"Action":"output","Package":"github.com/catchbox/catchbox/internal/store","Test":"TestB/postgres","Output":"    storetest.go:40: CATCHBOX_TEST_POSTGRES_URL not set: PostgreSQL tests skipped\n"}
{"Action":"output","Package":"github.com/catchbox/catchbox/internal/store","Test":"TestB/postgres","Output":"--- SKIP: TestB/postgres (0.00s)\n"}
{"Action":"skip","Package":"github.com/catchbox/catchbox/internal/store","Test":"TestB/postgres"}
{"Action":"output","Package":"github.com/catchbox/catchbox/internal/store","Test":"TestC/postgres","Output":"2026/11/25 12:05:55 INFO Applied migrations store=sqlite\n"}
{"Action":"output","Package":"github.com/catchbox/catchbox/internal/store","Test":"TestC/postgres","Output":"    storetest.go:40: CATCHBOX_TEST_POSTGRES_URL not set: PostgreSQL tests skipped\n"}
{"Action":"skip","Package":"github.com/catchbox/catchbox/internal/store","Test":"TestC/postgres"}
{"Action":"output","Package":"github.com/catchbox/catchbox/internal/store","Test":"TestD","Output":"    d_test.go:9: got 1, want 2\n"}
{"Action":"fail","Package":"github.com/catchbox/catchbox/internal/store","Test":"TestD"}
{"Action":"output","Package":"github.com/catchbox/catchbox/internal/store","Output":"FAIL\tgithub.com/catchbox/catchbox/internal/store\t0.1s\n"}
{"Action":"fail","Package":"github.com/catchbox/catchbox/internal/store"}
`
	var out strings.Builder
	failed, err := summarize(strings.NewReader(in), &out)
	if err != nil || !failed {
		t.Fatalf("failed %v, err %v", failed, err)
	}
	got := out.String()
	for _, want := range []string{
		"# github.com/catchbox/catchbox/internal/store\n--- FAIL: TestD\n    d_test.go:9: got 1, want 2\n",
		"FAIL\tgithub.com/catchbox/catchbox/internal/store\t0.1s\n",
		"Skipped: 2 tests, for these reasons:\n",
		"     2  CATCHBOX_TEST_POSTGRES_URL not set: PostgreSQL tests skipped\n        (internal/store.TestB/postgres, internal/store.TestC/postgres)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "TestA") {
		t.Errorf("a passing test is shown:\n%s", got)
	}
}
