package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/internal/units"
)

// SweepConfig is every combination of stream count, block size and window
// to run, each as Base otherwise.
type SweepConfig struct {
	Base Config
	// Out is the directory holding one run directory per combination
	// ("" means ./runs/sweep-<UTC timestamp>).
	Out     string
	Streams []int
	// BlockSizes and Windows (bytes) default to Base's; a window of 0
	// leaves the kernel's buffer autotuning on.
	BlockSizes, Windows []int
}

// SweepRow is one combination's outcome; Config has its stream count,
// block size and window (SockOpts.Window).
type SweepRow struct {
	Config  Config
	Dir     string
	Status  string
	Err     error
	Report  *analysis.Report
	Summary *Summary
}

// combos returns the configurations of every combination, streams
// outermost.
func (sc SweepConfig) combos() []Config {
	blocks, windows := sc.BlockSizes, sc.Windows
	if len(blocks) == 0 {
		blocks = []int{sc.Base.BlockSize}
	}
	if len(windows) == 0 {
		windows = []int{sc.Base.SockOpts.Window}
	}
	out := sc.Out
	if out == "" {
		out = filepath.Join("runs", "sweep-"+time.Now().UTC().Format("20060102T150405Z"))
	}
	var cfgs []Config
	for _, n := range sc.Streams {
		for _, bs := range blocks {
			for _, win := range windows {
				c := sc.Base
				c.Streams, c.BlockSize, c.SockOpts.Window = n, bs, win
				name := fmt.Sprintf("streams%d-block%v", n, units.Size(bs))
				if win > 0 {
					name += fmt.Sprintf("-window%v", units.Size(win))
				}
				c.Out = filepath.Join(out, name)
				cfgs = append(cfgs, c)
			}
		}
	}
	return cfgs
}

// Validate checks every combination's configuration.
func (sc SweepConfig) Validate() error {
	if len(sc.Streams) == 0 {
		return errors.New("sweep: no stream counts")
	}
	for _, c := range sc.combos() {
		if err := c.Validate(); err != nil {
			return fmt.Errorf("sweep %s: %w", filepath.Base(c.Out), err)
		}
	}
	return nil
}

// Sweep runs every combination in turn (one Run each, each with its own
// run directory under Out), calling done after each. A failed run is
// recorded in its row and the sweep goes on; it stops when ctx is
// cancelled or a run fails for lack of privilege. It returns the rows and
// the joined errors of the runs that failed.
func Sweep(ctx context.Context, sc SweepConfig, toolVersion string, log *slog.Logger, done func(i, n int, row SweepRow)) ([]SweepRow, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	cfgs := sc.combos()
	var rows []SweepRow
	var errs []error
	for i, c := range cfgs {
		res, err := Run(ctx, c, toolVersion, log)
		row := SweepRow{Config: c, Dir: c.Out, Err: err}
		if res != nil {
			row.Status, row.Report, row.Summary = res.Status, res.Report, res.Summary
		}
		rows = append(rows, row)
		if done != nil {
			done(i, len(cfgs), row)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Base(c.Out), err))
		}
		if ctx.Err() != nil || errors.Is(err, ErrPrivilege) {
			break
		}
	}
	return rows, errors.Join(errs...)
}
