package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/netprof/netprof/measure/blobrun"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/blob/blobtest"
)

// devKeyEnv is the development account's shared key in the environment.
var devKeyEnv = []string{"AZURE_STORAGE_ACCOUNT=" + blobtest.DevAccount, "AZURE_STORAGE_KEY=" + blobtest.DevKey}

// runBlobCmd runs the netprof binary with only env (plus PATH and HOME) as
// its environment, so no credentials or NETPROF_* settings leak in.
func runBlobCmd(t *testing.T, bin string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), o.String(), e.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, o.String(), e.String()
}

// oneLine checks stderr is exactly one line holding every want and none
// of the secrets, and that stdout is empty.
func oneLine(t *testing.T, name, stdout, stderr string, want []string, secrets ...string) {
	t.Helper()
	if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 || stderr == "" {
		t.Errorf("%s: stderr is %d lines: %q", name, n+1, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s: stderr %q lacks %q", name, stderr, w)
		}
	}
	for _, s := range append(secrets, blobtest.DevKey) {
		if strings.Contains(stdout+stderr, s) {
			t.Errorf("%s: output shows a secret", name)
		}
	}
	if stdout != "" {
		t.Errorf("%s: stdout %q, want nothing", name, stdout)
	}
}

func newBlobServer(t *testing.T) *blobtest.Server {
	t.Helper()
	s, err := blobtest.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Bad inputs: one clear line each, exit 2 for usage and missing
// credentials, 1 for what the service (or its absence) said; no run
// directory; no secret printed.
func TestBlobBadInputs(t *testing.T) {
	bin := buildBinary(t)
	s := newBlobServer(t)
	s.PutSynthetic("cont", "b", 1<<20)
	closed := newBlobServer(t)
	closedURL := closed.URL
	closed.Close()
	const sig = "c2VjcmV0c2lnbmF0dXJl"
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want []string
	}{
		{"malformed URL", devKeyEnv, []string{"blob", "pull", "ftp//nowhere"}, exitUsage, []string{"bad blob URL"}},
		{"no container", devKeyEnv, []string{"blob", "pull", s.URL}, exitUsage, []string{"no container"}},
		{"no URL", devKeyEnv, []string{"blob", "pull"}, exitUsage, []string{"at least one blob URL"}},
		{"flag after URL", devKeyEnv, []string{"blob", "pull", s.URL + "/cont/b", "--concurrency", "4"}, exitUsage, []string{"flags go before"}},
		{"push without data", devKeyEnv, []string{"blob", "push", s.URL + "/cont/b"}, exitUsage, []string{"--size", "--file"}},
		{"no credentials", nil, []string{"blob", "pull", s.URL + "/cont/b"}, exitUsage, []string{"no credentials", "AZURE_STORAGE_KEY"}},
		{"missing container", devKeyEnv, []string{"blob", "pull", s.URL + "/nope/b"}, exitFailed, []string{"HTTP 404 ContainerNotFound", s.URL + "/nope/b"}},
		{"missing blob, SAS", nil, []string{"blob", "pull", s.URL + "/cont/nope?sv=2024&sig=" + sig}, exitFailed,
			[]string{"HTTP 404 BlobNotFound", s.URL + "/cont/nope?REDACTED"}},
		{"unreachable", devKeyEnv, []string{"blob", "pull", "--max-retries", "1", "--retry-delay", "1ms", closedURL + "/cont/b"}, exitFailed,
			[]string{"no response", "connection refused", "after 2 attempts"}},
	} {
		code, stdout, stderr := runBlobCmd(t, bin, tc.env, tc.args...)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d (stderr %q)", tc.name, code, tc.code, stderr)
		}
		oneLine(t, tc.name, stdout, stderr, tc.want, sig)
	}
}

// trafficRows opens a run and returns its traffic rows.
func trafficRows(t *testing.T, dir string) (*trace.Run, []trace.TrafficRow) {
	t.Helper()
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := run.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	return run, rows
}

func sum(rows []trace.TrafficRow, col func(trace.TrafficRow) *uint64) uint64 {
	var n uint64
	for _, r := range rows {
		if v := col(r); v != nil {
			n += *v
		}
	}
	return n
}

