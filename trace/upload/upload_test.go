package upload_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/netprof/netprof/internal/leakcheck"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/trace/upload"
	"github.com/netprof/netprof/traffic/blob/blobtest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

var start = time.Date(2026, 1, 2, 23, 59, 30, 0, time.UTC)

func TestLayout(t *testing.T) {
	m := trace.Manifest{Host: "vm 1/x=y", Start: start.Add(time.Hour)} // next day in UTC
	if got := upload.Layout("traces/", m, "20260103T005930Z"); got != "traces/host=vm%201%2Fx%3Dy/date=2026-01-03/run=20260103T005930Z" {
		t.Errorf("Layout = %q", got)
	}
	if got := upload.Layout("", trace.Manifest{Start: start}, "r"); got != "host=unknown/date=2026-01-02/run=r" {
		t.Errorf("Layout without prefix = %q", got)
	}
}

// recordRun writes a closed run with a few blob traffic rows.
func recordRun(t *testing.T, status string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run-1")
	w, err := trace.Create(dir, trace.Manifest{Host: "vm", Start: start, IntervalNs: 1e9}, trace.WithPartSpan(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		n := uint64(i)
		err := w.WriteInterval(trace.Interval{Traffic: []trace.TrafficRow{{
			Time: start.Add(time.Duration(i) * time.Second), IntervalNs: 1e9, Role: trace.RoleReceiver,
			AppBytes: 1000 * n, Requests: &n, HTTP503: &n,
		}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if status != trace.StatusRecording {
		if err := w.Close(start.Add(3*time.Second), status); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Cleanup(func() { w.Close(time.Now(), trace.StatusOK) })
	}
	return dir
}

// containerClient returns a client for the emulator's container name with
// its own transport, closed at the end of the test.
func containerClient(t *testing.T, endpoint, name string) *container.Client {
	t.Helper()
	key, err := container.NewSharedKeyCredential(blobtest.DevAccount, blobtest.DevKey)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cc, err := container.NewClientWithSharedKeyCredential(endpoint+"/"+name, key, &container.ClientOptions{
		ClientOptions: azcore.ClientOptions{Transport: &http.Client{Transport: tr}, Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// Upload a run (the container does not exist yet), download every blob
// under its layout and compare with the local files byte for byte.
func TestUploadAndDownloadEqual(t *testing.T) {
	az := blobtest.StartAzurite(t)
	dir := recordRun(t, trace.StatusOK)
	cc := containerClient(t, az.Endpoint, "traces")
	ctx := context.Background()
	names, err := upload.Upload(ctx, cc, "netprof", dir)
	if err != nil {
		t.Fatal(err)
	}
	base := "netprof/host=vm/date=2026-01-02/run=run-1/"
	if names[len(names)-1] != base+trace.ManifestFile {
		t.Errorf("last blob %q, want the manifest", names[len(names)-1])
	}
	local := localFiles(t, dir)
	if len(names) != len(local) || len(local) != 1+len(trace.TableFiles) { // manifest + a part per table
		t.Errorf("uploaded %d files, the run has %d: %v", len(names), len(local), local)
	}
	if len(names) != len(local) {
		t.Errorf("uploaded %d files, the run has %d", len(names), len(local))
	}
	pager := cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &base})
	var listed int
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			listed++
			name := (*it.Name)[len(base):]
			want, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
			if err != nil {
				t.Fatalf("blob %s has no local file: %v", *it.Name, err)
			}
			resp, err := cc.NewBlobClient(*it.Name).DownloadStream(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: downloaded %d bytes differ from the local %d", name, len(got), len(want))
			}
		}
	}
	if listed != len(local) {
		t.Errorf("listed %d blobs under %s, want %d", listed, base, len(local))
	}
	// The downloaded traffic table reads back with the blob columns.
	dl := t.TempDir()
	os.Mkdir(filepath.Join(dl, trace.TableDir(trace.TrafficFile)), 0o755)
	for _, n := range []string{trace.ManifestFile, "traffic/part-000000.parquet"} {
		resp, err := cc.NewBlobClient(base+n).DownloadStream(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		os.WriteFile(filepath.Join(dl, filepath.FromSlash(n)), b, 0o644)
	}
	run, err := trace.Open(dl)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := run.Traffic()
	if err != nil || len(rows) != 3 || *rows[2].HTTP503 != 3 {
		t.Errorf("downloaded traffic rows: %d, %v", len(rows), err)
	}
}

// A run still recording is refused; an unreachable endpoint fails and
// leaves the local run as it was.
func TestUploadFailures(t *testing.T) {
	open := recordRun(t, trace.StatusRecording)
	cc := containerClient(t, "http://127.0.0.1:1/"+blobtest.DevAccount, "traces")
	if _, err := upload.Upload(context.Background(), cc, "", open); !errors.Is(err, upload.ErrNotClosed) {
		t.Errorf("recording run: %v, want ErrNotClosed", err)
	}
	dir := recordRun(t, trace.StatusOK)
	before, _ := os.ReadFile(filepath.Join(dir, "traffic", "part-000000.parquet"))
	if _, err := upload.Upload(context.Background(), cc, "", dir); err == nil {
		t.Error("upload to a closed port succeeded")
	}
	after, _ := os.ReadFile(filepath.Join(dir, "traffic", "part-000000.parquet"))
	if len(before) == 0 || !bytes.Equal(before, after) {
		t.Error("a failed upload changed the local trace")
	}
}

// localFiles lists the run's regular files, relative, slash-separated.
func localFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
