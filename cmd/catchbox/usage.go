package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/alecthomas/kong"
)

// A mistake on the command line is answered with one line that names what the
// user set, as they set it, and where to read more:
//
//	catchbox: CATCHBOX_WAIT_HOLD="abc": expected a duration such as 30s or 1h30m, not "abc" (see catchbox serve --help)
//
// Settings are named in errors by their flag (--wait-hold, config.SettingError
// and kong alike); describeSettings names the environment variable instead
// when that is where the value came from.

var (
	flagRef  = regexp.MustCompile(`--[a-z0-9][a-z0-9-]*`)
	fromEnv  = regexp.MustCompile(`^([A-Z0-9_]+): (.*) \(from envar [A-Z0-9_]+=(".*")\)$`)
	duration = regexp.MustCompile(`expected duration but got ("[^"]*")(: time: .*)?$`)
	// kong puts the command's path before a Validate error: "serve: --wait-hold ...".
	validatePrefix = regexp.MustCompile(`^([a-z][a-z0-9 -]*): (--[a-z]|[A-Z][A-Z0-9_]+\b)`)
)

// describeSettings rewrites an error's text for the person who ran the
// command: a flag they did not give on the command line but set through its
// environment variable is named by the variable.
func describeSettings(msg string, app *kong.Application, args []string) string {
	flags := map[string]*kong.Flag{}
	commands := map[string]bool{}
	if app != nil {
		collectFlags(app.Node, flags, commands)
	}
	msg = flagRef.ReplaceAllStringFunc(msg, func(ref string) string {
		f := flags[strings.TrimPrefix(ref, "--")]
		if f == nil || onCommandLine(f, args) {
			return ref
		}
		for _, env := range f.Envs {
			if _, ok := os.LookupEnv(env); ok {
				return env
			}
		}
		return ref
	})
	if m := validatePrefix.FindStringSubmatchIndex(msg); m != nil && allCommands(msg[m[2]:m[3]], commands) {
		msg = msg[m[4]:]
	}
	if m := fromEnv.FindStringSubmatch(msg); m != nil {
		msg = m[1] + "=" + m[3] + ": " + m[2]
	}
	return duration.ReplaceAllString(msg, `expected a duration such as 30s or 1h30m, not $1`)
}

// collectFlags indexes the flags of node and of every command below it by
// name, and collects the commands' names. Commands share flag names only for
// the same setting (--org, --json).
func collectFlags(node *kong.Node, flags map[string]*kong.Flag, commands map[string]bool) {
	for _, f := range node.Flags {
		if _, ok := flags[f.Name]; !ok {
			flags[f.Name] = f
		}
	}
	for _, child := range node.Children {
		commands[child.Name] = true
		collectFlags(child, flags, commands)
	}
}

// allCommands reports whether every word of path is a command's name.
func allCommands(path string, commands map[string]bool) bool {
	for _, w := range strings.Fields(path) {
		if !commands[w] {
			return false
		}
	}
	return true
}

// onCommandLine reports whether the flag was given among args (by name,
// alias, negation or short name), before any "--".
func onCommandLine(f *kong.Flag, args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if f.Short != 0 && len(a) >= 2 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a[1:], f.Short) {
			return true
		}
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		if name == f.Name || name == "no-"+f.Name {
			return true
		}
		for _, alias := range f.Aliases {
			if name == alias {
				return true
			}
		}
	}
	return false
}

// commandPath names the command whose help answers a mistake: "catchbox
// serve", "catchbox admin org create", or "catchbox" when no command was
// recognised.
func commandPath(ctx *kong.Context) string {
	if ctx == nil || ctx.Selected() == nil {
		return "catchbox"
	}
	var words []string
	for n := ctx.Selected(); n != nil && n.Type != kong.ApplicationNode; n = n.Parent {
		words = append([]string{n.Name}, words...)
	}
	return "catchbox " + strings.Join(words, " ")
}

// helpPrinter is kong's help, with each group of flags of which exactly one
// is required shown as alternatives: "otp --secret=BASE32 | --device=ID"
// rather than as two flags that are both needed.
func helpPrinter(options kong.HelpOptions, ctx *kong.Context) error {
	out := ctx.Stdout
	var buf bytes.Buffer
	ctx.Stdout = &buf
	err := kong.DefaultHelpPrinter(options, ctx)
	ctx.Stdout = out
	if err != nil {
		return err
	}
	text := buf.String()
	for _, group := range requiredAlternatives(ctx.Model.Node) {
		both := make([]string, len(group))
		for i, f := range group {
			both[i] = f.Summary()
		}
		text = strings.ReplaceAll(text, strings.Join(both, " "), strings.Join(both, " | "))
	}
	_, err = fmt.Fprint(out, text)
	return err
}

// requiredAlternatives lists the groups of required flags that exclude each
// other (kong's xor), in the order they are declared, for every command.
func requiredAlternatives(node *kong.Node) [][]*kong.Flag {
	var out [][]*kong.Flag
	groups := map[string][]*kong.Flag{}
	var order []string
	for _, f := range node.Flags {
		if !f.Required {
			continue
		}
		for _, x := range f.Xor {
			if _, ok := groups[x]; !ok {
				order = append(order, x)
			}
			groups[x] = append(groups[x], f)
		}
	}
	for _, x := range order {
		if len(groups[x]) > 1 {
			out = append(out, groups[x])
		}
	}
	for _, child := range node.Children {
		out = append(out, requiredAlternatives(child)...)
	}
	return out
}
