package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the repository root, from this package's directory.
const repoRoot = "../.."

// markdownFiles returns README.md and docs/*.md.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v (%d files)", err, len(docs))
	}
	return append([]string{filepath.Join(repoRoot, "README.md")}, docs...)
}

var (
	fence      = regexp.MustCompile("(?ms)^```.*?^```")
	codeSpan   = regexp.MustCompile("`[^`\n]*`")
	linkTarget = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refTarget  = regexp.MustCompile(`(?m)^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
)

// Every relative link of README.md and docs/*.md resolves, from the file's
// own directory, to a file or directory of the repository (a link written
// from the root, e.g. docs/fleet.md inside docs/, does not).
func TestDocsRelativeLinks(t *testing.T) {
	var checked int
	for _, md := range markdownFiles(t) {
		b, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		text := codeSpan.ReplaceAllString(fence.ReplaceAllString(string(b), ""), "")
		var targets []string
		for _, re := range []*regexp.Regexp{linkTarget, refTarget} {
			for _, m := range re.FindAllStringSubmatch(text, -1) {
				targets = append(targets, m[1])
			}
		}
		for _, target := range targets {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
				continue
			}
			path, _, _ := strings.Cut(target, "#")
			checked++
			if _, err := os.Stat(filepath.Join(filepath.Dir(md), filepath.FromSlash(path))); err != nil {
				rel, _ := filepath.Rel(repoRoot, md)
				t.Errorf("%s: link %q does not resolve from %s: %v", rel, target, filepath.Dir(rel), err)
			}
		}
	}
	if checked < 10 {
		t.Errorf("checked %d relative links: the link pattern misses them", checked)
	}
}

var (
	// synopsisStart is a synopsis line of docs/commands.md: "netprof" and
	// the command's words; "a|b" stands for either (blob pull|push|bench).
	synopsisStart = regexp.MustCompile(`^netprof((?: [a-z]+(?:\|[a-z]+)*)+)`)
	// inherits names another command whose synopsis flags apply too.
	inherits = regexp.MustCompile(`\[([a-z]+)'s other flags\]`)
)

// synopses returns docs/commands.md's synopsis entries (a line starting
// "netprof" in a code block, with the indented lines continuing it), keyed
// by their command words.
func synopses(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "commands.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, block := range fence.FindAllString(string(b), -1) {
		key := ""
		for _, line := range strings.Split(block, "\n") {
			if m := synopsisStart.FindStringSubmatch(line); m != nil {
				key = strings.TrimSpace(m[1])
				out[key] = append(out[key], line)
			} else if key != "" && strings.HasPrefix(line, " ") {
				out[key][len(out[key])-1] += "\n" + line
			} else {
				key = ""
			}
		}
	}
	return out
}

// synopsisOf returns the text of every synopsis entry that applies to the
// command path (e.g. "blob pull" matches "blob pull" and "blob
// pull|push|bench"), and of the commands it inherits flags from.
func synopsisOf(all map[string][]string, path string, seen map[string]bool) string {
	if seen[path] {
		return ""
	}
	seen[path] = true
	words := strings.Fields(path)
	var text []string
	for key, entries := range all {
		kw := strings.Fields(key)
		if len(kw) != len(words) {
			continue
		}
		match := true
		for i := range kw {
			match = match && slices.Contains(strings.Split(kw[i], "|"), words[i])
		}
		if match {
			text = append(text, entries...)
		}
	}
	s := strings.Join(text, "\n")
	for _, m := range inherits.FindAllStringSubmatch(s, -1) {
		s += "\n" + synopsisOf(all, m[1], seen)
	}
	return s
}

// Every flag of every command (newApp's, subcommands too) is in the
// command's synopsis in docs/commands.md, so the document's synopses
// cannot drift from --help.
func TestDocsSynopsisNamesEveryFlag(t *testing.T) {
	all := synopses(t)
	byCmd := map[string][]string{}
	var order []string
	for _, f := range allFlags(t) {
		if !slices.Contains(order, f.cmd) {
			order = append(order, f.cmd)
		}
		names := f.flag.Names()
		text := synopsisOf(all, f.cmd, map[string]bool{})
		if text == "" {
			byCmd[f.cmd] = append(byCmd[f.cmd], "(no synopsis)")
			continue
		}
		found := false
		for _, n := range names {
			found = found || regexp.MustCompile(`--`+regexp.QuoteMeta(n)+`([^a-z0-9-]|$)`).MatchString(text)
		}
		if !found {
			byCmd[f.cmd] = append(byCmd[f.cmd], "--"+names[0])
		}
	}
	for _, c := range order {
		if missing := byCmd[c]; len(missing) > 0 {
			t.Errorf("docs/commands.md: the synopsis of netprof %s lacks %s", c, strings.Join(missing, " "))
		}
	}
}
