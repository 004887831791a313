package analysis

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/netprof/netprof/trace"
)

// source feeds a table's rows to fn in batches; a missing table returns an
// error wrapping os.ErrNotExist. fn may keep the batch, except a batch of
// *flowBatch (columnFlows reuses it).
type source[T any] func(fn func([]T) error) error

// sliceSource feeds rows as one batch.
func sliceSource[T any](rows []T) source[T] {
	return func(fn func([]T) error) error {
		if len(rows) == 0 {
			return nil
		}
		return fn(rows)
	}
}

// sources are the tables a report reads.
type sources struct {
	ifaces  source[trace.IfaceRow]
	cpus    source[trace.CPURow]
	flows   source[*flowBatch]
	traffic source[trace.TrafficRow]
	blob    source[BlobRow]
	probes  source[trace.ProbeRow]
	drops   source[trace.DropRow]
	nics    source[trace.NICStatRow]
}

// Tables are a run's rows in memory, for BuildTables.
type Tables struct {
	Ifaces  []trace.IfaceRow
	CPUs    []trace.CPURow
	Flows   []trace.FlowRow
	Traffic []trace.TrafficRow
	// Blob are traffic rows with the blob columns (requests, http_503,
	// http_500, http_other_errors); empty for TCP-only runs.
	Blob []BlobRow
	// Probes are probes.parquet rows: the map rows ("map:netdev",
	// "map:tcp") and the programs' run time (ProbeCost).
	Probes []trace.ProbeRow
	// Drops are the drops table's rows (skb:kfree_skb by reason).
	Drops []trace.DropRow
	// NICs are the nics table's rows (ethtool -S).
	NICs []trace.NICStatRow
}

// Build computes a Report from a run's manifest and table rows with default
// Options. It does no I/O. It returns an error only when the manifest's
// schema_version is newer than this package understands; missing tables
// give nil figures with a reason, never zeros.
func Build(m trace.Manifest, ifaces []trace.IfaceRow, cpus []trace.CPURow,
	flows []trace.FlowRow, traffic []trace.TrafficRow) (*Report, error) {
	return BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
}

// BuildTables is Build with blob rows and Options.
func BuildTables(m trace.Manifest, t Tables, opts Options) (*Report, error) {
	return build(m, sources{
		ifaces: sliceSource(t.Ifaces), cpus: sliceSource(t.CPUs), flows: rowFlows(sliceSource(t.Flows)),
		traffic: sliceSource(t.Traffic), blob: sliceSource(t.Blob), probes: sliceSource(t.Probes),
		drops: sliceSource(t.Drops), nics: sliceSource(t.NICs),
	}, opts)
}

// builder carries the accumulators of one analysis.
type builder struct {
	drops     map[string]*dropAcc
	nicLoss   nicLossAcc
	queueHeat queueHeatAcc
	r         *Report
	opts      Options
	th        Thresholds
	anom      anomalies
	rows      bounds

	traffic trafficAcc
	rx, tx  ifaceSide
	cpu     cpuAcc
	flows   flowAcc
	blob    blobAcc
	maps    mapAcc
	cost    probeCostAcc
}

// build runs the phases: traffic and ifaces first (they define the
// windows), then cpus, flows and blob rows against those windows.
func build(m trace.Manifest, src sources, opts Options) (*Report, error) {
	if m.SchemaVersion > trace.SchemaVersion {
		return nil, fmt.Errorf("build report: schema_version %d is newer than supported %d",
			m.SchemaVersion, trace.SchemaVersion)
	}
	b := newBuilder(m, opts)
	ph, err := scanPhases(src.traffic)
	if err != nil {
		return nil, err
	}
	if ph != nil {
		b.r.Phases, src = ph, ph.filter(src)
	}
	if err := b.scanPhase1(src); err != nil {
		return nil, err
	}
	b.windows()
	if err := b.scanPhase2(src); err != nil {
		return nil, err
	}
	b.finish()
	return b.r, nil
}

func newBuilder(m trace.Manifest, opts Options) *builder {
	r := &Report{Manifest: m, Units: opts.Units, BusiestCPU: -1, reasons: map[string]string{}}
	b := &builder{r: r, opts: opts, th: opts.Thresholds.withManifest(m.Config).withDefaults()}
	b.traffic.steering.peerStreams = peerReceivers(m.Config)
	b.setRated()
	b.anom.limitBps, b.anom.limitSrc = MaxPlausibleBps, "10 Tbit/s, no rated speed known"
	if r.RatedBps > 0 {
		b.anom.limitBps = PlausibleFactor * r.RatedBps
		b.anom.limitSrc = fmt.Sprintf("%d x the rated %s", PlausibleFactor, fmtRate(Decimal, r.RatedBps))
	}
	return b
}

