// Package queues maps an interface's receive and transmit queues to their
// interrupts and CPUs, as the kernel has them set when a run starts: per
// queue the RPS / XPS CPU masks (/sys/class/net/IF/queues), per interrupt
// of the device (its MSI/MSI-X vectors, /sys/.../msi_irqs) the name,
// queue, affinity and effective affinity (/proc/irq/N) and the count per
// CPU so far (/proc/interrupts), and the NIC's
// NUMA node. A report names the interrupts that fed its hot core.
package queues

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/internal/osthread"
	"github.com/netprof/netprof/trace"
)

// FS is where the files are read: the root of sysfs and of procfs
// (tests point them at generated trees).
type FS struct {
	Sys, Proc string
}

// Host is the running system's /sys and /proc.
var Host = FS{Sys: "/sys", Proc: "/proc"}

// Read returns the queue map of interface ifname in the caller's own
// network namespace (sysfs shows the namespace it was mounted in). A
// virtual interface without a device (veth, lo) has queues and no
// interrupts.
func (f FS) Read(ifname string) (*trace.QueueMap, error) {
	base := filepath.Join(f.Sys, "class", "net", ifname)
	if _, err := os.Stat(base); err != nil {
		return nil, fmt.Errorf("queues of %s: %w", ifname, err)
	}
	m := &trace.QueueMap{}
	var err error
	if m.RxQueues, err = readQueues(filepath.Join(base, "queues"), "rx-", "rps_cpus"); err != nil {
		return nil, err
	}
	if m.TxQueues, err = readQueues(filepath.Join(base, "queues"), "tx-", "xps_cpus"); err != nil {
		return nil, err
	}
	dev := findDevice(filepath.Join(base, "device"))
	if dev == "" {
		return m, nil
	}
	if n, err := readInt(filepath.Join(dev, "numa_node")); err == nil && n >= 0 {
		m.NumaNode = &n
	}
	irqs, err := os.ReadDir(filepath.Join(dev, "msi_irqs"))
	if err != nil {
		return m, nil
	}
	counts, err := f.interrupts()
	if err != nil {
		return nil, err
	}
	for _, e := range irqs {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		irq := trace.IRQ{IRQ: n}
		if in, ok := counts[e.Name()]; ok {
			irq.Name, irq.Count = in.name, in.count
		}
		irq.Direction, irq.Queue = QueueOf(irq.Name)
		irq.Affinity = readTrim(filepath.Join(f.Proc, "irq", e.Name(), "smp_affinity_list"))
		irq.Effective = readTrim(filepath.Join(f.Proc, "irq", e.Name(), "effective_affinity_list"))
		m.IRQs = append(m.IRQs, irq)
	}
	slices.SortFunc(m.IRQs, func(a, b trace.IRQ) int { return a.IRQ - b.IRQ })
	return m, nil
}

// irqLine is one numbered interrupt of /proc/interrupts.
type irqLine struct {
	name  string // the action name, last word
	count uint64 // over all CPUs
}

// interrupts reads the numbered lines of /proc/interrupts, streaming:
// on a 288-CPU host with a thousand vectors the file is several MB (a
// reader that stops at 1 MiB, as prometheus/procfs's does, loses the
// NIC's vectors).
func (f FS) interrupts() (map[string]irqLine, error) {
	fh, err := os.Open(filepath.Join(f.Proc, "interrupts"))
	if err != nil {
		return nil, fmt.Errorf("interrupts: %w", err)
	}
	defer fh.Close()
	rd := bufio.NewReaderSize(fh, 1<<16)
	header, err := rd.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("interrupts: no header: %w", err)
	}
	ncpu := len(strings.Fields(header))
	out := map[string]irqLine{}
	for {
		line, err := rd.ReadString('\n')
		if f := strings.Fields(line); len(f) > 1 {
			irq := strings.TrimSuffix(f[0], ":")
			if _, aerr := strconv.Atoi(irq); aerr == nil {
				var l irqLine
				for _, v := range f[1:min(len(f), ncpu+1)] {
					c, _ := strconv.ParseUint(v, 10, 64)
					l.count += c
				}
				if len(f) > ncpu+1 {
					l.name = f[len(f)-1]
				}
				out[irq] = l
			}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("interrupts: %w", err)
		}
	}
}

// findDevice returns the directory holding the device's msi_irqs: the
// interface's device (a PCI NIC: mlx5, mana) or its parent (virtio_net's
// virtio device sits under its PCI function); "" without a device.
func findDevice(dev string) string {
	d, err := filepath.EvalSymlinks(dev)
	if err != nil {
		return ""
	}
	for range 2 {
		if _, err := os.Stat(filepath.Join(d, "msi_irqs")); err == nil {
			return d
		}
		d = filepath.Dir(d)
	}
	d, _ = filepath.EvalSymlinks(dev)
	return d
}

