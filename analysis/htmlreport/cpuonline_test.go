package htmlreport

import (
	"regexp"
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/analysis/analysistest"
)

// A VM with 2 online of 240 possible CPUs, recorded with a row for every
// possible CPU: the page's CPU table and heat map have CPUs 0 and 1 only,
// the header counts online of possible, and the notes say once that 238
// CPUs were never online.
func TestNeverOnlineCPUs(t *testing.T) {
	s := analysistest.Scenario{Intervals: 6, PossibleCPUs: 240, NeverOnlineRows: true}
	ifaces, cpus, flows, traffic := s.Tables()
	r, err := analysis.BuildTables(s.Manifest(), analysis.Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := renderPage(t, r)
	_, table, ok := strings.Cut(out, "<caption>Per-CPU softirq")
	table, _, _ = strings.Cut(table, "</table>")
	if !ok {
		t.Fatal("no per-CPU table")
	}
	rows := regexp.MustCompile(`<tr><td>(\d+)</td>`).FindAllStringSubmatch(table, -1)
	if len(rows) != 2 || rows[0][1] != "0" || rows[1][1] != "1" {
		t.Errorf("%d CPU table rows, want 2 (CPUs 0 and 1)", len(rows))
	}
	if !strings.Contains(out, `"CPU 1"`) || strings.Contains(out, `"CPU 2"`) || strings.Contains(out, `"CPU 239"`) {
		t.Error("heat map CPUs: want CPU 0 and 1 only")
	}
	if !strings.Contains(out, "(kernel 6.18, 2 CPUs online of 240 possible)") {
		t.Error("header does not count 2 CPUs online of 240 possible")
	}
	if n := strings.Count(out, "238 possible CPUs were never online during the run: not shown"); n != 1 {
		t.Errorf("never-online note %d times, want 1", n)
	}
}