// scanPhase1 reads traffic and ifaces.
func (b *builder) scanPhase1(src sources) error {
	if err := scanTable(b, trace.TrafficFile, src.traffic, b.traffic.add(b)); err != nil {
		return err
	}
	return b.scanIfaces(src.ifaces)
}

// scanPhase2 reads cpus, flows, blob rows and the probes table's map rows.
func (b *builder) scanPhase2(src sources) error {
	b.cpu.init(b)
	if err := scanTable(b, trace.CPUsFile, src.cpus, b.cpu.add(b)); err != nil {
		return err
	}
	b.flows.init(b)
	if err := scanTable(b, trace.FlowsFile, src.flows, b.flows.add(b)); err != nil {
		return err
	}
	if err := scanTable(b, "traffic.parquet (blob columns)", src.blob, b.blob.add(b)); err != nil {
		return err
	}
	maps := b.maps.add(b)
	err := scanTable(b, trace.ProbesFile, src.probes, func(rows []trace.ProbeRow) error {
		for i := range rows {
			b.cost.row(b, &rows[i])
		}
		return maps(rows)
	})
	if err != nil {
		return err
	}
	if err := scanTable(b, trace.DropsFile, src.drops, b.addDrops); err != nil {
		return err
	}
	return scanTable(b, trace.NICsFile, src.nics, b.addNICs)
}

