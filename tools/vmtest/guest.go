package main

import (
	"fmt"
	"strconv"
	"strings"
)

// Job is one program the guest runs.
type Job struct {
	Name string   // label in logs and the summary
	Dir  string   // working directory in the guest, created before the run
	Data string   // guest directory whose contents are copied into Dir first; "" for none
	Argv []string // Argv[0] is a path inside the guest
}

// Guest is what the guest's /init does after setting the machine up.
type Guest struct {
	Marker  string   // unique prefix of the lines /init reports on
	Modules []string // modules to load, dependencies first
	Env     []string // KEY=VALUE exported to every job
	Jobs    []Job    // run one after the other
}

// guestPath is the PATH in the guest: host tools in /usr/bin shadow the
// busybox applets in /bin.
const guestPath = "/usr/bin:/usr/sbin:/bin:/sbin"

// initSetup mounts what the tests use, brings up lo and points the kernel's
// module autoloader at busybox modprobe. Failures are reported, not fatal:
// the jobs then fail and say why.
const initSetup = `mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/null >/dev/console 2>&1
mkdir -p /dev/pts /dev/shm /sys/fs/cgroup
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
ln -s /proc/self/fd /dev/fd
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
mount -t bpf bpf /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup
echo /sbin/modprobe >/proc/sys/kernel/modprobe
hostname vmtest
ip link set lo up
`

// initScript returns the guest's /init: set up, report READY with the
// kernel release and the possible and online CPUs, load the modules, run each
// job in its directory and report BEGIN/EXIT marker lines around it, report
// DONE, power off. Every line it reports starts with g.Marker.
func initScript(g Guest) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# /init written by tools/vmtest\n")
	fmt.Fprintf(&b, "export PATH=%s HOME=/root TMPDIR=/tmp\n", guestPath)
	b.WriteString(initSetup)
	m := shellQuote(g.Marker)
	fmt.Fprintf(&b, "echo %s READY \"$(uname -r)\" \"$(cat /sys/devices/system/cpu/possible)\" \"$(cat /sys/devices/system/cpu/online)\"\n", m)
	if len(g.Modules) > 0 {
		fmt.Fprintf(&b, "out=$(modprobe -a %s 2>&1) || echo \"vmtest: modprobe: $out\"\n", shellJoin(g.Modules))
	}
	for _, kv := range g.Env {
		fmt.Fprintf(&b, "export %s\n", shellQuote(kv))
	}
	for i, j := range g.Jobs {
		fmt.Fprintf(&b, "mkdir -p %s\n", shellQuote(j.Dir))
		if j.Data != "" {
			fmt.Fprintf(&b, "cp -a %s/. %s/\n", shellQuote(j.Data), shellQuote(j.Dir))
		}
		fmt.Fprintf(&b, "echo %s BEGIN %d\n", m, i)
		fmt.Fprintf(&b, "(cd %s && exec %s)\n", shellQuote(j.Dir), shellJoin(j.Argv))
		fmt.Fprintf(&b, "echo %s EXIT %d $?\n", m, i)
	}
	fmt.Fprintf(&b, "echo %s DONE\n", m)
	b.WriteString("poweroff -f\necho o >/proc/sysrq-trigger\nsleep 60\n")
	return b.String()
}

// shellQuote quotes s for sh as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = shellQuote(w)
	}
	return strings.Join(q, " ")
}

// kernelCmdline returns the guest kernel's command line: serial console,
// printk quiet except emergencies (everything with verbose), reboot at once
// on panic (QEMU runs with -no-reboot, so a panic ends it), and maxcpus
// when all of m's CPUs are present but only some are to come up.
func kernelCmdline(m Machine, verbose bool) string {
	args := []string{"console=ttyS0", "panic=-1", "mitigations=off"}
	if verbose {
		args = append(args, "loglevel=7")
	} else {
		args = append(args, "quiet", "loglevel=1")
	}
	if m.AllPresent && m.Possible > m.Online {
		args = append(args, "maxcpus="+strconv.Itoa(m.Online))
	}
	return strings.Join(args, " ")
}