// readQueues lists the queue directories with prefix (rx-, tx-) and each
// one's mask file as a CPU list ("" when the file is absent or empty:
// not set).
func readQueues(dir, prefix, maskFile string) ([]trace.Queue, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("queues: %w", err)
	}
	var out []trace.Queue
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		i, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		q := trace.Queue{Index: i}
		if raw := readTrim(filepath.Join(dir, e.Name(), maskFile)); raw != "" {
			q.CPUs, err = MaskToList(raw)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", e.Name(), maskFile, err)
			}
		}
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b trace.Queue) int { return a.Index - b.Index })
	return out, nil
}

// MaskToList converts a kernel CPU bitmap ("00000000,0000000c": 32-bit
// hex words, most significant first) to list format ("2-3"); "" for an
// empty mask.
func MaskToList(mask string) (string, error) {
	words := strings.Split(strings.TrimSpace(mask), ",")
	var cpus []int
	for i, w := range words {
		v, err := strconv.ParseUint(w, 16, 32)
		if err != nil {
			return "", fmt.Errorf("cpu mask %q: %w", mask, err)
		}
		base := 32 * (len(words) - 1 - i)
		for v != 0 {
			b := bits.TrailingZeros64(v)
			cpus = append(cpus, base+b)
			v &^= 1 << b
		}
	}
	slices.Sort(cpus)
	return listOf(cpus), nil
}

// listOf formats sorted CPUs in the kernel's list format.
func listOf(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// irqNames are the NIC drivers' interrupt names with a queue:
// virtio2-input.0 / virtio2-output.0 (virtio_net), mlx5_comp3@pci:...
// (mlx5, one per channel: rx and tx), mana_q3@pci:... (mana), and the
// common <if>-TxRx-3 / <if>-rx-3 / <if>-tx-3.
var irqNames = []struct {
	re  *regexp.Regexp
	dir string // "" from the match
}{
	{regexp.MustCompile(`-input\.(\d+)$`), "rx"},
	{regexp.MustCompile(`-output\.(\d+)$`), "tx"},
	{regexp.MustCompile(`^mlx5_comp(\d+)@`), "rxtx"},
	{regexp.MustCompile(`^mana_q(\d+)@`), "rxtx"},
	{regexp.MustCompile(`(?i)-TxRx-(\d+)$`), "rxtx"},
	{regexp.MustCompile(`(?i)-rx-(\d+)$`), "rx"},
	{regexp.MustCompile(`(?i)-tx-(\d+)$`), "tx"},
}

// QueueOf returns the direction ("rx", "tx" or "rxtx") and queue an
// interrupt's name gives; "" and nil when it gives none (config,
// control and async vectors).
func QueueOf(name string) (string, *int) {
	for _, p := range irqNames {
		if m := p.re.FindStringSubmatch(name); m != nil {
			q, err := strconv.Atoi(m[1])
			if err == nil {
				return p.dir, &q
			}
		}
	}
	return "", nil
}

func readTrim(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readInt(p string) (int, error) { return strconv.Atoi(readTrim(p)) }

// ForLink returns the queue map of interface name in network namespace
// netns (an inode): read from /sys when netns is netprof's own namespace,
// else through InNetns with do, a function that runs its argument on a
// thread inside that namespace (nil: not read). nil when it cannot be
// read.
func ForLink(netns uint64, name string, do func(func() error) error) *trace.QueueMap {
	// The calling thread's namespace: /proc/self is the main thread's,
	// which a locked goroutine may have left elsewhere.
	var st unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
		return nil
	}
	var m *trace.QueueMap
	var err error
	switch {
	case st.Ino == netns:
		m, err = Host.Read(name)
	case do != nil:
		m, err = InNetns(do, name)
	default:
		return nil
	}
	if err != nil {
		return nil
	}
	return m
}

// InNetns reads the queue map of interface name in another network
// namespace: do runs a function on a thread switched into it (as
// testbed.Host.Do and the socket iterator's namespaces do). sysfs shows the
// interfaces of the namespace it was mounted from, so the read happens on
// a thread of its own with a private mount namespace, where a sysfs
// mounted from the target namespace covers /sys; that thread is never
// reused (it ends with the read), so no other goroutine sees the mount or
// the namespace. Interrupts (/proc) are the host's.
func InNetns(do func(func() error) error, name string) (*trace.QueueMap, error) {
	fd := -1
	if err := do(func() error {
		var err error
		fd, err = unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		return err
	}); err != nil {
		return nil, fmt.Errorf("queues of %s: its namespace: %w", name, err)
	}
	defer unix.Close(fd)
	var r struct {
		m   *trace.QueueMap
		err error
	}
	osthread.Disposable(func() {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			r.err = fmt.Errorf("queues of %s: unshare mount namespace: %w", name, err)
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			r.err = fmt.Errorf("queues of %s: private mounts: %w", name, err)
			return
		}
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			r.err = fmt.Errorf("queues of %s: setns: %w", name, err)
			return
		}
		if err := unix.Mount("sysfs", "/sys", "sysfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			r.err = fmt.Errorf("queues of %s: mount its namespace's sysfs: %w", name, err)
			return
		}
		r.m, r.err = Host.Read(name)
	})
	return r.m, r.err
}
