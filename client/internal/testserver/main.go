package testserver

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// Main is the TestMain of a package whose tests run against servers of their
// own. It builds the catchbox binary of the repository (Build), calls setup
// with its path to start the servers, runs the tests, calls teardown (told
// whether they failed, to print the servers' logs) and exits. Outside the
// repository, with no server to build, the tests of what are skipped.
func Main(m *testing.M, what string, setup func(bin string) (teardown func(failed bool), err error)) {
	os.Exit(runMain(m, what, setup))
}

func runMain(m *testing.M, what string, setup func(bin string) (func(failed bool), error)) int {
	dir, err := os.MkdirTemp("", "catchbox-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin, err := Build(dir)
	if errors.Is(err, ErrNoRepository) {
		fmt.Println(what, "skipped:", err)
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	teardown, err := setup(bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	teardown(code != 0)
	return code
}
