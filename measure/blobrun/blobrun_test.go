package blobrun

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/leakcheck"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/blob"
	"github.com/netprof/netprof/traffic/blob/blobtest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func devEnv(k string) string {
	return map[string]string{blob.EnvAccount: blobtest.DevAccount, blob.EnvKey: blobtest.DevKey}[k]
}

func TestValidate(t *testing.T) {
	ok := DefaultConfig(CmdPull)
	ok.URLs = []string{"https://a.blob.core.windows.net/cont/b"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for name, mod := range map[string]func(*Config){
		"no URL":           func(c *Config) { c.URLs = nil },
		"bad URL":          func(c *Config) { c.URLs = []string{"ftp://x/y/z"} },
		"shard of one":     func(c *Config) { c.Shard = true },
		"zero concurrency": func(c *Config) { c.Blob.Concurrency = 0 },
		"huge block":       func(c *Config) { c.Blob.BlockSize = 5 << 30 },
		"short interval":   func(c *Config) { c.Interval = time.Millisecond },
		"bad upload":       func(c *Config) { c.Upload = "nope" },
		"push no source":   func(c *Config) { c.Command = CmdPush },
		"push both":        func(c *Config) { c.Command, c.File, c.Size = CmdPush, "f", 5 },
		"bench two URLs":   func(c *Config) { c.Command, c.Size, c.URLs = CmdBench, 5, append(c.URLs, c.URLs[0]) },
		"bench bad mode":   func(c *Config) { c.Command, c.Size, c.Mode = CmdBench, 5, "sideways" },
	} {
		c := ok
		c.URLs = append([]string(nil), ok.URLs...)
		mod(&c)
		if c.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A pull with busy answers, run in-process: the trace's rows add up to the
// transfer's counters (the first interval holds the preflight HEAD), the
// summary says so, and nothing was uploaded.
func TestRunPull(t *testing.T) {
	s, err := blobtest.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.PutSynthetic("cont", "b", 6<<20+1)
	s.SetFault(blobtest.BusyEvery(5))
	cfg := DefaultConfig(CmdPull)
	cfg.URLs = []string{s.URL + "/cont/b"}
	cfg.Blob.Concurrency, cfg.Blob.BlockSize, cfg.Blob.RetryDelay = 3, 512<<10, time.Millisecond
	cfg.Interval, cfg.Out = 10*time.Millisecond, filepath.Join(t.TempDir(), "run")
	cfg.Argv = []string{"netprof", "blob", "pull", s.URL + "/cont/b?sig=SECRET"}
	var logs bytes.Buffer
	res, err := Run(context.Background(), cfg, "test", devEnv, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(run.Manifest.Argv, " "), "SECRET") {
		t.Errorf("argv in the manifest holds the SAS: %q", run.Manifest.Argv)
	}
	rows, err := run.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	var req, busy uint64
	for _, r := range rows {
		req += *r.Requests
		busy += *r.HTTP503
	}
	sm := res.Summary
	if busy != uint64(s.Count(503, "ServerBusy")) || busy == 0 || sm.Total.HTTP503 != busy || sm.Total.Requests != req {
		t.Errorf("503: trace %d, server %d, summary %d; requests: trace %d, summary %d",
			busy, s.Count(503, "ServerBusy"), sm.Total.HTTP503, req, sm.Total.Requests)
	}
	// HEAD + 13 ranged GETs + the 503s.
	if want := 1 + 13 + busy; req != want {
		t.Errorf("requests %d, want %d", req, want)
	}
	var text bytes.Buffer
	if err := sm.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + text.String())
	for _, want := range []string{"503 rate", "ServerBusy=", "per interval", "steady state"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, text.String())
		}
	}
	if res.Uploaded != nil || res.UploadErr != nil {
		t.Errorf("upload without --upload: %v %v", res.Uploaded, res.UploadErr)
	}
}

