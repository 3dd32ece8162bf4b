// Command catchbox runs the Catchbox service (serve) and administers its store
// (admin). Every setting has a flag and an environment variable; see
// internal/config and docs/operations.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/server"
)

type cli struct {
	Serve serveCmd `cmd:"" help:"Run the HTTP API, the SMTP listener(s) and the background workers."`
	Admin adminCmd `cmd:"" help:"Administer organisations, API keys and namespaces (works while serve runs)."`

	Wait    waitCmd    `cmd:"" help:"Wait for an email and print it, or its first link or code (client of a running server)."`
	SMS     smsCmd     `cmd:"" name:"sms" help:"Wait for an SMS (client of a running server)."`
	OTP     otpCmd     `cmd:"" name:"otp" help:"Print a one-time password, from a secret or a saved device."`
	Version versionCmd `cmd:"" help:"Print the version."`
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
		kong.UsageOnError(),
	)
	k, err := parser.Parse(os.Args[1:])
	if err != nil {
		if adminJSON(os.Args[1:]) {
			writeAdminError(os.Stdout, fmt.Errorf("%w: %v", errUsage, err))
			os.Exit(80)
		}
		parser.FatalIfErrorf(err)
	}
	if err := k.Run(); err != nil {
		if adminJSON(os.Args[1:]) {
			writeAdminError(os.Stdout, err)
		} else {
			fmt.Fprintln(os.Stderr, "catchbox:", err)
		}
		os.Exit(exitCode(err))
	}
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
