package loader

import (
	"fmt"
	"sort"

	"github.com/cilium/ebpf"

	"github.com/netprof/netprof/trace"
)

// MapInfos describes every map of the probe (its tables and the arrays
// behind its global variables), in name order, as the kernel created them:
// type, key and value size and max entries from bpf_map_info, memlock from
// the map's fdinfo (nil when the kernel gives none), the possible-CPU
// count from /sys/devices/system/cpu/possible, and ValueBytes computed from
// them (see trace.BPFMap). It returns an error when the possible CPUs or a
// map's info cannot be read (Linux >= 4.13 has bpf_map_info).
func (l *Loaded) MapInfos() ([]trace.BPFMap, error) {
	possible, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("%s maps: possible cpus: %w", l.Probe, err)
	}
	names := make([]string, 0, len(l.Maps))
	for name := range l.Maps {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]trace.BPFMap, 0, len(names))
	for _, name := range names {
		info, err := l.Maps[name].Info()
		if err != nil {
			return nil, fmt.Errorf("%s map %s: info: %w", l.Probe, name, err)
		}
		out = append(out, describeMap(l.Probe, name, info, possible))
	}
	return out, nil
}

// describeMap returns the manifest entry of map name of probe from its
// kernel info, on a machine with possible CPUs.
func describeMap(probe, name string, info *ebpf.MapInfo, possible int) trace.BPFMap {
	m := trace.BPFMap{
		Probe: probe, Name: name, Type: info.Type.String(),
		KeySizeBytes: info.KeySize, ValueSizeBytes: info.ValueSize, MaxEntries: info.MaxEntries,
		PerCPU: perCPU(info.Type), PossibleCPUs: possible,
	}
	m.ValueBytes = valueBytes(m)
	if b, ok := info.Memlock(); ok {
		m.MemlockBytes = &b
	}
	return m
}

// valueBytes returns what m's values take at capacity, in bytes: a ring
// buffer's size (MaxEntries), else MaxEntries × ValueSizeBytes rounded up
// to 8 (the kernel's per-value alignment) × PossibleCPUs for a per-CPU
// map.
func valueBytes(m trace.BPFMap) uint64 {
	switch m.Type {
	case ebpf.RingBuf.String(), ebpf.UserRingbuf.String():
		return uint64(m.MaxEntries)
	}
	v := uint64(m.MaxEntries) * ((uint64(m.ValueSizeBytes) + 7) &^ 7)
	if m.PerCPU {
		v *= uint64(m.PossibleCPUs)
	}
	return v
}

// perCPU reports whether maps of type t hold one value per possible CPU.
func perCPU(t ebpf.MapType) bool {
	switch t {
	case ebpf.PerCPUHash, ebpf.PerCPUArray, ebpf.LRUCPUHash, ebpf.PerCPUCGroupStorage:
		return true
	}
	return false
}
