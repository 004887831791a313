package blob_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	azb "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/netprof/netprof/traffic/blob"
	"github.com/netprof/netprof/traffic/blob/blobtest"
)

// Benchmark settings: the same for netprof and the SDK.
const (
	benchSize        = 512 << 20
	benchConcurrency = 8
	benchBlockSize   = 8 << 20
)

// cpuSeconds is this process's user + system CPU time (getrusage).
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// tally is one contender's totals and per-iteration rates.
type tally struct {
	bytes, secs, cpu float64
	rates            []float64 // bit/s of each iteration
}

func (t *tally) measure(b *testing.B, n int64, fn func() (int64, error)) {
	cpu0, t0 := cpuSeconds(b), time.Now()
	got, err := fn()
	if err != nil {
		b.Fatal(err)
	}
	if got != n {
		b.Fatalf("moved %d bytes, want %d", got, n)
	}
	secs := time.Since(t0).Seconds()
	t.secs += secs
	t.cpu += cpuSeconds(b) - cpu0
	t.bytes += float64(n)
	t.rates = append(t.rates, float64(n)*8/secs)
}

func (t tally) gbps() float64     { return t.bytes * 8 / t.secs / 1e9 }
func (t tally) cpuPerGB() float64 { return t.cpu / (t.bytes / 1e9) }

// medianRatio is the median over iterations of a's rate / b's rate (each
// pair measured back to back, so slow phases of the machine cancel).
func medianRatio(a, b tally) float64 {
	r := make([]float64, len(a.rates))
	for i := range r {
		r[i] = a.rates[i] / b.rates[i]
	}
	sort.Float64s(r)
	if len(r)%2 == 1 {
		return r[len(r)/2]
	}
	return (r[len(r)/2-1] + r[len(r)/2]) / 2
}

// BenchmarkPullVsSDK pulls one 512 MiB blob from a fast local server (its
// own process, synthetic content) with netprof and with the SDK's
// DownloadBuffer / DownloadFile, side by side in every iteration, at the
// same concurrency (8) and block size (8 MiB) and over the same HTTP
// transport settings. It reports goodput (decimal Gbit/s), CPU seconds
// per GB (getrusage, client process only) and the median per-round
// goodput ratios, and fails when netprof is slower than the SDK or its
// pull uses more than 1 CPU second per GB. Run it with enough rounds to
// smooth a shared 2-core machine: go test -run '^$' -bench PullVsSDK
// -benchtime 10x ./traffic/blob/.
func BenchmarkPullVsSDK(b *testing.B) {
	dir := benchDir(b)
	url := startChild(b, benchSize, dir)
	o := blob.DefaultOptions()
	o.Concurrency, o.BlockSize = benchConcurrency, benchBlockSize
	creds := blobtest.Azurite{Account: blobtest.DevAccount, Key: blobtest.DevKey}
	c := newClient(b, creds.Env(), o)
	key, err := azb.NewSharedKeyCredential(blobtest.DevAccount, blobtest.DevKey)
	if err != nil {
		b.Fatal(err)
	}
	tr := blob.NewTransport(benchConcurrency)
	b.Cleanup(tr.CloseIdleConnections)
	sdk, err := azb.NewClientWithSharedKeyCredential(url, key, &azb.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: &http.Client{Transport: tr}}})
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, benchSize)
	ctx := context.Background()
	netprofPull := func(sink string) func() (int64, error) {
		return func() (int64, error) {
			x, err := c.PreparePull(ctx, blob.PullConfig{Targets: []blob.Target{target(b, url)}, Sink: sink})
			if err != nil {
				return 0, err
			}
			defer x.Close()
			err = x.Run(ctx)
			return int64(sumStats(x).Bytes), err
		}
	}
	sdkFile := func() (int64, error) {
		f, err := os.Create(filepath.Join(dir, "sdk.bin"))
		if err != nil {
			return 0, err
		}
		defer f.Close()
		return sdk.DownloadFile(ctx, f, &azb.DownloadFileOptions{BlockSize: benchBlockSize, Concurrency: benchConcurrency})
	}
	sdkBuffer := func() (int64, error) {
		return sdk.DownloadBuffer(ctx, buf, &azb.DownloadBufferOptions{BlockSize: benchBlockSize, Concurrency: benchConcurrency})
	}
	var npDiscard, sdkBuf, npFile, sdkF tally
	b.SetBytes(4 * benchSize)
	b.ResetTimer()
	for i := range b.N {
		// Alternate who goes first, so neither always follows the other.
		pairs := [][2]func(){
			{func() { npDiscard.measure(b, benchSize, netprofPull(blob.SinkDiscard)) }, func() { sdkBuf.measure(b, benchSize, sdkBuffer) }},
			{func() { npFile.measure(b, benchSize, netprofPull(filepath.Join(dir, "netprof.bin"))) }, func() { sdkF.measure(b, benchSize, sdkFile) }},
		}
		for _, p := range pairs {
			p[i%2]()
			p[1-i%2]()
		}
	}
	b.StopTimer()
	b.ReportMetric(npDiscard.gbps(), "netprof-discard-Gbit/s")
	b.ReportMetric(sdkBuf.gbps(), "sdk-buffer-Gbit/s")
	b.ReportMetric(npFile.gbps(), "netprof-file-Gbit/s")
	b.ReportMetric(sdkF.gbps(), "sdk-file-Gbit/s")
	b.ReportMetric(medianRatio(npDiscard, sdkBuf), "ratio-discard/buffer")
	b.ReportMetric(medianRatio(npFile, sdkF), "ratio-file/file")
	b.ReportMetric(npDiscard.cpuPerGB(), "netprof-discard-cpu-s/GB")
	b.ReportMetric(sdkBuf.cpuPerGB(), "sdk-buffer-cpu-s/GB")
	b.ReportMetric(npFile.cpuPerGB(), "netprof-file-cpu-s/GB")
	b.ReportMetric(sdkF.cpuPerGB(), "sdk-file-cpu-s/GB")
	for _, r := range []struct {
		name    string
		np, sdk tally
	}{{"discard vs DownloadBuffer", npDiscard, sdkBuf}, {"file vs DownloadFile", npFile, sdkF}} {
		ratio := medianRatio(r.np, r.sdk)
		b.Logf("%s (%d rounds): netprof %.2f Gbit/s %.3f CPU s/GB; SDK %.2f Gbit/s %.3f CPU s/GB; median goodput ratio %.3f",
			r.name, len(r.np.rates), r.np.gbps(), r.np.cpuPerGB(), r.sdk.gbps(), r.sdk.cpuPerGB(), ratio)
		if ratio < 1.0 {
			b.Errorf("%s: median goodput ratio %.3f < 1.0", r.name, ratio)
		}
	}
	// CPU per GB of the pull itself (the discard sink): a file sink adds
	// the file system's page-cache cost, which both clients pay alike.
	if c := npDiscard.cpuPerGB(); c > 1.0 {
		b.Errorf("netprof pull used %.3f CPU s/GB > 1.0", c)
	}
}

// benchDir is where the server's file and the file sinks live: tmpfs
// (/dev/shm) when there is one, so the figures measure the clients rather
// than disk writeback.
func benchDir(b *testing.B) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "netprof-bench-"); err == nil {
			b.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return b.TempDir()
}
