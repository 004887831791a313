package trace_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/netprof/netprof/trace"
)

// TestScanReturnsUTCForLocalTimestamps guards the reader's UTC contract:
// reading a table whose time column is TIMESTAMP(isAdjustedToUTC=false),
// which parquet-go would decode in time.Local, into a row type (tagged utc)
// must still give time.UTC, with the same instant.
func TestScanReturnsUTCForLocalTimestamps(t *testing.T) {
	saved := time.Local
	time.Local = time.FixedZone("UTC-5", -5*3600)
	defer func() { time.Local = saved }()

	dir, _ := recordRun(t, 1)
	type localRow struct {
		Time       time.Time `parquet:"time,timestamp(microsecond)"`
		IntervalNs int64     `parquet:"interval_ns"`
	}
	f, err := os.Create(filepath.Join(dir, trace.ProbesFile))
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[localRow](f)
	if _, err := w.Write([]localRow{{Time: base, IntervalNs: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := run.Probes()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Time.Location() != time.UTC || !rows[0].Time.Equal(us(base)) {
		t.Fatalf("rows %+v, want one row at %v in UTC", rows, us(base))
	}
}
