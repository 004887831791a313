package probeset

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"", nil, ""},
		{"all", nil, ""},
		{"deep", nil, ""},
		{"tcp", []string{"tcp"}, ""},
		{" netdev , tcp,netdev", []string{"netdev", "tcp"}, ""},
		{"default", []string{"sockstate", "tcpsock"}, ""},
		{"tcp,bogus", nil, `unknown probe group "bogus": want default, deep (= all), or some of netdev,napi,softirq,tcp,sockstate,tcpsock,drops`},
	} {
		got, err := Parse(tc.in)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("Parse(%q) error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Parse(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	// Every program of every probe belongs to exactly one group.
	seen := map[string]bool{}
	for _, g := range Groups {
		for _, p := range g.Programs {
			if seen[p] {
				t.Errorf("program %s in two groups", p)
			}
			seen[p] = true
		}
	}
	if len(seen) != 11 {
		t.Errorf("%d programs in the groups, want the 11 attached programs", len(seen))
	}
	// Every registered probe is a group --probes knows, once.
	reg := map[string]bool{}
	for _, p := range Probes {
		if reg[p.Group] || !slices.ContainsFunc(Groups, func(g Group) bool { return g.Name == p.Group }) {
			t.Errorf("probe %q registered twice or not a group", p.Group)
		}
		reg[p.Group] = true
	}
}

// A run with no probe at all records one "all" entry whose hook names
// every group (the report's note printed "probe all () not attached").
func TestOff(t *testing.T) {
	ps := Off("--no-bpf: probes off")
	if len(ps) != 1 || ps[0].Name != "all" || ps[0].Attached || ps[0].Reason != "--no-bpf: probes off" {
		t.Fatalf("Off = %+v", ps)
	}
	for _, g := range Groups {
		if !strings.Contains(ps[0].Hook, g.Name) {
			t.Errorf("hook %q lacks group %s", ps[0].Hook, g.Name)
		}
	}
}
