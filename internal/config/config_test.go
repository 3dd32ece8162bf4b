package config_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/catchbox/catchbox/internal/config"
)

// TestDefaults checks that Defaults gives what kong gives for an empty command
// line and environment, and that the defaults are valid.
func TestDefaults(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "CATCHBOX_") {
			t.Setenv(k, "") // restored when the test ends
			os.Unsetenv(k)
		}
	}
	var cli struct {
		Serve config.Serve `embed:""`
	}
	parser, err := kong.New(&cli)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse(nil); err != nil {
		t.Fatal(err)
	}
	got := config.Defaults()
	if !reflect.DeepEqual(got, cli.Serve) {
		t.Errorf("Defaults() =\n%+v\nkong parses\n%+v", got, cli.Serve)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Defaults() are not valid: %v", err)
	}
}
