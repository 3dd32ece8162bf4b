// Command catchbox runs the Catchbox service (serve) and administers its store
// (admin). Every setting has a flag and an environment variable; see
// internal/config and docs/operations.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/version"
)

type cli struct {
	Version kong.VersionFlag `name:"version" help:"Print the version and exit."`

	Serve serveCmd `cmd:"" help:"Run the HTTP API, the SMTP listener(s) and the background workers."`
	Admin adminCmd `cmd:"" help:"Administer organisations, API keys and namespaces (works while serve runs)."`

	Wait       waitCmd    `cmd:"" help:"Wait for an email and print it, or its first link or code (client of a running server)."`
	SMS        smsCmd     `cmd:"" name:"sms" help:"Wait for an SMS (client of a running server)."`
	OTP        otpCmd     `cmd:"" name:"otp" help:"Print a one-time password, from a secret or a saved device."`
	VersionCmd versionCmd `cmd:"" name:"version" help:"Print the version."`
}

type serveCmd struct {
	config.Serve `embed:""`
}

func (c *serveCmd) Run() error {
	flush := server.SetupLogger(c.LogFormat, os.Stderr)
	defer flush()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return server.Run(ctx, c.Serve, os.Stdout, nil)
}

func main() {
	var c cli
	parser := kong.Must(&c,
		kong.Name("catchbox"),
		kong.Description("Disposable test inboxes, SMS numbers and virtual authenticators."),
		kong.Vars{"version": version.Version},
		kong.Help(helpPrinter),
	)
	args := os.Args[1:]
	if len(args) == 0 {
		parser.Stdout = os.Stderr
		args = []string{"--help"}
		parser.Exit = func(int) { os.Exit(exitUsage) }
	}
	k, err := parser.Parse(args)
	if err != nil {
		var pe *kong.ParseError
		var ctx *kong.Context
		if errors.As(err, &pe) {
			ctx = pe.Context
		}
		msg := describeSettings(err.Error(), parser.Model, args)
		if adminJSON(args) {
			writeAdminError(os.Stdout, fmt.Errorf("%w: %s", errUsage, msg))
			os.Exit(exitUsage)
		}
		fmt.Fprintf(os.Stderr, "catchbox: %s (see %s --help)\n", msg, commandPath(ctx))
		os.Exit(exitUsage)
	}
	if err := k.Run(); err != nil {
		msg := describeSettings(err.Error(), parser.Model, args)
		code := exitCode(err)
		if adminJSON(args) {
			writeAdminError(os.Stdout, &described{err: err, msg: msg})
		} else if code == exitUsage {
			fmt.Fprintf(os.Stderr, "catchbox: %s (see %s --help)\n", msg, commandPath(k))
		} else {
			fmt.Fprintln(os.Stderr, "catchbox:", msg)
		}
		os.Exit(code)
	}
}

// described is an error with its text rewritten for the person who ran the
// command (describeSettings), still matching what it wraps.
type described struct {
	err error
	msg string
}

func (d *described) Error() string { return d.msg }
func (d *described) Unwrap() error { return d.err }

// exitUsage is the exit status of a command line that cannot be parsed or
// names a bad value, given as a flag or in the environment: EX_USAGE of
// sysexits.h, apart from the statuses the client commands give their
// outcomes (1 no match, 2 failed).
const exitUsage = 64

// exitCode is the exit status of a command's error: exitError's; exitUsage
// for a refused setting or command line; else 1.
func exitCode(err error) int {
	var e *exitError
	var se *config.SettingError
	switch {
	case errors.As(err, &e):
		return e.code
	case errors.As(err, &se), errors.Is(err, errUsage):
		return exitUsage
	}
	return 1
}

// adminJSON reports whether the command line is an admin command with
// --json, whose errors are JSON too; it reads the arguments, so that a
// command line kong cannot parse is answered in JSON as well.
func adminJSON(args []string) bool {
	if len(args) == 0 || args[0] != "admin" {
		return false
	}
	for _, a := range args[1:] {
		if a == "--" {
			break
		}
		if a == "--json" || a == "--json=true" {
			return true
		}
	}
	return false
}
