// Package nicstats records the drivers' own statistics (ethtool -S) of the
// interfaces a run counts, each interval: per-queue packets, bytes and
// drops where the driver names them (mana, mlx5, hv_netvsc, virtio_net,
// ena and veth all expose some), as per-interval deltas in the nics table.
package nicstats

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/safchain/ethtool"

	"github.com/netprof/netprof/trace"
)

// Link is one interface to read: its namespace (inode, and a function
// running code inside it, nil for the caller's own) and name.
type Link struct {
	Netns  uint64
	Do     func(func() error) error
	Ifname string
}

// statsFunc reads one interface's statistics by name (ethtool.Stats of a
// socket in the interface's namespace).
type statsFunc func(ifname string) (map[string]uint64, error)

// Sampler is a measure.Sampler writing the nics table.
type Sampler struct {
	links []Link
	read  []statsFunc // per link
	socks []*ethtool.Ethtool
	prev  []map[string]uint64 // per link; nil: not read
	// Skipped names the links whose driver gives no statistics (read
	// failed at Baseline) or that a later read could not find (removed,
	// renamed): they have no rows (from then on).
	Skipped []string
}

// New opens one ethtool socket per namespace of links. A namespace whose
// socket cannot be opened is an error.
func New(links []Link) (*Sampler, error) {
	s := &Sampler{links: links}
	byNS := map[uint64]*ethtool.Ethtool{}
	for _, l := range links {
		e, ok := byNS[l.Netns]
		if !ok {
			open := func() error {
				var err error
				e, err = ethtool.NewEthtool()
				return err
			}
			var err error
			if l.Do != nil {
				err = l.Do(open)
			} else {
				err = open()
			}
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("ethtool socket in netns %d: %w", l.Netns, err)
			}
			byNS[l.Netns] = e
			s.socks = append(s.socks, e)
		}
		s.read = append(s.read, e.Stats)
	}
	return s, nil
}

// Close closes the ethtool sockets.
func (s *Sampler) Close() {
	for _, e := range s.socks {
		e.Close()
	}
	s.socks = nil
}

// Name identifies the sampler.
func (s *Sampler) Name() string { return "ethtool-stats" }

// Baseline reads every link's statistics; a link whose driver gives none
// (ethtool fails: no ETHTOOL_GSTATS) is skipped from then on.
func (s *Sampler) Baseline() error {
	s.prev = make([]map[string]uint64, len(s.links))
	for i, l := range s.links {
		st, err := s.read[i](l.Ifname)
		if err != nil || len(st) == 0 {
			s.Skipped = append(s.Skipped, l.Ifname)
			continue
		}
		s.prev[i] = st
	}
	return nil
}

// Sample adds one row per link and statistic: the change since the last
// read. A statistic that went down (the driver reset it) and names
// holding a value, not a count (peer_ifindex), have no row.
func (s *Sampler) Sample(iv *trace.Interval, intervalNs int64) error {
	var errs []error
	for i, l := range s.links {
		if s.prev[i] == nil {
			continue
		}
		st, err := s.read[i](l.Ifname)
		if err != nil {
			// Gone or renamed (names are what ethtool reads by): no
			// more rows for it, and the error once.
			errs = append(errs, fmt.Errorf("ethtool -S %s: %w (no more nics rows for it)", l.Ifname, err))
			s.prev[i] = nil
			s.Skipped = append(s.Skipped, l.Ifname)
			continue
		}
		names := make([]string, 0, len(st))
		for n := range st {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			old, ok := s.prev[i][n]
			v := st[n]
			if !ok || v < old || notACounter(n) {
				continue
			}
			row := trace.NICStatRow{IntervalNs: intervalNs, Netns: l.Netns, Ifname: l.Ifname, Stat: n, Value: v - old}
			row.Direction, row.Queue = ParseName(n)
			iv.NICs = append(iv.NICs, row)
		}
		s.prev[i] = st
	}
	return errors.Join(errs...)
}

// notACounter reports statistics that hold a value, not a count.
func notACounter(name string) bool { return strings.Contains(name, "ifindex") }

// queueNames are the drivers' per-queue statistic names: rx_queue_0_packets
// (virtio_net, veth, hv_netvsc), rx0_packets (mlx5), rx_0_packets (mana),
// queue_0_tx_cnt (ena). Group 1 or 3 is the direction, 2 the queue.
var queueNames = []*regexp.Regexp{
	regexp.MustCompile(`^(rx|tx)_queue_(\d+)_`),
	regexp.MustCompile(`^(rx|tx)(\d+)_`),
	regexp.MustCompile(`^(rx|tx)_(\d+)_`),
	regexp.MustCompile(`^queue_(\d+)_(rx|tx)_`),
}

// ParseName returns the direction ("rx", "tx") and queue a statistic's
// name gives, nil for what it does not say (a device-wide statistic has
// a direction at most: rx_dropped).
func ParseName(name string) (dir *string, queue *int32) {
	for k, re := range queueNames {
		m := re.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		d, q := m[1], m[2]
		if k == 3 {
			d, q = m[2], m[1]
		}
		n, err := strconv.ParseInt(q, 10, 32)
		if err != nil {
			continue
		}
		qi := int32(n)
		return &d, &qi
	}
	for _, d := range []string{"rx", "tx"} {
		if strings.HasPrefix(name, d+"_") {
			return &d, nil
		}
	}
	return nil, nil
}
