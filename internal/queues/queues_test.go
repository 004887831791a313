package queues

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMaskToList(t *testing.T) {
	for mask, want := range map[string]string{
		"0": "", "00000000": "", "3": "0-1", "0000000c": "2-3", "00000001,00000000": "32",
		"ffffffff,ffffffff": "0-63", "80000000,00000005": "0,2,63",
		// 288 CPUs: nine 32-bit words.
		"0000ffff,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000001": "0,256-271",
	} {
		got, err := MaskToList(mask)
		if err != nil || got != want {
			t.Errorf("MaskToList(%q) = %q, %v; want %q", mask, got, err, want)
		}
	}
	if _, err := MaskToList("zz"); err == nil {
		t.Error("bad mask: no error")
	}
}

func TestQueueOf(t *testing.T) {
	for name, want := range map[string]string{
		"virtio2-input.0": "rx 0", "virtio2-output.3": "tx 3", "mlx5_comp7@pci:0000:00:05.0": "rxtx 7",
		"mana_q12@pci:7870:00:00.0": "rxtx 12", "eth0-TxRx-4": "rxtx 4", "ens5-rx-1": "rx 1",
		"virtio2-config": "", "mlx5_async0@pci:0000:00:05.0": "", "mana_hwc@pci:7870:00:00.0": "",
	} {
		d, q := QueueOf(name)
		got := ""
		if q != nil {
			got = fmt.Sprintf("%s %d", d, *q)
		}
		if got != want {
			t.Errorf("QueueOf(%q) = %q, want %q", name, got, want)
		}
	}
}

