// Package blobrun runs `netprof blob pull|push|bench`: it prepares the
// transfer (checking every URL), records it every interval into a run
// directory (trace format v1: one traffic row per blob target with the
// HTTP attempt counts), summarises it and optionally uploads the run
// directory to Blob storage.
package blobrun

import (
	"errors"
	"fmt"
	"time"

	"github.com/netprof/netprof/measure/host"
	"github.com/netprof/netprof/measure/jsonstream"
	"github.com/netprof/netprof/measure/metrics"
	"github.com/netprof/netprof/traffic/blob"
)

// Commands.
const (
	CmdPull  = "pull"
	CmdPush  = "push"
	CmdBench = "bench"
)

// Config is what a blob command was asked to do. Start from
// DefaultConfig.
type Config struct {
	// Command is CmdPull, CmdPush or CmdBench.
	Command string
	// URLs are blob URLs (pull, push) or one container URL (bench).
	URLs []string
	// Blob holds concurrency, block size and the retry settings.
	Blob blob.Options
	Auth blob.AuthMode

	// Pull: the sink (blob.SinkDiscard, a file or a directory) and
	// whether the URLs are replicas of one blob to shard over.
	Sink  string
	Shard bool
	// Push: a source file, or Size bytes of synthetic data; bench: the
	// size of each test blob.
	File        string
	Size        int64
	DeleteAfter bool
	// Bench: what to measure (blob.KindPull or blob.KindPush) and how
	// many test blobs.
	Mode  string
	Count int

	// Interval is the sampling period.
	Interval time.Duration
	// Out is the run directory; "" means ./runs/<UTC timestamp>.
	Out string
	// Upload is a container URL (optionally with a prefix) the run
	// directory is copied to after the run; "" for none.
	Upload string
	// Argv is recorded in the manifest, URLs redacted.
	Argv []string
	// Host selects the interfaces whose netlink counters are recorded and
	// whether the BPF probes run (they need root; without it the manifest
	// says why they are off).
	Host host.Config
	// Metrics, if set, receives every interval (--prometheus).
	Metrics *metrics.Exporter
	// Stream, if set, gets every interval as a JSON line (--json-stream).
	Stream *jsonstream.Stream
}

// DefaultConfig returns the defaults shared by the blob commands.
func DefaultConfig(cmd string) Config {
	return Config{Command: cmd, Blob: blob.DefaultOptions(), Auth: blob.AuthAuto,
		Sink: blob.SinkDiscard, Mode: blob.KindPull, Count: 4, Size: 0, Interval: time.Second}
}

// usageError marks errors the user must fix (bad flags, URLs, missing
// credentials): `netprof` exits 2 for them.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// IsUsage reports whether err is a usage error (exit code 2).
func IsUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// Validate returns an error listing every invalid field.
func (c Config) Validate() error {
	var errs []error
	if err := c.Blob.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch c.Command {
	case CmdPull, CmdPush:
		if len(c.URLs) == 0 {
			errs = append(errs, fmt.Errorf("%s needs at least one blob URL", c.Command))
		}
		for _, u := range c.URLs {
			if _, err := blob.ParseTarget(u); err != nil {
				errs = append(errs, err)
			}
		}
	case CmdBench:
		if len(c.URLs) != 1 {
			errs = append(errs, fmt.Errorf("bench needs exactly one container URL (got %d)", len(c.URLs)))
		} else if _, err := blob.ParseContainer(c.URLs[0]); err != nil {
			errs = append(errs, err)
		}
		if c.Mode != blob.KindPull && c.Mode != blob.KindPush {
			errs = append(errs, fmt.Errorf("invalid bench mode %q: want pull or push", c.Mode))
		}
		if c.Count < 1 || c.Count > 10000 {
			errs = append(errs, fmt.Errorf("invalid bench count %d: must be 1..10000", c.Count))
		}
	default:
		errs = append(errs, fmt.Errorf("unknown blob command %q", c.Command))
	}
	if c.Shard && (c.Command != CmdPull || len(c.URLs) < 2) {
		errs = append(errs, errors.New("--shard needs a pull of two or more replica URLs"))
	}
	if c.Command == CmdPush && (c.File == "") == (c.Size <= 0) {
		errs = append(errs, errors.New("push needs exactly one of --size (synthetic data) or --file"))
	}
	if c.Command == CmdBench && c.Size <= 0 {
		errs = append(errs, errors.New("bench needs a positive --size per blob"))
	}
	if c.Interval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("invalid interval %v: must be at least 10ms", c.Interval))
	}
	if c.Upload != "" {
		if _, err := blob.ParseContainer(c.Upload); err != nil {
			errs = append(errs, fmt.Errorf("--upload: %w", err))
		}
	}
	return errors.Join(errs...)
}

// manifestConfig is the configuration as recorded in manifest.json: URLs
// without their SAS, no secret.
func (c Config) manifestConfig(targets []blob.Target) map[string]any {
	urls := make([]map[string]any, len(targets))
	for i, t := range targets {
		urls[i] = map[string]any{"stream": i, "url": t.Display, "host": t.Host,
			"account": t.Account, "container": t.Container, "blob": t.Blob, "sas": t.SAS}
	}
	m := map[string]any{
		"command":            "blob " + c.Command,
		"targets":            urls,
		"concurrency":        c.Blob.Concurrency,
		"block_size":         c.Blob.BlockSize,
		"max_retries":        c.Blob.MaxRetries,
		"retry_delay_ns":     c.Blob.RetryDelay.Nanoseconds(),
		"max_retry_delay_ns": c.Blob.MaxRetryDelay.Nanoseconds(),
		"try_timeout_ns":     c.Blob.TryTimeout.Nanoseconds(),
		"auth":               string(c.Auth),
		"interval_ns":        c.Interval.Nanoseconds(),
	}
	switch c.Command {
	case CmdPull:
		m["sink"], m["shard"] = c.Sink, c.Shard
	case CmdPush:
		m["file"], m["size"], m["delete_after"] = c.File, c.Size, c.DeleteAfter
	case CmdBench:
		m["mode"], m["count"], m["size"] = c.Mode, c.Count, c.Size
		m["container"] = blob.Redact(c.URLs[0])
	}
	if c.Upload != "" {
		m["upload"] = blob.Redact(c.Upload)
	}
	return m
}
