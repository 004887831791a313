package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// String returns z exactly: as a whole number of the largest binary unit
// that divides it ("128KiB"), else of the largest decimal unit that does
// ("1500KB" for 1500000), else in bytes ("1500B"). ParseSize(z.String())
// == z.
func (z Size) String() string {
	if z < 0 {
		return "-" + (-z).String()
	}
	if z == 0 {
		return "0B"
	}
	for _, u := range []struct {
		m    Size
		name string
	}{{TiB, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}, {TB, "TB"}, {GB, "GB"}, {MB, "MB"}, {KB, "KB"}} {
		if z%u.m == 0 {
			return strconv.FormatInt(int64(z/u.m), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(z), 10) + "B"
}

// String returns r exactly in decimal bit/s with the largest SI prefix not
// above it and as many fraction digits as needed: "10Gbit/s",
// "1.234567Mbit/s", "0bit/s". ParseRate(r.String()) == r.
func (r Rate) String() string {
	if r < 0 {
		return "-" + (-r).String()
	}
	for _, u := range []struct {
		m      Rate
		prefix string
		digits int
	}{{Tbps, "T", 12}, {Gbps, "G", 9}, {Mbps, "M", 6}, {Kbps, "k", 3}} {
		if r >= u.m {
			s := strconv.FormatInt(int64(r/u.m), 10)
			if f := int64(r % u.m); f != 0 {
				s += "." + strings.TrimRight(fmt.Sprintf("%0*d", u.digits, f), "0")
			}
			return s + u.prefix + "bit/s"
		}
	}
	return strconv.FormatInt(int64(r), 10) + "bit/s"
}

// Gbps returns r in decimal Gbit/s (10⁹ bit/s).
func (r Rate) Gbps() float64 { return float64(r) / 1e9 }

// BytesPerSecond returns r in bytes per second.
func (r Rate) BytesPerSecond() float64 { return float64(r) / 8 }

// GbitPerSecond returns the decimal Gbit/s (10⁹ bit/s) of moving bytes in
// d; 0 when d is not positive.
func GbitPerSecond(bytes uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) * 8 / d.Seconds() / 1e9
}

// FormatGbps formats a rate given in bits per second as decimal Gbit/s with
// two decimals: "9.12 Gbit/s".
func FormatGbps(bitsPerSecond float64) string {
	return strconv.FormatFloat(bitsPerSecond/1e9, 'f', 2, 64) + " Gbit/s"
}

// FormatBytes formats n bytes with a decimal prefix and three significant
// digits: "999 B", "1.50 KB", "12.3 MB", "1.23 GB".
func FormatBytes(n uint64) string {
	return formatScaled(float64(n), 1000, []string{"B", "KB", "MB", "GB", "TB", "PB", "EB"})
}

// FormatIBytes formats n bytes with a binary prefix and three significant
// digits: "1023 B", "1.50 KiB", "1.15 GiB".
func FormatIBytes(n uint64) string {
	return formatScaled(float64(n), 1024, []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"})
}

func formatScaled(v, base float64, names []string) string {
	i := 0
	for v >= base && i < len(names)-1 {
		v /= base
		i++
	}
	if i == 0 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " " + names[0]
	}
	// Three significant digits (a value just below base may print as
	// "1000 KB").
	dec := 2 - int(math.Floor(math.Log10(v)))
	if dec < 0 {
		dec = 0
	}
	return strconv.FormatFloat(v, 'f', dec, 64) + " " + names[i]
}
