package blobrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/netprof/netprof/measure"
	"github.com/netprof/netprof/measure/host"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/trace/upload"
	"github.com/netprof/netprof/traffic/blob"
)

// Result is what a run produced.
type Result struct {
	// Dir is the run directory; Status its manifest status.
	Dir    string
	Status string
	// Summary is read back from the closed trace (nil if unreadable).
	Summary *Summary
	// Uploaded lists the blob names written by --upload.
	Uploaded []string
	// UploadErr is set when --upload failed (one line, no secret); the
	// local trace is intact.
	UploadErr error
}

// Run performs one blob command. Usage errors (bad flags or URLs, missing
// credentials; see IsUsage) and failures while preparing (the service
// refusing a URL: 403, 404, no answer) return before any run directory is
// created. Once recording started the trace is always closed (valid, with
// every completed interval) and Result is returned alongside any error.
// Every error message is one line and holds no secret. getenv supplies the
// credentials (os.Getenv in production).
func Run(ctx context.Context, cfg Config, toolVersion string, getenv func(string) string, log *slog.Logger) (*Result, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := cfg.Validate(); err != nil {
		return nil, usageError{err}
	}
	creds, err := blob.CredentialsFromEnv(cfg.Auth, getenv)
	if err != nil {
		return nil, usageError{err}
	}
	red := func(err error) error { return redacted(err, creds) }
	cfg.Blob.Log = log
	client, err := blob.NewClient(creds, cfg.Blob)
	if err != nil {
		return nil, usageError{err}
	}
	defer client.Close()
	up, err := prepareUpload(client, cfg.Upload)
	if err != nil {
		return nil, red(classify(err))
	}
	x, bench, err := prepare(ctx, client, cfg)
	if err != nil {
		return nil, red(classify(err))
	}
	defer x.Close()
	res, err := record(ctx, cfg, toolVersion, x, creds.Redact, log)
	if bench != nil {
		if cerr := bench.Cleanup(context.WithoutCancel(ctx)); cerr != nil {
			log.Warn("bench cleanup incomplete", "err", creds.Redact(cerr.Error()))
		}
	}
	if res == nil {
		return nil, red(err)
	}
	if res.Summary != nil && bench != nil && bench.Setup != nil {
		res.Summary.addSetup(bench.Setup.Stats())
	}
	// A failed run is uploaded too (its trace shows why); an interrupted
	// one is not.
	if up != nil && ctx.Err() == nil {
		res.Uploaded, res.UploadErr = up.run(ctx, res.Dir)
		if res.UploadErr != nil {
			res.UploadErr = fmt.Errorf("upload to %s failed (%s)", up.target.Display, creds.Redact(blob.Describe(res.UploadErr)))
		}
	}
	return res, red(err)
}

// prepare checks the URLs and plans the transfer.
func prepare(ctx context.Context, c *blob.Client, cfg Config) (*blob.Transfer, *blob.Bench, error) {
	if cfg.Command == CmdBench {
		ct, _ := blob.ParseContainer(cfg.URLs[0]) // checked by Validate
		b, err := c.PrepareBench(ctx, blob.BenchConfig{Container: ct, Mode: cfg.Mode, Count: cfg.Count, Size: cfg.Size})
		if err != nil {
			return nil, nil, err
		}
		return b.Measure, b, nil
	}
	var ts []blob.Target
	for _, u := range cfg.URLs {
		t, _ := blob.ParseTarget(u) // checked by Validate
		ts = append(ts, t)
	}
	if cfg.Command == CmdPush {
		x, err := c.PreparePush(ctx, blob.PushConfig{Targets: ts, File: cfg.File, Size: cfg.Size, DeleteAfter: cfg.DeleteAfter})
		return x, nil, err
	}
	x, err := c.PreparePull(ctx, blob.PullConfig{Targets: ts, Shard: cfg.Shard, Sink: cfg.Sink})
	return x, nil, err
}

