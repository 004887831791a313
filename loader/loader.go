// Package loader loads netprof's BPF probes program by program, attaches
// them, and reports which ran and why the others did not. It knows no
// specific probe: a probe package hands it a Spec (collection spec + the
// programs to attach) and reads the returned maps itself.
//
// One program failing to load or attach (missing tracepoint, verifier
// rejection) never stops the others: its Status records the reason.
package loader

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/netprof/netprof/trace"
)

// Program is one BPF program of a probe.
type Program struct {
	// Name is the program's name in the collection spec (np_<probe>_<hook>),
	// and in Status and Stats.
	Name string
	// Object, when set, is the program of the collection spec to load under
	// Name: a variant of the same hook for another kernel (e.g. a
	// tracepoint with fewer arguments), chosen by the probe.
	Object string
	// Hook is the tracepoint as "subsystem:event", e.g. "net:netif_receive_skb".
	Hook string
	// Detached programs are loaded but not attached: the probe's user
	// space runs them (BPF_PROG_TEST_RUN) through Loaded.Detached. They
	// have no Hook, no Status row and no run statistics; one that fails to
	// load is logged and left out (the probe must work without it).
	Detached bool
	// Iter programs are BPF iterators (SEC("iter/...")): attached as an
	// iterator link that user space runs by reading it (Loaded.Iter), not
	// on a tracepoint. Hook names the iterator, e.g. "iter:tcp".
	Iter bool
}

// Spec is what a probe package gives the loader.
type Spec struct {
	// Probe names the probe family, e.g. "netdev".
	Probe string
	// Collection is the probe's collection spec; the loader does not modify it.
	Collection *ebpf.CollectionSpec
	Programs   []Program
	// Skip names attached programs not to load, each with the reason
	// recorded in its Status row (e.g. "not selected (--probes)").
	Skip map[string]string
}

// Loaded is a probe whose maps exist and whose programs are attached where
// possible. Close it to detach and free everything.
type Loaded struct {
	Probe string
	// Maps are the probe's maps by name (shared by all its programs).
	Maps map[string]*ebpf.Map
	// Variables are the probe's global variables by name (set from user
	// space at run time; Linux >= 5.5).
	Variables map[string]*ebpf.Variable
	Status    []trace.Probe
	progs     []attached
	detached  map[string]*ebpf.Program
	maps      *ebpf.Collection
	closed    bool
}

type attached struct {
	Program
	prog *ebpf.Program
	link link.Link
}

// Load creates the probe's maps, then loads and attaches each program on
// its own. It returns an error only when the maps cannot be created (then
// nothing is left behind); a program that fails is recorded in Status with
// its reason (for a verifier error, the log's last lines) and skipped.
// tp_btf programs need Linux >= 5.5 with BTF; the check that the tracepoint
// exists uses the kernel's btf_trace_<event> type.
func Load(spec Spec, log *slog.Logger) (*Loaded, error) {
	if log == nil {
		log = slog.Default()
	}
	mapsOnly := spec.Collection.Copy()
	mapsOnly.Programs = map[string]*ebpf.ProgramSpec{}
	coll, err := ebpf.NewCollection(mapsOnly)
	if err != nil {
		return nil, fmt.Errorf("create %s maps: %w", spec.Probe, err)
	}
	l := &Loaded{Probe: spec.Probe, Maps: coll.Maps, Variables: coll.Variables, maps: coll,
		detached: map[string]*ebpf.Program{}}
	for _, p := range spec.Programs {
		if p.Detached {
			prog, err := loadProgram(spec.Collection, p, coll.Maps)
			if err != nil {
				log.Warn("probe program not loaded", "probe", spec.Probe, "program", p.Name, "reason", err.Error())
				continue
			}
			l.detached[p.Name] = prog
			continue
		}
		if why, ok := spec.Skip[p.Name]; ok {
			l.Status = append(l.Status, trace.Probe{Name: p.Name, Hook: p.Hook, Reason: why})
			continue
		}
		a, err := loadOne(spec.Collection, p, coll.Maps)
		st := trace.Probe{Name: p.Name, Hook: p.Hook, Attached: err == nil}
		if err != nil {
			st.Reason = err.Error()
			log.Warn("probe program not attached", "probe", spec.Probe, "program", p.Name, "hook", p.Hook, "reason", st.Reason)
		} else {
			l.progs = append(l.progs, a)
		}
		l.Status = append(l.Status, st)
	}
	return l, nil
}

// object returns the name of p's program in the collection spec.
func (p Program) object() string {
	if p.Object != "" {
		return p.Object
	}
	return p.Name
}

func loadOne(cs *ebpf.CollectionSpec, p Program, maps map[string]*ebpf.Map) (attached, error) {
	ps, ok := cs.Programs[p.object()]
	if !ok {
		return attached{}, fmt.Errorf("program %s: %w", p.object(), os.ErrNotExist)
	}
	if !p.Iter {
		if err := TracepointExists(ps.AttachTo); err != nil {
			return attached{}, err
		}
	}
	prog, err := loadProgram(cs, p, maps)
	if err != nil {
		return attached{}, err
	}
	if p.Iter {
		it, err := link.AttachIter(link.IterOptions{Program: prog})
		if err != nil {
			prog.Close()
			return attached{}, fmt.Errorf("attach iterator %s: %w", p.Name, err)
		}
		return attached{Program: p, prog: prog, link: it}, nil
	}
	lk, err := link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceRawTp})
	if err != nil {
		prog.Close()
		return attached{}, fmt.Errorf("attach %s to %s: %w", p.Name, p.Hook, err)
	}
	return attached{Program: p, prog: prog, link: lk}, nil
}

