package trace_test

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/netprof/netprof/trace"
)

// docs/trace.md describes every column of every table: the test lists the
// row types' Parquet columns and fails on any the table's line in the
// document does not name, so the document cannot drift from the schema.
func TestDocsNameEveryColumn(t *testing.T) {
	b, err := os.ReadFile("../docs/trace.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for file, row := range map[string]any{
		trace.IfacesFile: trace.IfaceRow{}, trace.CPUsFile: trace.CPURow{}, trace.FlowsFile: trace.FlowRow{},
		trace.TrafficFile: trace.TrafficRow{}, trace.ProbesFile: trace.ProbeRow{}, trace.SocketsFile: trace.SocketRow{},
		trace.NICsFile: trace.NICStatRow{}, trace.DropsFile: trace.DropRow{},
	} {
		prefix := "| `" + trace.TableDir(file) + "/` |"
		var line string
		for _, l := range strings.Split(doc, "\n") {
			if strings.HasPrefix(l, prefix) {
				line = l
			}
		}
		if line == "" {
			t.Errorf("docs/trace.md has no line starting %q", prefix)
			continue
		}
		var missing []string
		rt := reflect.TypeOf(row)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("parquet"), ",")
			if name == "" || name == "time" || name == "interval_ns" {
				continue // every table's, described once above the tables
			}
			if !regexp.MustCompile(`(^|[^a-z0-9_])`+regexp.QuoteMeta(name)+`($|[^a-z0-9_])`).MatchString(line) &&
				!mentionedAsPair(line, name) {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			t.Errorf("docs/trace.md's %s line does not name %v", trace.TableDir(file), missing)
		}
	}
}

// mentionedAsPair accepts the document's shorthand for an rx/tx pair:
// "rx/tx_bytes" names rx_bytes and tx_bytes, "bpf_rx/tx_bytes" the bpf_
// ones, "rtt_min/p50/p99/max_us" the four percentiles.
func mentionedAsPair(line, name string) bool {
	for _, a := range [][2]string{{"rx_", "tx_"}, {"tx_", "rx_"}} {
		if i := strings.Index(name, a[0]); i >= 0 {
			short := name[:i] + "rx/tx_" + name[i+len(a[0]):]
			if strings.Contains(line, short) {
				return true
			}
		}
	}
	for _, p := range []string{"min", "p50", "p99", "max"} {
		if name == "rtt_"+p+"_us" && strings.Contains(line, "rtt_min/p50/p99/max_us") {
			return true
		}
	}
	return false
}