// record runs x while recording it, with the host's interfaces and BPF
// probes (see measure/host). It returns a nil Result only when the run
// directory could not be created or the interface selection failed.
func record(ctx context.Context, cfg Config, toolVersion string, x *blob.Transfer, redact func(string) string, log *slog.Logger) (*Result, error) {
	dir := cfg.Out
	if dir == "" {
		dir = measure.DefaultDir(time.Now())
	}
	h, err := host.Open(cfg.Host, log)
	if err != nil {
		if errors.Is(err, host.ErrUsage) {
			return nil, usageError{err}
		}
		return nil, fmt.Errorf("host interfaces: %w", err)
	}
	defer func() {
		if cerr := h.Close(); cerr != nil {
			log.Error("host probes", "err", cerr)
		}
	}()
	m := manifest(cfg, toolVersion, x)
	m.Probes, m.Interfaces, m.Maps = h.Probes(), h.Interfaces(), h.Maps()
	status, err := measure.Trace(ctx, dir, m, redact, func(w *trace.Writer) error {
		return transfer(ctx, cfg, w, x, h.Samplers(), log)
	})
	if status == "" { // no trace
		return nil, err
	}
	res := &Result{Dir: dir, Status: status}
	var serr error
	res.Summary, serr = summarize(dir, x)
	if serr != nil {
		log.Warn("summary not available", "err", serr)
	}
	return res, err
}

// transfer runs x with the recorder sampling it (after the host samplers)
// every interval.
func transfer(ctx context.Context, cfg Config, w *trace.Writer, x *blob.Transfer, host []measure.Sampler, log *slog.Logger) error {
	role := trace.RoleReceiver
	if x.Kind() == blob.KindPush {
		role = trace.RoleSender
	}
	rec := &measure.Recorder{Samplers: append(host, &sampler{x: x, role: role}),
		Period: cfg.Interval, Writer: w, Log: log}
	if cfg.Metrics != nil || cfg.Stream != nil {
		rec.OnInterval = func(end time.Time, iv *trace.Interval) {
			if cfg.Metrics != nil {
				cfg.Metrics.Observe(iv)
			}
			if cfg.Stream != nil {
				cfg.Stream.Interval(end, iv)
			}
		}
	}
	return measure.RecordWhile(ctx, rec, w, nil, x.Run)
}

func manifest(cfg Config, toolVersion string, x *blob.Transfer) trace.Manifest {
	mc := cfg.manifestConfig(x.Targets())
	mc["total_bytes"], mc["blocks"] = x.TotalBytes(), x.Blocks()
	if x.Kind() == blob.KindPush {
		// What the existence checks found; their expected 404s (and a
		// racing create's 409) are here, not in traffic.parquet.
		prep, stats := x.Prepared(), x.Stats()
		for i, t := range mc["targets"].([]map[string]any) {
			t["blob_existed"], t["container_created"] = prep[i].BlobExisted, prep[i].CreatedContainer
			t["expected_probe_answers"] = stats[i].Expected
		}
		mc["created_containers"] = append([]string{}, x.CreatedContainers()...)
	}
	return measure.NewManifest(toolVersion, blob.RedactArgs(cfg.Argv), cfg.Interval, mc)
}

// uploader copies a closed run directory to a container.
type uploader struct {
	c      *blob.Client
	target blob.Target
}

// prepareUpload checks the --upload URL and its credentials (without
// contacting the service) so a bad one fails before the run.
func prepareUpload(c *blob.Client, raw string) (*uploader, error) {
	if raw == "" {
		return nil, nil
	}
	t, err := blob.ParseContainer(raw)
	if err != nil {
		return nil, err
	}
	if _, err := c.ContainerClient(t, nil); err != nil {
		return nil, fmt.Errorf("--upload: %w", err)
	}
	return &uploader{c: c, target: t}, nil
}

func (u *uploader) run(ctx context.Context, dir string) ([]string, error) {
	cc, err := u.c.ContainerClient(u.target, nil)
	if err != nil {
		return nil, err
	}
	return upload.Upload(ctx, cc, u.target.Blob, dir)
}

// classify marks missing credentials as usage errors.
func classify(err error) error {
	if errors.Is(err, blob.ErrNoCredentials) || errors.Is(err, blob.ErrBadURL) {
		return usageError{err}
	}
	return err
}

// redactedErr is err with its message passed through Credentials.Redact;
// errors.Is/As still see err.
type redactedErr struct {
	err error
	msg string
}

func (e redactedErr) Error() string { return e.msg }
func (e redactedErr) Unwrap() error { return e.err }

func redacted(err error, c *blob.Credentials) error {
	if err == nil {
		return nil
	}
	return redactedErr{err: err, msg: c.Redact(err.Error())}
}