// loadProgram loads program p of cs alone, with the probe's maps.
func loadProgram(cs *ebpf.CollectionSpec, p Program, maps map[string]*ebpf.Map) (*ebpf.Program, error) {
	name := p.object()
	if _, ok := cs.Programs[name]; !ok {
		return nil, fmt.Errorf("program %s: %w", name, os.ErrNotExist)
	}
	one := cs.Copy()
	one.Programs = map[string]*ebpf.ProgramSpec{name: one.Programs[name]}
	coll, err := ebpf.NewCollectionWithOptions(one, ebpf.CollectionOptions{MapReplacements: maps})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("load %s: %-20v", name, ve)
		}
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	defer coll.Close()
	return coll.DetachProgram(name), nil
}

// TracepointExists reports whether the running kernel has a BTF tracepoint
// named event (e.g. "netif_receive_skb"). It returns an error wrapping
// os.ErrNotExist when the kernel BTF has no btf_trace_<event> type, and
// wrapping ebpf.ErrNotSupported when the kernel has no BTF at all.
func TracepointExists(event string) error {
	_, err := tracepointType(event)
	return err
}

// TracepointArgs returns how many arguments the kernel's BTF tracepoint
// event passes to a tp_btf program (the parameters of btf_trace_<event>
// after its leading context pointer), for probes that carry one program
// per signature (tcp_retransmit_skb gained an argument in recent kernels).
// Errors are those of TracepointExists, or one saying the type is not the
// expected pointer to a function prototype.
func TracepointArgs(event string) (int, error) {
	td, err := tracepointType(event)
	if err != nil {
		return 0, err
	}
	ptr, ok := td.Type.(*btf.Pointer)
	if !ok {
		return 0, fmt.Errorf("tracepoint %s: btf_trace_%s is %T, not a pointer", event, event, td.Type)
	}
	fp, ok := ptr.Target.(*btf.FuncProto)
	if !ok || len(fp.Params) == 0 {
		return 0, fmt.Errorf("tracepoint %s: btf_trace_%s does not point to a function prototype", event, event)
	}
	return len(fp.Params) - 1, nil
}

func tracepointType(event string) (*btf.Typedef, error) {
	kspec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("kernel btf: %w", err)
	}
	var td *btf.Typedef
	if err := kspec.TypeByName("btf_trace_"+event, &td); err != nil {
		if errors.Is(err, btf.ErrNotFound) {
			return nil, fmt.Errorf("tracepoint %s not in kernel BTF: %w", event, os.ErrNotExist)
		}
		return nil, fmt.Errorf("tracepoint %s: %w", event, err)
	}
	return td, nil
}

// ProgramStats are cumulative kernel statistics of one attached program.
type ProgramStats struct {
	Program
	RunCount        uint64
	RunTimeNs       uint64
	RecursionMisses uint64
}

// Stats returns the cumulative run count and run time (ns; both 0 unless
// BPF stats are enabled, see EnableStats) and recursion misses of every
// attached program, from bpf_prog_info (Linux >= 5.12 for recursion
// misses).
func (l *Loaded) Stats() ([]ProgramStats, error) {
	out := make([]ProgramStats, 0, len(l.progs))
	for _, a := range l.progs {
		s, err := a.prog.Stats()
		if err != nil {
			return nil, fmt.Errorf("stats of %s: %w", a.Name, err)
		}
		out = append(out, ProgramStats{
			Program:         a.Program,
			RunCount:        s.RunCount,
			RunTimeNs:       uint64(s.Runtime.Nanoseconds()),
			RecursionMisses: s.RecursionMisses,
		})
	}
	return out, nil
}

// Iter returns the attached iterator program named name (see Program.Iter),
// or nil if it is not part of the spec or was not attached. Each Open of
// it runs the program over the kernel objects it iterates.
func (l *Loaded) Iter(name string) *link.Iter {
	for _, a := range l.progs {
		if it, ok := a.link.(*link.Iter); ok && a.Name == name {
			return it
		}
	}
	return nil
}

// IsAttached reports whether the program named name is loaded and
// attached.
func (l *Loaded) IsAttached(name string) bool {
	for _, a := range l.progs {
		if a.Name == name {
			return true
		}
	}
	return false
}

// Detached returns the loaded detached program named name (see
// Program.Detached), or nil if it is not part of the spec or failed to load.
func (l *Loaded) Detached(name string) *ebpf.Program { return l.detached[name] }

// Attached reports how many of the probe's programs are attached.
func (l *Loaded) Attached() int { return len(l.progs) }

// Close detaches every program (links first), then frees programs and maps.
// It is idempotent.
func (l *Loaded) Close() error {
	if l == nil || l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	for _, a := range l.progs {
		errs = append(errs, a.link.Close())
	}
	for _, a := range l.progs {
		errs = append(errs, a.prog.Close())
	}
	for _, p := range l.detached {
		errs = append(errs, p.Close())
	}
	l.maps.Close()
	return errors.Join(errs...)
}
