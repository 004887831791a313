package probeset

import (
	"testing"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/probes/softirq"
	"github.com/netprof/netprof/probes/tcpstats"
)

func requireBPF(t *testing.T) {
	t.Helper()
	kerneltest.RequireRoot(t)
	if err := loader.Check(nil); err != nil {
		kerneltest.Skip(t, err.Error())
	}
}

// A selected probe attaches; a probe whose group is not selected is not
// loaded and each of its programs gets the NotSelected row; a probe whose
// programs all fail to attach is closed again, with their reasons; Close
// is idempotent (leakcheck finds any file descriptor left open).
func TestSetLoad(t *testing.T) {
	requireBPF(t)
	s := New([]string{"softirq"}, false, nil)
	defer s.Close()

	si, err := softirq.Spec()
	if l := s.Load("softirq", si, err); l == nil || l.Attached() != 2 {
		t.Fatalf("softirq: %v, status %+v", l, s.Status)
	}
	tc, err := tcpstats.Spec(tcpstats.Options{})
	if l := s.Load("tcp", tc, err); l != nil {
		t.Fatal("tcp loaded although not selected")
	}
	broken, err := softirq.Spec()
	if err != nil {
		t.Fatal(err)
	}
	broken.Collection = broken.Collection.Copy()
	for _, p := range broken.Programs {
		broken.Collection.Programs[p.Name].AttachTo = "netprof_no_such_tracepoint"
	}
	if l := s.Load("softirq-broken", broken, nil); l != nil {
		t.Fatal("a probe with no attached program was kept")
	}
	if len(s.Loaded) != 1 {
		t.Fatalf("%d probes loaded, want 1", len(s.Loaded))
	}
	want := map[string]string{bpf.TcpProgNpTcpProbe: NotSelected, bpf.TcpProgNpTcpRetrans: NotSelected}
	got := map[string]int{}
	for _, st := range s.Status {
		got[st.Name]++
		if w, ok := want[st.Name]; ok && (st.Attached || st.Reason != w) {
			t.Errorf("%s: attached %v reason %q, want %q", st.Name, st.Attached, st.Reason, w)
		}
	}
	// Each softirq program appears twice: attached, then failed in the broken copy.
	if got[bpf.SoftirqProgNpSiEntry] != 2 || got[bpf.TcpProgNpTcpProbe] != 1 {
		t.Errorf("status rows %v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}