// Usage errors and preparation failures leave no run directory.
func TestRunErrorsBeforeTrace(t *testing.T) {
	s, err := blobtest.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := filepath.Join(t.TempDir(), "run")
	cfg := DefaultConfig(CmdPull)
	cfg.Out = out
	cfg.URLs = []string{s.URL + "/cont/missing"}
	res, err := Run(context.Background(), cfg, "test", devEnv, nil)
	if res != nil || err == nil || IsUsage(err) || !strings.Contains(err.Error(), "ContainerNotFound") {
		t.Errorf("missing container: %v, %v", res, err)
	}
	res, err = Run(context.Background(), cfg, "test", func(string) string { return "" }, nil)
	if res != nil || !IsUsage(err) || !errors.Is(err, blob.ErrNoCredentials) {
		t.Errorf("no credentials: %v, %v", res, err)
	}
	if _, err := trace.Open(out); err == nil {
		t.Error("a run directory was created")
	}
}

// A push to a container that does not exist, run in-process: the
// container is created and the run says so (summary, JSON, manifest); the
// existence check's 404 is an expected answer, so the trace counts 0
// other HTTP errors, and the pushed bytes are on the server.
func TestRunPushNewContainer(t *testing.T) {
	s, err := blobtest.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cfg := DefaultConfig(CmdPush)
	cfg.URLs = []string{s.URL + "/nptest/test1.bin"}
	cfg.Size = 3<<20 + 3
	cfg.Blob.Concurrency, cfg.Blob.BlockSize = 2, 1<<20
	cfg.Interval, cfg.Out = 10*time.Millisecond, filepath.Join(t.TempDir(), "run")
	cfg.Host.NoBPF = true
	var logs bytes.Buffer
	res, err := Run(context.Background(), cfg, "test", devEnv, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Blob("nptest", "test1.bin"); !ok || int64(len(got)) != cfg.Size {
		t.Fatalf("pushed blob: %d bytes (stored %v), want %d", len(got), ok, cfg.Size)
	}
	run, err := trace.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := run.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	var req, other, ok2xx uint64
	for _, r := range rows {
		req, other, ok2xx = req+*r.Requests, other+*r.HTTPOtherErrors, ok2xx+*r.HTTP2xx
	}
	// Create Container + 4 Put Block + Put Block List, all 2xx.
	if req != 6 || ok2xx != 6 || other != 0 {
		t.Errorf("trace: %d requests, %d 2xx, %d other; want 6, 6, 0", req, ok2xx, other)
	}
	sm := res.Summary
	if sm.Total.HTTPOther != 0 || sm.ExpectedAnswers != 1 || len(sm.CreatedContainers) != 1 || sm.CreatedContainers[0] != s.URL+"/nptest" {
		t.Errorf("summary: other %d, expected %d, created %q", sm.Total.HTTPOther, sm.ExpectedAnswers, sm.CreatedContainers)
	}
	var text bytes.Buffer
	if err := sm.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + text.String())
	for _, want := range []string{"created container " + s.URL + "/nptest (it did not exist)", "404 (new blob or container)", ": 1, expected, not errors"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, text.String())
		}
	}
	if js := sm.JSON(); js.ExpectedProbeAnswers != 1 || len(js.CreatedContainers) != 1 || js.Total.HTTPOther != 0 {
		t.Errorf("JSON: %+v", js)
	}
	cc, _ := run.Manifest.Config["created_containers"].([]any)
	tg, _ := run.Manifest.Config["targets"].([]any)
	t0, _ := tg[0].(map[string]any)
	if len(cc) != 1 || cc[0] != s.URL+"/nptest" || t0["container_created"] != true || t0["expected_probe_answers"] != 1.0 {
		t.Errorf("manifest: created_containers %v, target %v", cc, t0)
	}
	if !strings.Contains(logs.String(), "created the container") {
		t.Errorf("no log line about the created container:\n%s", logs.String())
	}
}
