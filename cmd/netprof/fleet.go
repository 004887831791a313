package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/trace/upload"
	"github.com/netprof/netprof/traffic/blob"
)

// fleetRun is one run directory found under a fleet source.
type fleetRun struct {
	dir  string // where it is on disk
	name string // what the table calls it
}

// fleetAnalyze finds every run under the sources (run directories, trees
// of them such as upload's host=/date=/run= layout, or a container URL
// [/prefix] of such a tree, downloaded to a temporary directory first),
// analyses them in parallel and prints one row per run.
func fleetAnalyze(ctx context.Context, w io.Writer, cfg analyzeConfig, getenv func(string) string) error {
	var runs []fleetRun
	var tmp string // downloads, removed at the end
	defer func() {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
	}()
	for _, src := range cfg.Runs {
		var found []fleetRun
		var err error
		if strings.HasPrefix(src, "https://") || strings.HasPrefix(src, "http://") {
			if tmp == "" {
				if tmp, err = os.MkdirTemp("", "netprof-fleet-"); err != nil {
					return err
				}
			}
			found, err = downloadFleet(ctx, src, tmp, cfg.Auth, getenv)
		} else {
			found, err = findRuns(src)
		}
		if err != nil {
			return err
		}
		runs = append(runs, found...)
	}
	if len(runs) == 0 {
		return usageError{fmt.Errorf("no run directory (a directory with %s) under %s", trace.ManifestFile, strings.Join(cfg.Runs, ", "))}
	}
	rows := make([]analysis.FleetRow, len(runs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(runs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				rows[i] = fleetRow(runs[i], cfg)
			}
		}()
	}
	for i := range runs {
		next <- i
	}
	close(next)
	wg.Wait()
	f := analysis.NewFleet(rows, cfg.Price, cfg.Options.Units)
	if cfg.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(f.JSON())
	}
	return f.WriteText(w)
}

// fleetRow analyses one run; a run that cannot be read is a row saying why.
func fleetRow(r fleetRun, cfg analyzeConfig) analysis.FleetRow {
	run, err := trace.Open(r.dir)
	if err == nil {
		var rep *analysis.Report
		if rep, err = analysis.Analyze(run, cfg.Options); err == nil {
			return analysis.FleetRowOf(r.name, rep, cfg.Price)
		}
	}
	return analysis.FleetRow{Run: r.name, Err: err.Error(), Verdicts: []string{}}
}

// findRuns returns src if it is a run directory, else every run directory
// below it (hidden directories skipped), named relative to src.
func findRuns(src string) ([]fleetRun, error) {
	if _, err := os.Stat(filepath.Join(src, trace.ManifestFile)); err == nil {
		return []fleetRun{{dir: src, name: src}}, nil
	}
	var runs []fleetRun
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != src && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(p, trace.ManifestFile)); err == nil {
			rel, _ := filepath.Rel(src, p)
			runs = append(runs, fleetRun{dir: p, name: rel})
			return filepath.SkipDir // a run's table directories hold no runs
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, usageError{fmt.Errorf("--fleet: %w", err)}
	}
	if err != nil {
		return nil, fmt.Errorf("--fleet %s: %w", src, err)
	}
	return runs, nil
}

// downloadFleet copies the runs under a container URL [/prefix] into a new
// directory under tmp and lists them, named by their URL.
func downloadFleet(ctx context.Context, raw, tmp string, auth blob.AuthMode, getenv func(string) string) ([]fleetRun, error) {
	t, err := blob.ParseContainer(raw)
	if err != nil {
		return nil, usageError{fmt.Errorf("--fleet: %w", err)}
	}
	creds, err := blob.CredentialsFromEnv(auth, getenv)
	if err != nil {
		return nil, usageError{err}
	}
	client, err := blob.NewClient(creds, blob.DefaultOptions())
	if err != nil {
		return nil, usageError{err}
	}
	defer client.Close()
	cc, err := client.ContainerClient(t, nil)
	if err != nil {
		return nil, usageError{fmt.Errorf("--fleet: %w", err)}
	}
	dst, err := os.MkdirTemp(tmp, "src-")
	if err != nil {
		return nil, err
	}
	dirs, err := upload.Download(ctx, cc, t.Blob, dst)
	if err != nil {
		return nil, fmt.Errorf("--fleet %s: %s", t.Display, creds.Redact(err.Error()))
	}
	runs := make([]fleetRun, len(dirs))
	for i, d := range dirs {
		rel, _ := filepath.Rel(dst, d)
		runs[i] = fleetRun{dir: d, name: strings.TrimSuffix(t.Display, "/") + "/" + filepath.ToSlash(rel)}
	}
	return runs, nil
}
