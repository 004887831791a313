package softnet

import (
	"os"
	"path/filepath"
	"testing"
)

// The NET_RX row's columns are numbered by the possible-CPU list (here
// non-contiguous), and a column count that does not match it is an error.
func TestReadNetRxFS(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("softirqs", "                    CPU0       CPU2       CPU3\n"+
		"          HI:          1          0          0\n"+
		"       TIMER:      12345       6789         10\n"+
		"      NET_TX:          5          6          7\n"+
		"      NET_RX:     987654          0   4294967296\n"+
		"       BLOCK:          0          0          0\n")
	got, err := ReadNetRxFS(dir, write("possible", "0,2-3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != 987654 || got[2] != 0 || got[3] != 4294967296 {
		t.Errorf("NET_RX runs %v", got)
	}
	if _, err := ReadNetRxFS(dir, write("possible2", "0-1\n")); err == nil {
		t.Error("3 columns read as 2 possible CPUs")
	}
}

// On this machine every possible CPU has a column.
func TestReadNetRx(t *testing.T) {
	got, err := ReadNetRx()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Error("no CPUs")
	}
}