// Every third GET is busy: the trace's http_503 total equals the server's
// count, every interval has its row, and the JSON summary agrees.
func TestBlobBusyRecorded(t *testing.T) {
	bin := buildBinary(t)
	s := newBlobServer(t)
	const size = 12<<20 + 99
	s.PutSynthetic("cont", "b", size)
	s.SetFault(blobtest.BusyEvery(3))
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runBlobCmd(t, bin, devKeyEnv, "blob", "pull", "--json", "--concurrency", "4",
		"--block-size", "1MiB", "--retry-delay", "1ms", "--max-retries", "5", "--interval", "20ms", "--out", out, s.URL+"/cont/b")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	run, rows := trafficRows(t, out)
	busy := uint64(s.Count(http.StatusServiceUnavailable, "ServerBusy"))
	got503 := sum(rows, func(r trace.TrafficRow) *uint64 { return r.HTTP503 })
	if busy == 0 || got503 != busy {
		t.Errorf("trace has %d 503 attempts, the server sent %d", got503, busy)
	}
	var bytes uint64
	for _, r := range rows {
		bytes += r.AppBytes
		if r.Role != trace.RoleReceiver || r.Requests == nil || r.RemoteAddr == "" {
			t.Errorf("row %+v lacks blob columns", r)
		}
	}
	if bytes != size || run.Manifest.Status != trace.StatusOK {
		t.Errorf("app_bytes total %d (want %d), status %q", bytes, size, run.Manifest.Status)
	}
	var js blobrun.JSONSummary
	if err := json.Unmarshal([]byte(stdout), &js); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, stdout)
	}
	if js.Total.HTTP503 != busy || js.Total.Retries != busy || js.Total.Codes503 == "" || js.Total.Rate503 <= 0 {
		t.Errorf("JSON totals %+v; want %d 503s and retries", js.Total, busy)
	}
}

// With every GET busy and retries exhausted the command exits 1 with one
// line naming the status, the blob and the kept trace, which is valid and
// counts every attempt.
func TestBlobRetriesExhausted(t *testing.T) {
	bin := buildBinary(t)
	s := newBlobServer(t)
	s.PutSynthetic("cont", "hot", 4<<20)
	s.SetFault(blobtest.AlwaysBusy())
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runBlobCmd(t, bin, devKeyEnv, "blob", "pull", "--concurrency", "1", "--block-size", "1MiB",
		"--max-retries", "2", "--retry-delay", "1ms", "--out", out, s.URL+"/cont/hot")
	if code != exitFailed {
		t.Fatalf("exit %d, want %d: %s", code, exitFailed, stderr)
	}
	oneLine(t, "retries exhausted", "", stderr, []string{"HTTP 503 ServerBusy", s.URL + "/cont/hot", "after 3 attempts", out})
	if !strings.Contains(stdout, "503") {
		t.Errorf("no summary on stdout:\n%s", stdout)
	}
	run, rows := trafficRows(t, out)
	if !strings.HasPrefix(run.Manifest.Status, "failed: ") || run.Manifest.End.IsZero() {
		t.Errorf("manifest status %q end %v", run.Manifest.Status, run.Manifest.End)
	}
	if got := sum(rows, func(r trace.TrafficRow) *uint64 { return r.HTTP503 }); got != 3 || s.Count(503, "ServerBusy") != 3 {
		t.Errorf("503s: trace %d, server %d; want 3", got, s.Count(503, "ServerBusy"))
	}
	if got := sum(rows, func(r trace.TrafficRow) *uint64 { return r.Requests }); got != 4 {
		t.Errorf("requests %d, want HEAD + 3 attempts", got)
	}
}

