package probeset

import (
	"slices"
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
		{"tcp", []string{"tcp"}, ""},
		{" netdev , tcp,netdev", []string{"netdev", "tcp"}, ""},
		{"tcp,bogus", nil, `unknown probe group "bogus": want all, or some of netdev,napi,softirq,tcp,sockstate`},
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
	if len(seen) != 8 {
		t.Errorf("%d programs in the groups, want the 8 attached programs", len(seen))
	}
}
