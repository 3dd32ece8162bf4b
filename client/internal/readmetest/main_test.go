// Package signup_test is the Go example of the repository's README, run as a
// test against a server built from the repository, and checked to be the
// README's text.
package signup_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/client/internal/testserver"
)

// readmeServer is the server the README's Go example and guard run against
// (TestREADMEBlocks starts a fresh one of its own, as make run does).
var readmeServer *testserver.Server

func TestMain(m *testing.M) {
	testserver.Main(m, "README example", func(bin string) (func(bool), error) {
		s, err := testserver.Start(bin, "", 20*time.Second)
		if err != nil {
			return nil, err
		}
		readmeServer = s
		os.Setenv("CATCHBOX_TEST_BIN", bin)
		os.Setenv("CATCHBOX_URL", s.URL)
		os.Setenv("CATCHBOX_API_KEY", testserver.Key)
		os.Unsetenv("CATCHBOX_MAIL_DOMAIN")
		return func(bool) { s.Stop() }, nil
	})
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
