package measure

import (
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/internal/cpustat"
	"github.com/netprof/netprof/internal/linkstats"
	"github.com/netprof/netprof/internal/queues"
	"github.com/netprof/netprof/trace"
)

// NewManifest returns a run's manifest with what every command records
// of the host when the run starts: host name, kernel release, the
// machine's online CPU count and online/possible lists (whatever the
// process's affinity), the start time (now, UTC), the tool's version, the
// command line argv (already redacted where it holds secrets), the
// interval and the command's config. The caller adds interfaces, probes
// and maps.
func NewManifest(toolVersion string, argv []string, interval time.Duration, config map[string]any) trace.Manifest {
	host, _ := os.Hostname()
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	cpus := cpustat.ReadMachine()
	return trace.Manifest{
		ToolVersion: toolVersion, Argv: argv, Start: time.Now().UTC(), Host: host,
		Kernel:   unix.ByteSliceToString(uts.Release[:]),
		CPUCount: cpus.OnlineCount, CPUsOnline: cpus.Online.String(), CPUsPossible: cpus.Possible.String(),
		IntervalNs: interval.Nanoseconds(), Config: config,
	}
}

// Interface describes a recorded interface for the manifest, role being
// what the run uses it for, with its queue map read now (queues.ForLink:
// do runs a function inside the interface's namespace when that is not
// netprof's own; nil leaves another namespace's queues out).
func Interface(l linkstats.Link, role string, do func(func() error) error) trace.Interface {
	return trace.Interface{
		Name: l.Name, Index: int32(l.Index), Netns: l.Netns, Driver: l.Driver,
		Master: l.Master, MTU: l.MTU, Role: role, RatedSpeedMbps: l.SpeedMbps,
		Queues: queues.ForLink(l.Netns, l.Name, do),
	}
}
