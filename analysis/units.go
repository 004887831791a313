package analysis

import (
	"fmt"
	"strings"

	"github.com/netprof/netprof/internal/units"
)

// EthernetOverheadBytes is what every Ethernet frame costs on the wire
// beyond the L2 frame the kernel counts: preamble 7 + start frame delimiter
// 1 + FCS 4 + inter-frame gap 12 bytes.
const EthernetOverheadBytes = 24

// EthernetHeaderBytes is the MAC header (destination, source, EtherType)
// the kernel's interface counters include in every frame.
const EthernetHeaderBytes = 14

// Units selects how rates are printed. Decimal (the default) prints Gbit/s
// (10^9 bit/s); Binary prints Gibit/s (2^30 bit/s) and GiB/s (2^30 byte/s).
// A table never mixes the two.
type Units int

// Unit systems.
const (
	Decimal Units = iota
	Binary
)

// ParseUnits parses "decimal" or "binary" ("" means decimal).
func ParseUnits(s string) (Units, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "decimal", "si":
		return Decimal, nil
	case "binary", "iec":
		return Binary, nil
	}
	return Decimal, fmt.Errorf("unknown units %q: want decimal or binary", s)
}

// String returns "decimal" or "binary".
func (u Units) String() string {
	if u == Binary {
		return "binary"
	}
	return "decimal"
}

// RateUnit returns the bit-rate unit label: "Gbit/s" or "Gibit/s".
func (u Units) RateUnit() string {
	if u == Binary {
		return "Gibit/s"
	}
	return "Gbit/s"
}

// RateUnitLong returns the unit label with its definition, for table
// headers: "Gbit/s = 10^9 bit/s" or "Gibit/s = 2^30 bit/s".
func (u Units) RateUnitLong() string {
	if u == Binary {
		return "Gibit/s = 2^30 bit/s"
	}
	return "Gbit/s = 10^9 bit/s"
}

// Rate converts bit/s to the unit of RateUnit.
func (u Units) Rate(bps float64) float64 {
	if u == Binary {
		return bps / (1 << 30)
	}
	return bps / 1e9
}

// FormatRate formats bit/s in the unit of RateUnit with two decimals,
// without the unit.
func (u Units) FormatRate(bps float64) string { return fmt.Sprintf("%.2f", u.Rate(bps)) }

// FormatByteRate formats bit/s as GiB/s (binary) or GB/s (decimal), two
// decimals, with the unit.
func (u Units) FormatByteRate(bps float64) string {
	if u == Binary {
		return fmt.Sprintf("%.2f GiB/s", bps/8/(1<<30))
	}
	return fmt.Sprintf("%.2f GB/s", bps/8/1e9)
}

// FormatBytes formats a byte count in MB (decimal) or MiB (binary), with
// the unit; below one MB (MiB) in KB (KiB), so small windows and BDPs do
// not print as 0.00.
func (u Units) FormatBytes(b float64) string {
	if u == Binary {
		if b < 1<<20 {
			return fmt.Sprintf("%.2f KiB", b/(1<<10))
		}
		return fmt.Sprintf("%.2f MiB", b/(1<<20))
	}
	if b < 1e6 {
		return fmt.Sprintf("%.2f KB", b/1e3)
	}
	return fmt.Sprintf("%.2f MB", b/1e6)
}

// fmtSize formats a byte size (a window, a block size) in binary units
// with three significant digits (internal/units.FormatIBytes): 262144 →
// "256 KiB", 1<<20 → "1.00 MiB"; below 1 KiB in bytes.
func fmtSize(n int64) string { return units.FormatIBytes(uint64(max(n, 0))) }

// FormatGbps formats a rate in bit/s as decimal Gbit/s (10^9 bit/s) with two
// decimals, without the unit: 183.6e9 → "183.60".
func FormatGbps(bps float64) string { return Decimal.FormatRate(bps) }

// ParseRate parses a rated speed or target rate (internal/units.ParseLinkRate:
// "80Gbit", "10Gbit/s", "25G", "100Mbit", "1.25GB/s" decimal; "171Gibit"
// binary) and returns bit/s. A unit is required: a bare number is an error
// wrapping ErrNoUnit (ethtool prints speeds in Mb/s). A rate <= 0 is an
// error.
func ParseRate(s string) (float64, error) {
	r, err := units.ParseLinkRate(s)
	if err != nil {
		return 0, err
	}
	if r <= 0 {
		return 0, fmt.Errorf("rate %q: must be positive", s)
	}
	return float64(r), nil
}

// ErrNoUnit is wrapped by ParseRate's error for a bare number.
var ErrNoUnit = units.ErrNoUnit

// fmtRate formats bit/s with its unit: "9.60 Gbit/s".
func fmtRate(u Units, bps float64) string { return u.FormatRate(bps) + " " + u.RateUnit() }
