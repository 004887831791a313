package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Words with quotes, spaces and shell syntax reach the program unchanged.
func TestShellJoinRoundTrip(t *testing.T) {
	words := []string{"plain", "two words", "it's", `"dq"`, "$HOME", "a;b|c&&d", "`id`", "", "new\nline", `back\slash`}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	script := `for w in ` + shellJoin(words) + `; do printf '[%s]' "$w"; done`
	got, err := exec.Command("sh", "-c", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "[" + strings.Join(words, "][") + "]"
	if string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestInitScript(t *testing.T) {
	g := Guest{
		Marker:  "VMTEST-abc",
		Modules: []string{"stp", "bridge"},
		Env:     []string{"NETPROF_REQUIRE_KERNEL_TESTS=1", "NETPROF_X=a b"},
		Jobs: []Job{
			{Name: "p1", Dir: "/work/main/loader", Data: "/vmtest/data/0", Argv: []string{"/vmtest/bin/0/loader.test", "-test.run=^TestX$"}},
			{Name: "p2", Dir: "/tmp/it's", Argv: []string{"/bin/sh", "-c", "exit 3"}},
		},
	}
	s := initScript(g)
	if !strings.HasPrefix(s, "#!/bin/sh\n") {
		t.Errorf("no #! line:\n%s", s)
	}
	// Order matters: mounts before READY, READY before the modules (its
	// time is the boot), each job between its BEGIN and EXIT, DONE last.
	inOrder := []string{
		"mount -t proc proc /proc", "mount -t tracefs tracefs /sys/kernel/tracing", "mount -t bpf bpf /sys/fs/bpf",
		"ip link set lo up",
		"echo 'VMTEST-abc' READY",
		"modprobe -a 'stp' 'bridge'",
		"export 'NETPROF_X=a b'",
		"mkdir -p '/work/main/loader'", "cp -a '/vmtest/data/0'/. '/work/main/loader'/",
		"echo 'VMTEST-abc' BEGIN 0",
		"(cd '/work/main/loader' && exec '/vmtest/bin/0/loader.test' '-test.run=^TestX$')",
		"echo 'VMTEST-abc' EXIT 0 $?",
		`(cd '/tmp/it'\''s' && exec '/bin/sh' '-c' 'exit 3')`,
		"echo 'VMTEST-abc' EXIT 1 $?",
		"echo 'VMTEST-abc' DONE",
		"poweroff -f",
	}
	at := 0
	for _, want := range inOrder {
		i := strings.Index(s[at:], want)
		if i < 0 {
			t.Fatalf("missing or out of order: %q\n%s", want, s)
		}
		at += i + len(want)
	}
	if strings.Count(s, "cp -a") != 1 {
		t.Errorf("a job without data copies data:\n%s", s)
	}
	if out, err := exec.Command("sh", "-n", "-c", s).CombinedOutput(); err != nil {
		t.Errorf("sh -n: %v: %s", err, out)
	}
}

func TestKernelCmdlineAndQEMUArgs(t *testing.T) {
	hot := Machine{Online: 2, Possible: 240, MemoryMB: 3072}
	present := hot
	present.AllPresent = true
	tests := []struct {
		m                Machine
		smp, notCmd, cmd string
	}{
		{hot, "2,maxcpus=240", "maxcpus=", "console=ttyS0"},
		{present, "240", "", "maxcpus=2"},
		{Machine{Online: 2, Possible: 2, MemoryMB: 512, AllPresent: true}, "2", "maxcpus=", "loglevel=1"},
	}
	for _, tc := range tests {
		args := qemuArgs(tc.m, "/k", "/i", false)
		i := slices.Index(args, "-smp")
		if i < 0 || args[i+1] != tc.smp {
			t.Errorf("%+v: -smp in %v, want %s", tc.m, args, tc.smp)
		}
		cmd := args[slices.Index(args, "-append")+1]
		if !strings.Contains(cmd, tc.cmd) || (tc.notCmd != "" && strings.Contains(cmd, tc.notCmd)) {
			t.Errorf("%+v: command line %q: want %q, not %q", tc.m, cmd, tc.cmd, tc.notCmd)
		}
		for _, want := range []string{"-no-reboot", "-nographic", "tcg,thread=single"} {
			if !slices.Contains(args, want) {
				t.Errorf("%v lacks %s", args, want)
			}
		}
	}
	if cmd := kernelCmdline(hot, true); strings.Contains(cmd, "quiet") || !strings.Contains(cmd, "loglevel=7") {
		t.Errorf("-console command line %q", cmd)
	}
}

func TestNetprofEnv(t *testing.T) {
	got := netprofEnv([]string{"PATH=/bin", "NETPROF_REQUIRE_KERNEL_TESTS=1", "XNETPROF_A=1", "NETPROF_B=x=y"})
	want := []string{"NETPROF_REQUIRE_KERNEL_TESTS=1", "NETPROF_B=x=y"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestCPURange(t *testing.T) {
	for n, want := range map[int]string{1: "0", 2: "0-1", 240: "0-239"} {
		if got := cpuRange(n); got != want {
			t.Errorf("cpuRange(%d) = %q, want %q", n, got, want)
		}
	}
	check := possibleCheck(Machine{Online: 2, Possible: 240})
	if err := check(Run{Possible: "0-239", Online: "0-1"}); err != nil {
		t.Error(err)
	}
	if err := check(Run{Release: "6.12", Possible: "0-1", Online: "0-1"}); err == nil || !strings.Contains(err.Error(), "possible CPUs 0-1") {
		t.Errorf("possible 0-1 for 240 accepted: %v", err)
	}
}