// scanTable feeds src to fn; a missing table reads as empty with a note.
func scanTable[T any](b *builder, name string, src source[T], fn func([]T) error) error {
	if src == nil {
		return nil
	}
	err := src(fn)
	if errors.Is(err, os.ErrNotExist) {
		if name == trace.TrafficFile || name == trace.IfacesFile || name == trace.CPUsFile || name == trace.FlowsFile {
			b.r.note(name + " missing from the run directory: read as empty")
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("analyze %s: %w", name, err)
	}
	return nil
}

// runBounds returns the manifest's start/end, falling back to the rows'.
func (b *builder) runBounds() (time.Time, time.Time) {
	if p := b.r.Phases; p != nil && !p.MeasuredStart.IsZero() {
		return p.MeasuredStart, p.MeasuredEnd
	}
	start, end := b.r.Manifest.Start, b.r.Manifest.End
	if start.IsZero() {
		start = b.rows.start
	}
	if end.IsZero() {
		end = b.rows.end
	}
	return start, end
}

// windows builds both directions' rates and picks the primary one.
func (b *builder) windows() {
	b.r.RunStart, b.r.RunEnd = b.runBounds()
	b.r.Rx = b.direction("rx", &b.rx, &b.traffic.appRx, trace.RoleReceiver)
	b.r.Tx = b.direction("tx", &b.tx, &b.traffic.appTx, trace.RoleSender)
	if b.rx.chosen {
		b.r.Rx.IfaceBytes = fptr(b.rx.allBytes)
	}
	if b.tx.chosen {
		b.r.Tx.IfaceBytes = fptr(b.tx.allBytes)
	}
	b.r.Primary, b.r.PrimaryDir = nil, ""
	for _, c := range []struct {
		d       *Direction
		counter string
	}{{&b.r.Rx, CounterApp}, {&b.r.Rx, CounterNetlink}, {&b.r.Tx, CounterApp}, {&b.r.Tx, CounterNetlink}} {
		if rt := c.d.Rate(c.counter); rt != nil && rt.W != nil && rt.W.HasActive() {
			b.r.Primary, b.r.PrimaryDir = rt, c.d.Name
			return
		}
	}
}

// finish computes what needs every table, then the verdicts and notes.
func (b *builder) finish() {
	r := b.r
	if r.Manifest.Start.IsZero() {
		r.note("manifest has no start time: run starts at the first interval's start")
	}
	if r.Manifest.End.IsZero() {
		r.note("manifest has no end time (run interrupted or still recording): run ends at the last row's time")
	}
	b.windows() // again: the run bounds may have grown with cpus and flows rows
	b.finishDrops()
	b.finishNICLoss()
	b.r.QueueHeat = b.queueHeat.result()
	b.noteApprox()
	b.notePartialNulls()
	b.cpu.finish(b)
	b.flows.finish(b)
	b.traffic.steering.finish(b.r)
	b.finishStreamChrono()
	b.blob.finish(b)
	b.maps.finish(b)
	b.cost.finish(b)
	b.retransmits()
	b.gaps()
	b.bdp()
	f := newFacts(r, b.th)
	r.Verdicts = evaluate(f)
	if f.ratedTooLow() {
		r.RatedLow = &RatedLow{SteadyBps: f.link, Counter: f.linkShort, Label: f.linkLabel}
		r.note("rated link speed looks wrong: " + f.ratedWarning())
	}
	b.noteProbesOff()
	b.noteManifest()
	b.notePhases()
	for _, n := range b.anom.notes() {
		r.note(n)
	}
}

// noteApprox notes rates whose steady state is approximate.
func (b *builder) noteApprox() {
	for _, d := range []*Direction{&b.r.Rx, &b.r.Tx} {
		for _, rt := range d.Rates {
			if w := rt.W; w != nil && w.HasActive() && w.SteadyApprox {
				b.r.note(fmt.Sprintf("steady state approximate (%s): active window has %s, median of all of them",
					rt.Label, intervals(w.ActiveIntervals)))
			}
		}
	}
}

// noteProbesOff notes which BPF-derived figures are missing because the
// cpus and/or flows tables are empty.
func (b *builder) noteProbesOff() {
	cpuRows, flowRows := b.cpu.rows, b.flows.rows
	switch {
	case cpuRows == 0 && flowRows == 0:
		b.r.note("probes off: no softirq/RTT figures (cpus and flows tables empty)")
	case cpuRows == 0:
		b.r.note(b.r.probesOff("no softirq figures (cpus table empty)", "np_si_", "np_nd_"))
	case flowRows == 0:
		b.r.note(b.r.probesOff("no RTT or BPF retransmit figures (flows table empty)", "np_tcp_", "np_nd_rx", "np_nd_tx"))
	}
}

// noteManifest adds notes on the run's status and detached probes.
func (b *builder) noteManifest() {
	switch m := b.r.Manifest; {
	case m.Status == trace.StatusRecording && m.Checkpoint != nil:
		b.r.note(fmt.Sprintf("run cut short: the trace was never closed (its recorder was killed, or it is still recording); "+
			"this reads the %d intervals closed by %s UTC: anything recorded after that was lost",
			m.Checkpoint.Intervals, m.Checkpoint.Time.Format("15:04:05")))
	case m.Status == trace.StatusRecording:
		b.r.note("run cut short: the trace was never closed (its recorder was killed, or it is still recording) and holds no closed interval")
	case m.Status != "" && m.Status != trace.StatusOK:
		b.r.note("run status: " + m.Status)
	}
	var unselected []string
	for _, p := range b.r.Manifest.Probes {
		switch {
		case p.Attached:
		case p.Reason == trace.ReasonNotSelected:
			unselected = append(unselected, p.Name)
		default:
			b.r.note(fmt.Sprintf("probe %s (%s) not attached: %s", p.Name, p.Hook, orDash(p.Reason)))
		}
	}
	if len(unselected) > 0 {
		b.r.note("probes " + trace.ReasonNotSelected + ": " + strings.Join(unselected, ", ") + "; their figures are n/a")
	}
	b.noteDelayLine()
}

// noteDelayLine notes a bench --rtt run whose delay line released packets
// late (manifest config delay_line: the user-space line's timer or
// scheduling; not necessarily a busy CPU): RTT under load then
// reads above the asked RTT; the minimum RTT is not affected.
func (b *builder) noteDelayLine() {
	d := delayLineOf(b.r.Manifest.Config)
	if d.packets == 0 || d.late == 0 {
		return
	}
	b.r.note(fmt.Sprintf("delay line (bench --rtt): %d of %d packets (%s) released late (the user-space line's timer or scheduling), "+
		"up to %s late (manifest config delay_line), so RTT under load (p50, p99, srtt) reads above the asked RTT; min RTT is not affected",
		d.late, d.packets, pct(d.lateShare()), fmtUs(float64(d.maxLateNs)/1e3)))
}

// setRated sets the rated link speed from Options, else the run's own
// --link-speed, else the interfaces in the manifest.
func (b *builder) setRated() {
	r := b.r
	if b.opts.LinkSpeedBps > 0 {
		r.RatedBps, r.RatedSource = b.opts.LinkSpeedBps, "--link-speed"
		return
	}
	if bps := ConfigInt(r.Manifest.Config, ConfigLinkSpeed); bps > 0 {
		r.RatedBps, r.RatedSource = float64(bps), "bench --link-speed, manifest config "+ConfigLinkSpeed
		return
	}
	for _, role := range []string{trace.RoleReceiver, trace.RoleSender, ""} {
		for _, mi := range r.Manifest.Interfaces {
			if (role == "" || mi.Role == role) && mi.RatedSpeedMbps != nil && *mi.RatedSpeedMbps > 0 {
				r.RatedBps = float64(*mi.RatedSpeedMbps) * 1e6
				r.RatedSource = "manifest rated_speed_mbps of " + mi.Name
				return
			}
		}
	}
}
