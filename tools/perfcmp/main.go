// Command perfcmp compares netprof's traffic generator with iperf3 (the
// Debian package) on one local veth pair: for each stream count it runs
// both tools alternately, the same direction (namespace A sends to B) and
// duration, several repetitions, and prints per stream count the medians
// and the median of the per-pair ratios netprof / iperf3 of receiver
// goodput and of CPU seconds per GB, then every run. `make bench-traffic`
// runs it; it needs root and is not part of the tests.
//
// Goodput is the receiver's payload bytes over the receiver's time: for
// iperf3 its -J figure end.sum_received (bytes, seconds); for netprof the
// Receiver's byte count over the time from Sender.Run until Serve returned.
// CPU is user + system time of both ends: for iperf3 the kernel's rusage of
// the client and the server process as wait4 returns it when each exits
// (every thread, the whole process life; iperf3's own
// cpu_utilization_percent is kept in the raw runs as a cross-check); for
// netprof, whose ends share this process, getrusage(RUSAGE_SELF) deltas
// around the transfer. GB are decimal (10^9 bytes).
//
// Every process it starts (iperf3 client and server, via `ip netns exec`)
// runs inside the test bed's namespaces and is killed by its PID if it
// does not exit; the namespaces are removed on every exit path.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/testbed"
)

// options are the command's flags.
type options struct {
	streams  []int
	reps     int
	duration time.Duration
	block    int
	iperf3   string
	extra    []string // extra iperf3 client arguments
	jsonOut  string
}

func main() {
	opt, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opt, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "perfcmp:", err)
		stop()
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("perfcmp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	streams := fs.String("streams", "1,4,16", "comma-separated stream counts")
	reps := fs.Int("reps", 3, "repetitions (netprof/iperf3 pairs) per stream count")
	dur := fs.Duration("duration", 5*time.Second, "duration of each transfer")
	block := fs.Int("block", traffic.DefaultBlockSize, "netprof block size in bytes (write size; receive size)")
	ip := fs.String("iperf3", "iperf3", "iperf3 binary")
	extra := fs.String("iperf3-args", "", "extra iperf3 client arguments, space-separated (e.g. -Z)")
	js := fs.String("json", "", "also write every run and the summary to this JSON file")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	opt := options{reps: *reps, duration: *dur, block: *block, iperf3: *ip, extra: strings.Fields(*extra), jsonOut: *js}
	var errs []error
	for f := range strings.SplitSeq(*streams, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 128 {
			errs = append(errs, fmt.Errorf("invalid stream count %q: want 1..128", f))
			continue
		}
		opt.streams = append(opt.streams, n)
	}
	if opt.reps < 1 {
		errs = append(errs, fmt.Errorf("invalid -reps %d: want >= 1", opt.reps))
	}
	if opt.duration < time.Second || opt.duration > time.Minute || opt.duration%time.Second != 0 {
		errs = append(errs, fmt.Errorf("invalid -duration %v: want whole seconds, 1s..1m (iperf3 -t takes seconds)", opt.duration))
	}
	if err := (traffic.Config{Streams: 1, Duration: time.Second, BlockSize: opt.block}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("-block: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(stderr, err)
		return options{}, err
	}
	return opt, nil
}

// run builds the test bed, runs every pair and prints the report.
func run(ctx context.Context, opt options, out io.Writer) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (network namespaces)")
	}
	bin, err := exec.LookPath(opt.iperf3)
	if err != nil {
		return fmt.Errorf("iperf3 not found (apt-get install iperf3): %w", err)
	}
	opt.iperf3 = bin
	bed, err := testbed.New(ctx, testbed.Options{})
	if err != nil {
		return fmt.Errorf("test bed: %w", err)
	}
	defer func() {
		if err := bed.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "perfcmp: test bed not fully removed:", err)
		}
	}()
	ver, launch := iperf3Version(ctx, bed, bin)
	start := time.Now()
	load0 := loadAvg()
	fmt.Fprintf(out, "netprof generator vs %s, veth %s (%s) -> %s (%s), %v per run, %d pairs per stream count, netprof block %d B\n",
		ver, bed.A().Name, bed.A().Addr, bed.B().Name, bed.B().Addr, opt.duration, opt.reps, opt.block)
	if len(opt.extra) > 0 {
		fmt.Fprintf(out, "extra iperf3 client arguments: %s\n", strings.Join(opt.extra, " "))
	}
	fmt.Fprintf(out, "load average at start: %s\n", load0)
	var runs []result
	for _, n := range opt.streams {
		for rep := range opt.reps {
			// Alternate which tool goes first, so drift in the machine's
			// load does not always favour the same one.
			order := []string{toolNetprof, toolIperf3}
			if rep%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			for _, tool := range order {
				var r result
				var err error
				if tool == toolNetprof {
					r, err = runNetprof(ctx, bed, n, opt.duration, opt.block)
				} else {
					r, err = runIperf3(ctx, bed, bin, n, opt.duration, opt.extra, launch)
				}
				if ctx.Err() != nil {
					return fmt.Errorf("interrupted during %s, %d streams, repetition %d: %w", tool, n, rep+1, ctx.Err())
				}
				if err != nil {
					return fmt.Errorf("%s, %d streams, repetition %d: %w", tool, n, rep+1, err)
				}
				r.Rep = rep + 1
				runs = append(runs, r)
				fmt.Fprintf(os.Stderr, "  %-7s %2d streams rep %d: %6.2f Gbit/s, %.3f CPU s/GB\n", tool, n, rep+1, r.Gbps(), r.CPUPerGB())
			}
		}
	}
	sum := summarize(runs, opt.streams)
	fmt.Fprintln(out)
	printSummary(out, sum)
	fmt.Fprintln(out, verdict(sum))
	fmt.Fprintln(out)
	printRuns(out, runs)
	fmt.Fprintf(out, "\nload average at end: %s; total %v; iperf3 launch overhead (ip netns exec, per process, subtracted): %.4f CPU s\n",
		loadAvg(), time.Since(start).Round(time.Second), launch.Seconds())
	if opt.jsonOut != "" {
		data, err := json.MarshalIndent(map[string]any{"summary": sum, "runs": runs, "iperf3_version": ver}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(opt.jsonOut, data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", opt.jsonOut, err)
		}
	}
	return nil
}

// loadAvg returns the first three fields of /proc/loadavg.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}
