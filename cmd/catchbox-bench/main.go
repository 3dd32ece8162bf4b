// Command catchbox-bench measures a running mail catcher from the outside,
// the way its users load it: SMTP ingest over persistent connections, the
// wake-up of a waiting inbox search, search latency as data grows, and the
// memory a burst of dashboard sign-ins costs.
//
// It speaks only standard SMTP and HTTP, so the same load runs against
// Catchbox and against a peer such as Mailpit in one session, and the ratio
// between them is what docs/benchmarks.md records. Every load is bounded by a
// message or request count and by timeouts; nothing here writes to a store
// directly.
//
// Usage:
//
//	catchbox-bench smtp   --addr 127.0.0.1:2525 --messages 2000 --conns 8 --size small
//	catchbox-bench wait   --api http://127.0.0.1:8025 --smtp 127.0.0.1:2525 --key KEY --rounds 200
//	catchbox-bench held   --api http://127.0.0.1:8025 --smtp 127.0.0.1:2525 --key KEY --waiters 1000 --mails 100 --pid PID
//	catchbox-bench search --api http://127.0.0.1:8025 --key KEY --subject-includes X --to-addr-prefix Y
//	catchbox-bench search --mailpit --api http://127.0.0.1:8026 --subject-includes X --to-addr-prefix Y
//	catchbox-bench seed   --smtp 127.0.0.1:2525 --messages 100000 --conns 16
//	catchbox-bench rss    --pid PID --interval 100ms
//	catchbox-bench relay  --addr 127.0.0.1:0 --user catchbox --pass relay-secret
//	catchbox-bench webhook --api http://127.0.0.1:8025 --smtp 127.0.0.1:2525 --key KEY --rounds 200 --burst 2000
//	catchbox-bench imap-idle --imap 127.0.0.1:1143 --smtp 127.0.0.1:2525 --pass PASS --clients 1000 --rounds 100
//	catchbox-bench imap-fetch --imap 127.0.0.1:1143 --pass PASS --pid PID
//	catchbox-bench pop3-fetch --pop3 127.0.0.1:1110 --pass PASS --pid PID
//	catchbox-bench signin --api http://127.0.0.1:8025 --attempts 200 --concurrency 100 --pid PID
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// command is one subcommand: its name, a one-line summary for the usage
// text, and the function that parses its own flags and runs it.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout io.Writer) error
}

var commands = []command{
	{"smtp", "send N messages over C persistent SMTP connections and report rate and latency", runSMTP},
	{"wait", "time from the SMTP 250 to the answer of a held wait=true inbox search", runWait},
	{"held", "N held wait=true searches, M mails each to one of them: 250 to answer, CPU per mail, memory per held search", runHeld},
	{"search", "latency of the first inbox page: unfiltered, subject_includes, to_addr_prefix", runSearch},
	{"seed", "fill one or many namespaces with searchable messages over SMTP", runSeed},
	{"rss", "sample a process's resident memory and report its peak", runRSS},
	{"relay", "an SMTP relay sink for outbound mail, printing each message it accepts as JSON", runRelay},
	{"webhook", "time from the SMTP 250 to the email.received webhook's arrival, and events per second", runWebhook},
	{"imap-idle", "time from the SMTP 250 to EXISTS at each of N idling IMAP clients", runIMAPIdle},
	{"imap-fetch", "fetch every message of INBOX over IMAP (BODY.PEEK[]) and report time and server CPU", runIMAPFetch},
	{"pop3-fetch", "retrieve every message over POP3 (RETR) and report time and server CPU", runPOP3Fetch},
	{"signin", "post the dashboard's sign-in form N times, C at once, and report answers, latency and the server's RSS", runSignin},
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "catchbox-bench:", err)
		}
		os.Exit(2)
	}
}

// run dispatches to a subcommand; it is separate from main so that tests can
// drive the tool exactly as the command line does.
func run(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(os.Stderr)
		if len(args) == 0 {
			return errors.New("a subcommand is required")
		}
		return flag.ErrHelp
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdout)
		}
	}
	usage(os.Stderr)
	return fmt.Errorf("unknown subcommand %q", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: catchbox-bench <subcommand> [flags]   (catchbox-bench <subcommand> -h for its flags)")
	fmt.Fprintln(w)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-7s %s\n", c.name, c.summary)
	}
}

// newFlagSet returns a flag set that reports errors instead of exiting, so a
// bad flag surfaces through run like any other error.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("catchbox-bench "+name, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	return fs
}

// parseFlags parses args and refuses stray positional arguments, which are
// almost always a mistyped flag.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}