// Against Azurite: push a file to two containers at once (one of them
// missing: the push creates it, says so, and counts its existence
// check's 404 as an expected answer, not an HTTP error), pull it sharded
// over both and upload the trace, pull with a SAS URL (recorded without
// its signature), a wrong key (403), and a push bench that cleans up.
func TestBlobAzurite(t *testing.T) {
	az := blobtest.StartAzurite(t)
	bin := buildBinary(t)
	ctx := context.Background()
	key, err := container.NewSharedKeyCredential(az.Account, az.Key)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	co := &container.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: &http.Client{Transport: tr}}}
	cc := map[string]*container.Client{}
	for _, name := range []string{"data", "data2", "traces"} {
		if cc[name], err = container.NewClientWithSharedKeyCredential(az.Endpoint+"/"+name, key, co); err != nil {
			t.Fatal(err)
		}
		if name == "data" { // push creates data2, --upload traces
			if _, err := cc[name].Create(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src.bin")
	data := make([]byte, 9<<20+321)
	rand.Read(data)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	u1, u2 := az.Endpoint+"/data/src.bin", az.Endpoint+"/data2/src.bin"
	connEnv := []string{"AZURE_STORAGE_CONNECTION_STRING=" + az.ConnectionString()}
	if _, err := cc["data2"].GetProperties(ctx, nil); !bloberror.HasCode(err, bloberror.ContainerNotFound) {
		t.Fatalf("container data2 before the push: %v, want ContainerNotFound", err)
	}
	pushRun := filepath.Join(tmp, "push")
	code, stdout, stderr := runBlobCmd(t, bin, connEnv, "blob", "push", "--json", "--file", src, "--block-size", "2MiB",
		"--out", pushRun, u1, u2)
	if code != 0 {
		t.Fatalf("push: exit %d: %s", code, stderr)
	}
	if _, err := cc["data2"].GetProperties(ctx, nil); err != nil {
		t.Fatalf("container data2 after the push: %v", err)
	}
	var js blobrun.JSONSummary
	if err := json.Unmarshal([]byte(stdout), &js); err != nil {
		t.Fatalf("push summary is not JSON: %v\n%s", err, stdout)
	}
	// Per URL 5 Put Block + 1 Put Block List, and data2's create; the
	// HEADs' 404s (new blob in data, no container data2) are expected.
	if js.Total.Requests != 2*6+1 || js.Total.HTTP2xx != js.Total.Requests || js.Total.HTTPOther != 0 || js.ExpectedProbeAnswers != 2 {
		t.Errorf("push totals %+v, %d expected answers; want 13 requests, all 2xx, 0 other, 2 expected", js.Total, js.ExpectedProbeAnswers)
	}
	if len(js.CreatedContainers) != 1 || js.CreatedContainers[0] != az.Endpoint+"/data2" {
		t.Errorf("created_containers %q, want [%s/data2]", js.CreatedContainers, az.Endpoint)
	}
	pr, prows := trafficRows(t, pushRun)
	if n := sum(prows, func(r trace.TrafficRow) *uint64 { return r.HTTPOtherErrors }); n != 0 {
		t.Errorf("push trace counts %d other HTTP errors, want 0", n)
	}
	if cs, _ := pr.Manifest.Config["created_containers"].([]any); len(cs) != 1 || cs[0] != az.Endpoint+"/data2" {
		t.Errorf("manifest created_containers %v", pr.Manifest.Config["created_containers"])
	}
	code, stdout, stderr = runBlobCmd(t, bin, nil, "analyze", pushRun)
	if code != 0 {
		t.Fatalf("analyze of the push: exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "other HTTP errors") && !strings.Contains(stdout, "(0 other HTTP errors)") {
		t.Errorf("analyze reports HTTP errors for a clean push:\n%s", stdout)
	}

	out := filepath.Join(tmp, "out.bin")
	run := filepath.Join(tmp, "pull")
	code, stdout, stderr = runBlobCmd(t, bin, devKeyEnv, "blob", "pull", "--shard", "--sink", out, "--block-size", "3MiB",
		"--out", run, "--upload", az.Endpoint+"/traces/pre", u1, u2)
	if code != 0 {
		t.Fatalf("sharded pull: exit %d: %s", code, stderr)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, data) {
		t.Fatal("sharded pull differs from the pushed file")
	}
	if !strings.Contains(stdout, "uploaded") {
		t.Errorf("no upload line in:\n%s", stdout)
	}
	_, rows := trafficRows(t, run)
	perStream := map[int32]uint64{}
	for _, r := range rows {
		perStream[r.Stream] += *r.Requests
	}
	if perStream[0] != 1+2 || perStream[1] != 1+2 { // HEAD + 2 of the 4 ranges each
		t.Errorf("requests per replica %v, want 3 each", perStream)
	}
	local, _ := os.ReadDir(run)
	prefix := "pre/host="
	pager := cc["traces"].NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	var uploaded int
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Segment.BlobItems {
			uploaded++
			if !strings.Contains(*it.Name, "/run=pull/") {
				t.Errorf("uploaded blob %q is not under run=pull", *it.Name)
			}
		}
	}
	if uploaded != len(local) {
		t.Errorf("%d blobs uploaded, the run has %d files", uploaded, len(local))
	}

	sasURL, err := cc["data"].NewBlobClient("src.bin").GetSASURL(sas.BlobPermissions{Read: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	sig := sasURL[strings.Index(sasURL, "sig=")+4:]
	run = filepath.Join(tmp, "sas")
	code, stdout, stderr = runBlobCmd(t, bin, nil, "blob", "pull", "--out", run, sasURL)
	if code != 0 {
		t.Fatalf("SAS pull: exit %d: %s", code, stderr)
	}
	manifest, _ := os.ReadFile(filepath.Join(run, trace.ManifestFile))
	if strings.Contains(string(manifest)+stdout+stderr, sig) || !strings.Contains(string(manifest), "REDACTED") {
		t.Errorf("the SAS signature is in the manifest or the output")
	}

	wrong := []string{"AZURE_STORAGE_ACCOUNT=" + az.Account, "AZURE_STORAGE_KEY=" + strings.Repeat("QUJD", 22)}
	code, stdout, stderr = runBlobCmd(t, bin, wrong, "blob", "pull", u1)
	if code != exitFailed {
		t.Errorf("wrong key: exit %d, want %d", code, exitFailed)
	}
	oneLine(t, "wrong key", stdout, stderr, []string{"HTTP 403", u1}, strings.Repeat("QUJD", 22))

	code, _, stderr = runBlobCmd(t, bin, devKeyEnv, "blob", "bench", "--mode", "push", "--count", "2", "--size", "3MiB",
		"--block-size", "1MiB", "--out", filepath.Join(tmp, "bench"), az.Endpoint+"/benchc")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	bc, _ := container.NewClientWithSharedKeyCredential(az.Endpoint+"/benchc", key, co)
	if _, err := bc.GetProperties(ctx, nil); !bloberror.HasCode(err, bloberror.ContainerNotFound) {
		t.Errorf("bench left its container behind (%v)", err)
	}
}

// blob pull --json-stream: the interval lines' traffic rows carry every
// 503 the server sent and every byte of the blob (the server's counts and
// the blob's size), and the end line is the --json summary.
func TestBlobJSONStream(t *testing.T) {
	bin := buildBinary(t)
	s := newBlobServer(t)
	const size = 8<<20 + 7
	s.PutSynthetic("cont", "b", size)
	s.SetFault(blobtest.BusyEvery(3))
	code, stdout, stderr := runBlobCmd(t, bin, devKeyEnv, "blob", "pull", "--json-stream", "--concurrency", "4",
		"--block-size", "1MiB", "--retry-delay", "1ms", "--max-retries", "5", "--interval", "20ms",
		"--out", filepath.Join(t.TempDir(), "run"), s.URL+"/cont/b")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var got503, bytes float64
	for _, l := range lines[:len(lines)-1] {
		var e struct {
			Event string `json:"event"`
			Data  struct {
				Traffic []map[string]any `json:"traffic"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Event != "interval" {
			t.Fatalf("line %q: %v", l, err)
		}
		for _, r := range e.Data.Traffic {
			got503 += r["http_503"].(float64)
			bytes += r["app_bytes"].(float64)
		}
	}
	var end struct {
		Event string              `json:"event"`
		Data  blobrun.JSONSummary `json:"data"`
	}
	busy := float64(s.Count(http.StatusServiceUnavailable, "ServerBusy"))
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &end); err != nil || end.Event != "end" || float64(end.Data.Total.HTTP503) != busy {
		t.Errorf("end line %.300q (%v): want the summary with %.0f 503s", lines[len(lines)-1], err, busy)
	}
	if busy == 0 || got503 != busy || bytes != size {
		t.Errorf("streamed %.0f 503s and %.0f bytes; the server sent %.0f 503s, the blob has %d bytes", got503, bytes, busy, size)
	}
}
