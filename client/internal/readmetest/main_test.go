// Package signup_test is the Go example of the repository's README, run as a
// test against a server built from the repository, and checked to be the
// README's text.
package signup_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/client/internal/testserver"
)

// readmeServer is the server the README's examples run against.
var readmeServer *testserver.Server

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "catchbox-readme-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin, err := testserver.Build(dir)
	if err == testserver.ErrNoRepository {
		fmt.Println("README example skipped:", err)
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := testserver.Start(bin, "", 20*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Stop()
	readmeServer = s
	os.Setenv("CATCHBOX_TEST_BIN", bin)
	os.Setenv("CATCHBOX_URL", s.URL)
	os.Setenv("CATCHBOX_API_KEY", testserver.Key)
	os.Unsetenv("CATCHBOX_MAIL_DOMAIN")
	return m.Run()
}

// TestREADMEShowsThisExample checks that the README's Go example is
// signup_test.go, word for word.
func TestREADMEShowsThisExample(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Skip("README.md not found beside the module")
	}
	example, err := os.ReadFile("signup_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+string(example)+"```\n") {
		t.Error("README.md's Go example differs from client/internal/readmetest/signup_test.go: copy the file into the README")
	}
}