// writeFile creates p with content.
func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A generated mlx5 VF on a 288-CPU host: 64 channels (a comp vector per
// channel, plus an async one), RPS set on one queue, XPS on all, a
// /proc/interrupts of thousands of vectors with 288 count columns.
func TestReadGeneratedMlx5(t *testing.T) {
	root := t.TempDir()
	f := FS{Sys: filepath.Join(root, "sys"), Proc: filepath.Join(root, "proc")}
	const cpus, channels = 288, 64
	pci := filepath.Join(f.Sys, "devices", "pci0000:00", "0000:00:05.0")
	if err := os.MkdirAll(filepath.Join(f.Sys, "class", "net", "enP1s1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(pci, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(pci, filepath.Join(f.Sys, "class", "net", "enP1s1", "device")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(pci, "numa_node"), "1\n")
	words := strings.TrimSuffix(strings.Repeat("00000000,", 9), ",")
	for q := range channels {
		rps := words
		if q == 5 {
			rps = strings.TrimSuffix(strings.Repeat("00000000,", 8), ",") + ",000000f0" // CPUs 4-7
		}
		writeFile(t, filepath.Join(f.Sys, "class", "net", "enP1s1", "queues", fmt.Sprintf("rx-%d", q), "rps_cpus"), rps+"\n")
		writeFile(t, filepath.Join(f.Sys, "class", "net", "enP1s1", "queues", fmt.Sprintf("tx-%d", q), "xps_cpus"), words+"\n")
	}
	var hdr strings.Builder
	for c := range cpus {
		fmt.Fprintf(&hdr, " CPU%d", c)
	}
	var in strings.Builder
	in.WriteString(hdr.String() + "\n")
	counts := strings.Repeat(" 1", cpus)
	for irq := 1; irq < 3000; irq++ { // other devices' vectors
		fmt.Fprintf(&in, "%d:%s PCI-MSIX-0000:00:09.0 %d-edge nvme0q%d\n", irq, counts, irq, irq)
	}
	for v := 0; v <= channels; v++ {
		irq := 3000 + v
		name := fmt.Sprintf("mlx5_comp%d@pci:0000:00:05.0", v-1)
		if v == 0 {
			name = "mlx5_async0@pci:0000:00:05.0"
		}
		fmt.Fprintf(&in, "%d:%s PCI-MSIX-0000:00:05.0 %d-edge %s\n", irq, counts, v, name)
		writeFile(t, filepath.Join(pci, "msi_irqs", fmt.Sprint(irq)), "msix\n")
		writeFile(t, filepath.Join(f.Proc, "irq", fmt.Sprint(irq), "smp_affinity_list"), fmt.Sprintf("%d\n", v))
		writeFile(t, filepath.Join(f.Proc, "irq", fmt.Sprint(irq), "effective_affinity_list"), fmt.Sprintf("%d\n", v))
	}
	in.WriteString("NMI:" + counts + "   Non-maskable interrupts\n")
	writeFile(t, filepath.Join(f.Proc, "interrupts"), in.String())
	// ~1.8 MB: a reader stopping at 1 MiB loses the NIC's vectors.
	if in, err := f.interrupts(); err != nil || len(in) < 3000 {
		t.Fatalf("interrupts: %d, %v", len(in), err)
	}
	m, err := f.Read("enP1s1")
	if err != nil {
		t.Fatal(err)
	}
	if m.NumaNode == nil || *m.NumaNode != 1 || len(m.RxQueues) != channels || len(m.TxQueues) != channels || len(m.IRQs) != channels+1 {
		t.Fatalf("numa %v, %d rx %d tx queues, %d irqs", m.NumaNode, len(m.RxQueues), len(m.TxQueues), len(m.IRQs))
	}
	if m.RxQueues[5].CPUs != "4-7" || m.RxQueues[4].CPUs != "" || m.RxQueues[63].Index != 63 {
		t.Errorf("rx queues 4, 5, 63: %+v %+v %+v", m.RxQueues[4], m.RxQueues[5], m.RxQueues[63])
	}
	a, c := m.IRQs[0], m.IRQs[8]
	if a.IRQ != 3000 || a.Queue != nil || a.Name != "mlx5_async0@pci:0000:00:05.0" ||
		c.IRQ != 3008 || c.Queue == nil || *c.Queue != 7 || c.Direction != "rxtx" || c.Effective != "8" || c.Count != cpus {
		t.Errorf("irqs %+v %+v", a, c)
	}
}

// On this machine's own NICs (a virtio_net eth0 here): every interrupt of
// the device's msi_irqs is listed, named as the kernel names its handler
// directory /proc/irq/N/<name>, with the affinity the kernel gives, and
// the queues are those of /sys/class/net/IF/queues.
func TestReadHostNICs(t *testing.T) {
	ents, err := os.ReadDir("/sys/class/net")
	if err != nil {
		t.Skip(err)
	}
	seen := 0
	for _, e := range ents {
		m, err := Host.Read(e.Name())
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		qs, _ := filepath.Glob(filepath.Join("/sys/class/net", e.Name(), "queues", "rx-*"))
		if len(m.RxQueues) != len(qs) {
			t.Errorf("%s: %d rx queues, sysfs has %d", e.Name(), len(m.RxQueues), len(qs))
		}
		for _, irq := range m.IRQs {
			seen++
			dirs, _ := os.ReadDir(fmt.Sprintf("/proc/irq/%d", irq.IRQ))
			var names []string
			for _, d := range dirs {
				if d.IsDir() {
					names = append(names, d.Name())
				}
			}
			aff, _ := os.ReadFile(fmt.Sprintf("/proc/irq/%d/smp_affinity_list", irq.IRQ))
			if len(names) == 1 && names[0] != irq.Name || strings.TrimSpace(string(aff)) != irq.Affinity {
				t.Errorf("%s irq %d: name %q affinity %q; /proc/irq has %v, %q", e.Name(), irq.IRQ, irq.Name, irq.Affinity,
					names, strings.TrimSpace(string(aff)))
			}
			t.Logf("%s: irq %d %s (%s %v) affinity %s effective %s, %d so far", e.Name(), irq.IRQ, irq.Name,
				irq.Direction, irq.Queue, irq.Affinity, irq.Effective, irq.Count)
		}
	}
	if seen == 0 {
		t.Log("no interface with MSI interrupts on this machine: names and affinities not checked")
	}
}
