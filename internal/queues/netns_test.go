package queues

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// A test bed's veth ends live in namespaces of their own, which this
// process's /sys does not show. InNetns reads them: the queue count the
// bed created them with, and the RPS and XPS masks written through `ip
// netns exec` (iproute2's own sysfs of that namespace) — while this
// process's /sys still shows its own namespace, before and after, from
// several goroutines at once.
func TestInNetnsReadsBedQueues(t *testing.T) {
	const queues = 4
	bed := testbedtest.New(t, testbed.Options{Queues: queues})
	a, b := bed.A(), bed.B()
	write := func(h *testbed.Host, file, mask string) {
		t.Helper()
		p := fmt.Sprintf("/sys/class/net/%s/queues/%s", h.Link, file)
		if out, err := h.Exec(context.Background(), "sh", "-c", "echo "+mask+" > "+p).CombinedOutput(); err != nil {
			t.Fatalf("%s: write %s: %v: %s", h.Name, p, err, out)
		}
	}
	write(b, "rx-2/rps_cpus", "2") // CPU 1
	write(b, "rx-3/rps_cpus", "3") // CPUs 0-1
	write(a, "tx-1/xps_cpus", "1") // CPU 0

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			h := []*testbed.Host{a, b}[i%2]
			m, err := InNetns(h.Do, h.Link)
			if err != nil {
				errs <- err
				return
			}
			if len(m.RxQueues) != queues || len(m.TxQueues) != queues || len(m.IRQs) != 0 {
				errs <- fmt.Errorf("%s: %d rx, %d tx queues, %d IRQs; want %d, %d, 0 (a veth)", h.Link,
					len(m.RxQueues), len(m.TxQueues), len(m.IRQs), queues, queues)
				return
			}
			var got []string
			for _, q := range m.RxQueues {
				got = append(got, fmt.Sprintf("rx-%d:%s", q.Index, q.CPUs))
			}
			for _, q := range m.TxQueues {
				got = append(got, fmt.Sprintf("tx-%d:%s", q.Index, q.CPUs))
			}
			want := map[*testbed.Host]string{
				// XPS: the kernel may set no default mask for a veth;
				// only the queue written is asserted there.
				a: "rx-0: rx-1: rx-2: rx-3:",
				b: "rx-0: rx-1: rx-2:1 rx-3:0-1",
			}[h]
			if s := strings.Join(got[:queues], " "); s != want {
				errs <- fmt.Errorf("%s: %s, want %s", h.Link, s, want)
			}
			if h == a && m.TxQueues[1].CPUs != "0" {
				errs <- fmt.Errorf("%s: tx-1 xps %q, want 0 (%s)", h.Link, m.TxQueues[1].CPUs, strings.Join(got, " "))
			}
			t.Logf("%s: %s", h.Link, strings.Join(got, " "))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// The reads' mounts and namespaces stayed on their own (ended)
	// threads: none was the main thread, which the runtime would have kept
	// (and /proc/self shows): many more reads, then the main thread's
	// namespaces are still this thread's.
	var wg2 sync.WaitGroup
	for i := range 64 {
		wg2.Go(func() {
			h := []*testbed.Host{a, b}[i%2]
			if _, err := InNetns(h.Do, h.Link); err != nil {
				t.Error(err)
			}
		})
	}
	wg2.Wait()
	for _, ns := range []string{"net", "mnt"} {
		self, err1 := os.Readlink("/proc/self/ns/" + ns)
		thread, err2 := os.Readlink("/proc/thread-self/ns/" + ns)
		if err1 != nil || err2 != nil || self != thread {
			t.Errorf("main thread's %s namespace %s (%v), this thread's %s (%v): a read left the main thread elsewhere", ns, self, err1, thread, err2)
		}
	}
	for _, h := range []*testbed.Host{a, b} {
		if _, err := os.Stat("/sys/class/net/" + h.Link); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("this process's /sys shows %s after the reads (%v)", h.Link, err)
		}
	}
	if _, err := os.Stat("/sys/class/net/lo"); err != nil {
		t.Errorf("this process's /sys lost its lo: %v", err)
	}
	// ForLink picks the way: its own namespace directly, another through do,
	// none without.
	if m := ForLink(b.NetnsInode(), b.Link, b.Do); m == nil || len(m.RxQueues) != queues {
		t.Errorf("ForLink with do: %+v", m)
	}
	if m := ForLink(b.NetnsInode(), b.Link, nil); m != nil {
		t.Errorf("ForLink of another namespace without do: %+v, want nil", m)
	}
}
