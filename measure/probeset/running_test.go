package probeset

import (
	"slices"
	"testing"

	"github.com/netprof/netprof/measure"
)

func names(ss []measure.Sampler) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name())
	}
	return out
}

// Start attaches the selected probes only; Samplers lists them in Probes
// order (tcpsock before sockstate, softirq between them), leaves out the
// groups asked, and ends with the program statistics; Has and Sampler
// agree; Status has a row per program of every probe, selected or not.
func TestRunningSamplers(t *testing.T) {
	requireBPF(t)
	r := Start(Options{Selected: []string{"sockstate", "softirq", "tcpsock"}}, nil)
	defer r.Close()
	if got, want := names(r.Samplers()), []string{"tcpiter", "softirq", "sockstate", "bpf-stats"}; !slices.Equal(got, want) {
		t.Errorf("Samplers() = %v, want %v", got, want)
	}
	if got, want := names(r.Samplers("softirq")), []string{"tcpiter", "sockstate", "bpf-stats"}; !slices.Equal(got, want) {
		t.Errorf(`Samplers("softirq") = %v, want %v`, got, want)
	}
	for _, g := range []string{"netdev", "tcp", "drops"} {
		if r.Has(g) || r.Sampler(g) != nil {
			t.Errorf("group %s not selected but has a sampler", g)
		}
	}
	if !r.Has("softirq") || r.Sampler("softirq").Name() != "softirq" {
		t.Errorf("softirq selected: Has %v, Sampler %v", r.Has("softirq"), r.Sampler("softirq"))
	}
	rows := map[string]int{}
	for _, p := range r.Status {
		if p.Reason == NotSelected {
			rows["not selected"]++
		} else if p.Attached {
			rows["attached"]++
		}
	}
	// Programs: netdev 3, tcp 2, drops 1 not selected; tcpsock 2, softirq
	// 2, sockstate 1 attached.
	if rows["not selected"] != 6 || rows["attached"] != 5 {
		t.Errorf("status rows %v (%+v): want 6 not selected, 5 attached", rows, r.Status)
	}
	if len(r.Maps) == 0 {
		t.Error("no maps described")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// Disabled runs nothing and says why in its one status row.
func TestRunningDisabled(t *testing.T) {
	r := Disabled("--no-bpf: probes off")
	if len(r.Samplers()) != 0 || r.Has("tcpsock") || len(r.Maps) != 0 {
		t.Errorf("disabled: samplers %v, maps %v", names(r.Samplers()), r.Maps)
	}
	if len(r.Status) != 1 || r.Status[0].Attached || r.Status[0].Reason != "--no-bpf: probes off" {
		t.Errorf("status %+v", r.Status)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}
