package main

import (
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// commandFlag is one flag of one command (subcommands by their full path,
// e.g. "blob pull").
type commandFlag struct {
	cmd  string
	flag cli.DocGenerationFlag
}

// allFlags returns every flag of every command of the app newApp builds,
// subcommands included, --help left out.
func allFlags(t *testing.T) []commandFlag {
	t.Helper()
	app := newApp(slog.New(slog.NewTextHandler(io.Discard, nil)))
	var out []commandFlag
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			path := strings.TrimSpace(prefix + " " + c.Name)
			for _, f := range c.Flags {
				df, ok := f.(cli.DocGenerationFlag)
				if !ok {
					t.Fatalf("%s: flag %v does not describe itself (cli.DocGenerationFlag)", path, f.Names())
				}
				if f.Names()[0] != "help" {
					out = append(out, commandFlag{path, df})
				}
			}
			walk(path, c.Subcommands)
		}
	}
	walk("", app.Commands)
	if len(out) < 50 {
		t.Fatalf("found %d flags: the walk missed commands", len(out))
	}
	return out
}

// placeholder is the one backtick use urfave/cli's help has a reason for: a
// flag that takes a value naming it (`FILE` prints --html FILE).
var placeholder = regexp.MustCompile("^[^`]*`[A-Z][A-Z0-9_]*`[^`]*$")

// urfave/cli turns a backticked word of a flag's Usage into the value
// placeholder, so "credentials as for `blob`" made a boolean print as
// "--fleet blob". No Usage has a backtick, except an all-caps value
// placeholder of a flag that takes a value.
func TestFlagUsageBackticks(t *testing.T) {
	for _, f := range allFlags(t) {
		u := f.flag.GetUsage()
		if !strings.Contains(u, "`") {
			continue
		}
		if !f.flag.TakesValue() || !placeholder.MatchString(u) {
			t.Errorf("%s --%s: backtick in Usage %q: urfave/cli prints the quoted word as the flag's value (%s)",
				f.cmd, f.flag.Names()[0], u, cli.FlagStringer(f.flag))
		}
	}
}

// ownDefault matches a Usage stating a default itself, which then stands
// beside the one urfave/cli prints ("(default max(5s, ...)) (default: 0s)");
// a default that is not the flag's zero value goes in DefaultText.
var ownDefault = regexp.MustCompile(`\(default\b|\bdefault (is |max\(|[0-9])|\bdefault:`)

// zeroMeans matches a Usage saying what 0 stands for ("(0: 5s)"); printed
// beside "(default: 0s)" it contradicts it unless DefaultText says the same.
var zeroMeans = regexp.MustCompile(`\(0: |\b0 = `)

// Every flag's help shows one true default: urfave/cli's "(default: X)"
// (the flag's DefaultText where the zero value means something else), no
// second one in the Usage, no "(0: 5s) (default: 0s)"; and no entry is a
// wall of text (--probes' group list is in the commands' descriptions).
func TestFlagHelpOneDefault(t *testing.T) {
	for _, f := range allFlags(t) {
		name, u, help := f.flag.Names()[0], f.flag.GetUsage(), cli.FlagStringer(f.flag)
		if m := ownDefault.FindString(u); m != "" {
			t.Errorf("%s --%s: Usage states a default (%q); set DefaultText instead: %s", f.cmd, name, m, help)
		}
		if n := strings.Count(help, "(default:"); n > 1 {
			t.Errorf("%s --%s: %d defaults: %s", f.cmd, name, n, help)
		}
		if zeroMeans.MatchString(u) && (strings.Contains(help, "(default: 0s)") || strings.Contains(help, "(default: 0)")) {
			t.Errorf("%s --%s: Usage says what 0 means but the default prints as zero: %s", f.cmd, name, help)
		}
		if len(help) > 400 {
			t.Errorf("%s --%s: help entry of %d characters (at most 400): %s", f.cmd, name, len(help), help)
		}
	}
}
