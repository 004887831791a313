package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// --flow-entries (and NETPROF_FLOW_ENTRIES) outside 1..4194304 is a usage
// error naming the bounds on every command that loads the flow table; its
// help says the default, the kernel memory per entry and what happens to
// flows that do not fit.
func TestFlowEntriesFlag(t *testing.T) {
	bin := buildBinary(t)
	const want = "must be 1..4194304"
	for _, args := range [][]string{
		{"bench", "--flow-entries", "0"},
		{"bench", "--flow-entries", "4194305"},
		{"sweep", "--flow-entries", "-1", "--streams", "1,2"},
		{"watch", "--flow-entries", "0", "--duration", "1s"},
		{"blob", "pull", "--flow-entries", "0", "https://acct.blob.core.windows.net/c/b"},
	} {
		code, _, stderr := runBin(t, bin, nil, args...)
		if code != exitUsage || !strings.Contains(stderr, want) || !strings.Contains(stderr, "--flow-entries") {
			t.Errorf("%v: exit %d stderr %q, want exit %d and %q", args, code, stderr, exitUsage, want)
		}
	}
	cmd := exec.Command(bin, "bench")
	cmd.Env = append(os.Environ(), "NETPROF_FLOW_ENTRIES=0")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "--flow-entries 0: "+want) {
		t.Errorf("NETPROF_FLOW_ENTRIES=0 bench: %v %q, want exit %d and the bounds", err, out, exitUsage)
	}
	for _, c := range []string{"bench", "watch"} {
		_, help, _ := runBin(t, bin, nil, c, "--help")
		for _, w := range []string{"--flow-entries value", "about 185 bytes of kernel memory each", "counted as lost", "(default: 16384)", "$NETPROF_FLOW_ENTRIES"} {
			if !strings.Contains(help, w) {
				t.Errorf("%s --help lacks %q", c, w)
			}
		}
	}
}
