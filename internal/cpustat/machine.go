package cpustat

import "github.com/netprof/netprof/internal/cpulist"

// Machine is the machine's CPUs at one moment, for the run manifest:
// online and possible CPU lists from sysfs (see package cpulist), not the
// process's affinity.
type Machine struct {
	// Online and Possible are the lists; nil when unreadable.
	Online, Possible cpulist.List
	// OnlineCount is how many CPUs are online: len(Online), or when sysfs could not
	// be read, the cpuN lines of /proc/stat (which lists online CPUs
	// only); 0 when neither could be read.
	OnlineCount int
}

// ReadMachine reads the machine's CPU lists. It does not fail: a list it
// cannot read stays nil (the manifest then records "").
func ReadMachine() Machine {
	var m Machine
	m.Online, _ = cpulist.Online()
	m.Possible, _ = cpulist.Possible()
	m.OnlineCount = len(m.Online)
	if m.Online == nil {
		if s, err := Read(); err == nil {
			m.OnlineCount = s.Listed()
		}
	}
	return m
}
