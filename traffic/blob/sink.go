package blob

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// openSinks opens the pull's output files: one per target (a directory
// sink, or a file sink for a single target), one for a sharded pull, or
// nil entries for SinkDiscard. Each file is created (or truncated) at its
// blob's size; blocks are written in place with WriteAt.
func openSinks(cfg PullConfig, sizes []int64) ([]*os.File, error) {
	n := len(cfg.Targets)
	if cfg.Shard {
		n = 1
	}
	outs := make([]*os.File, n)
	if cfg.Sink == "" || cfg.Sink == SinkDiscard {
		return outs, nil
	}
	var paths []string
	if isDir(cfg.Sink) {
		for i := range n {
			t := cfg.Targets[i]
			rel := filepath.Join(t.Container, filepath.FromSlash(t.Blob))
			if !filepath.IsLocal(rel) {
				return nil, fmt.Errorf("sink: blob name %q would be written outside %s", t.Blob, cfg.Sink)
			}
			paths = append(paths, filepath.Join(cfg.Sink, rel))
		}
	} else {
		if n > 1 {
			return nil, fmt.Errorf("sink %s is a file but %d blobs are pulled: give a directory (an existing one, or a path ending in /)", cfg.Sink, n)
		}
		paths = []string{cfg.Sink}
	}
	for i, p := range paths {
		f, err := createSized(p, sizes[i])
		if err != nil {
			closeFiles(outs)
			return nil, err
		}
		outs[i] = f
	}
	return outs, nil
}

func isDir(p string) bool {
	if strings.HasSuffix(p, "/") || strings.HasSuffix(p, string(filepath.Separator)) {
		return true
	}
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// createSized creates p (and its parent directories) with the given size.
func createSized(p string, size int64) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, fmt.Errorf("sink: %w", err)
	}
	return f, nil
}

func closeFiles(fs []*os.File) error {
	var errs []error
	for _, f := range fs {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}
