package units_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/units"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want units.Size
	}{
		{"0", 0},
		{"1500", 1500},
		{"1500B", 1500},
		{"64KiB", 65536},
		{"64Ki", 65536},
		{"64KB", 64000},
		{"64kB", 64000},
		{"1MB", 1000000},
		{"1MiB", 1 << 20},
		{"1.5GiB", 1610612736},
		{"1.5GB", 1500000000},
		{"2TiB", 2 << 40},
		{"4 MiB", 4 << 20},
		{" 128KiB ", 131072},
		{".5KiB", 512},
		{"1e3KB", 1000000},
		{"+8B", 8},
	} {
		got, err := units.ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestParseSizeErrors(t *testing.T) {
	for _, tc := range []struct {
		in       string
		sentinel error
		want     []string
	}{
		{"64K", units.ErrSyntax, []string{`"64K"`, "ambiguous", "write 64KiB (binary) or 64KB (decimal)"}},
		{"64k", units.ErrSyntax, []string{"write 64KiB (binary) or 64KB (decimal)"}},
		{"1.5G", units.ErrSyntax, []string{"write 1.5GiB (binary) or 1.5GB (decimal)"}},
		{"10M", units.ErrSyntax, []string{"10MiB", "10MB"}},
		{"64Kb", units.ErrSyntax, []string{`"64Kb"`, "bits"}},
		{"10Gbit", units.ErrSyntax, []string{"bits"}},
		{"1GB/s", units.ErrSyntax, []string{"rate, not a size"}},
		{"12 parsecs", units.ErrSyntax, []string{`"12 parsecs"`, `unknown unit "parsecs"`}},
		{"-1K", units.ErrRange, []string{`"-1K"`, "negative"}},
		{"-5", units.ErrRange, []string{"negative"}},
		{"1e400", units.ErrRange, []string{`"1e400"`, "exponent"}},
		{"1e30", units.ErrRange, []string{`"1e30"`, "too large"}},
		{"9223372036854775808", units.ErrRange, []string{"too large"}},
		{"8388608TiB", units.ErrRange, []string{"too large"}},
		{"0.5B", units.ErrRange, []string{"not a whole number of bytes"}},
		{"0.1KiB", units.ErrRange, []string{"102.400 bytes"}},
		{"", units.ErrSyntax, []string{"not a number"}},
		{"KiB", units.ErrSyntax, []string{"not a number"}},
		{"NaN", units.ErrSyntax, []string{"not a number"}},
		{"Inf", units.ErrSyntax, []string{"not a number"}},
		{"0x10", units.ErrSyntax, []string{"unknown unit"}},
		{"1.", units.ErrSyntax, []string{"unknown unit"}},
		{"8EiB", units.ErrSyntax, []string{"unknown unit"}},
	} {
		got, err := units.ParseSize(tc.in)
		if err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", tc.in, got)
			continue
		}
		if !errors.Is(err, tc.sentinel) {
			t.Errorf("ParseSize(%q) error %v does not wrap %v", tc.in, err, tc.sentinel)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseSize(%q) error %q does not contain %q", tc.in, err, w)
			}
		}
	}
}

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want units.Rate
	}{
		{"0", 0},
		{"1000000", 1000000},
		{"10G", 10 * units.Gbps},
		{"10g", 10 * units.Gbps},
		{"10Gbit", 10 * units.Gbps},
		{"10Gbits", 10 * units.Gbps},
		{"10Gbit/s", 10 * units.Gbps},
		{"10Gbits/s", 10 * units.Gbps},
		{"10Gbps", 10 * units.Gbps},
		{"10gbps", 10 * units.Gbps},
		{"10Gb/s", 10 * units.Gbps},
		{"100Mbit/s", 100 * units.Mbps},
		{"100M", 100 * units.Mbps},
		{"1.5k", 1500},
		{"1.5K", 1500},
		{"1.25GB/s", 10 * units.Gbps},
		{"1.25GBps", 10 * units.Gbps},
		{"125MB/s", 1 * units.Gbps},
		{"1GiB/s", 8 << 30},
		{"1KiB/s", 8192},
		{"171Gibps", 171 << 30},
		{"1Gibit/s", 1 << 30},
		{"2.5 Gbit/s", 2500 * units.Mbps},
		{"1e9", units.Gbps},
		{"0.4", 0},
		{"0.5", 1},
	} {
		got, err := units.ParseRate(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	// btop's binary Gibps is not the decimal Gbit/s reports use.
	r, _ := units.ParseRate("171Gibps")
	if g := r.Gbps(); g < 183.6 || g > 183.7 {
		t.Errorf("171 Gibps = %.3f Gbit/s, want 183.6", g)
	}
}

func TestParseRateErrors(t *testing.T) {
	for _, tc := range []struct {
		in       string
		sentinel error
		want     []string
	}{
		{"10GB", units.ErrSyntax, []string{`"10GB"`, "size, not a rate", "10GB/s", "10Gbit/s"}},
		{"12 parsecs", units.ErrSyntax, []string{`"12 parsecs"`, "unknown unit"}},
		{"10Gbit/h", units.ErrSyntax, []string{"unknown unit"}},
		{"-1G", units.ErrRange, []string{`"-1G"`, "negative"}},
		{"1e400", units.ErrRange, []string{`"1e400"`}},
		{"10000000000Tbit/s", units.ErrRange, []string{"too large"}},
		{"2000000000TB/s", units.ErrRange, []string{"too large"}},
		{"fast", units.ErrSyntax, []string{"not a number"}},
		{"9Ebit/s", units.ErrSyntax, []string{"unknown unit"}},
	} {
		got, err := units.ParseRate(tc.in)
		if err == nil {
			t.Errorf("ParseRate(%q) = %d, want an error", tc.in, got)
			continue
		}
		if !errors.Is(err, tc.sentinel) {
			t.Errorf("ParseRate(%q) error %v does not wrap %v", tc.in, err, tc.sentinel)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseRate(%q) error %q does not contain %q", tc.in, err, w)
			}
		}
	}
}

// String is exact and round-trips through Parse.
func TestStringRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		v    units.Size
		want string
	}{
		{0, "0B"}, {1500, "1500B"}, {131072, "128KiB"}, {1 << 20, "1MiB"}, {1536, "1536B"},
		{1000000, "1MB"}, {1500000, "1500KB"}, {3 << 30, "3GiB"}, {64000, "64KB"},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("Size(%d).String() = %q, want %q", int64(tc.v), got, tc.want)
		}
		back, err := units.ParseSize(tc.v.String())
		if err != nil || back != tc.v {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.v.String(), back, err, tc.v)
		}
	}
	for _, tc := range []struct {
		v    units.Rate
		want string
	}{
		{0, "0bit/s"}, {999, "999bit/s"}, {1500, "1.5kbit/s"}, {10 * units.Gbps, "10Gbit/s"},
		{1234567, "1.234567Mbit/s"}, {100 * units.Mbps, "100Mbit/s"}, {1 << 30, "1.073741824Gbit/s"},
		{2 * units.Tbps, "2Tbit/s"},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("Rate(%d).String() = %q, want %q", int64(tc.v), got, tc.want)
		}
		back, err := units.ParseRate(tc.v.String())
		if err != nil || back != tc.v {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", tc.v.String(), back, err, tc.v)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{units.FormatGbps(9.123e9), "9.12 Gbit/s"},
		{units.FormatGbps(0), "0.00 Gbit/s"},
		{units.FormatBytes(999), "999 B"},
		{units.FormatBytes(1500), "1.50 KB"},
		{units.FormatBytes(12_345_678), "12.3 MB"},
		{units.FormatBytes(1_234_567_890), "1.23 GB"},
		{units.FormatBytes(123_456_789_012), "123 GB"},
		{units.FormatIBytes(1023), "1023 B"},
		{units.FormatIBytes(1536), "1.50 KiB"},
		{units.FormatIBytes(1234567890), "1.15 GiB"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if g := units.GbitPerSecond(1_250_000_000, time.Second); g != 10 {
		t.Errorf("GbitPerSecond(1.25 GB, 1s) = %v, want 10", g)
	}
	if g := units.GbitPerSecond(1, 0); g != 0 {
		t.Errorf("GbitPerSecond(_, 0) = %v, want 0", g)
	}
	if r := units.Rate(10 * units.Gbps); r.BytesPerSecond() != 1.25e9 || r.Gbps() != 10 {
		t.Errorf("10 Gbit/s: %v B/s, %v Gbit/s", r.BytesPerSecond(), r.Gbps())
	}
}

// Size and Rate work as flag values.
func TestSet(t *testing.T) {
	var z units.Size
	if err := z.Set("128KiB"); err != nil || z != 131072 {
		t.Errorf("Set(128KiB): %d, %v", z, err)
	}
	if err := z.Set("128K"); err == nil || z != 131072 {
		t.Errorf("Set(128K) = %v and changed the value to %d", err, z)
	}
	var r units.Rate
	if err := r.Set("10Gbps"); err != nil || r != 10*units.Gbps {
		t.Errorf("Set(10Gbps): %d, %v", r, err)
	}
	if err := r.Set("10GB"); err == nil || r != 10*units.Gbps {
		t.Errorf("Set(10GB) = %v and changed the value to %d", err, r)
	}
}

func TestParseLinkRate(t *testing.T) {
	if r, err := units.ParseLinkRate("10000Mbit"); err != nil || r != 10*units.Gbps {
		t.Errorf("ParseLinkRate(10000Mbit) = %d, %v", r, err)
	}
	for in, want := range map[string]error{"10000": units.ErrNoUnit, " 25 ": units.ErrNoUnit, "0G": units.ErrRange,
		"-1G": units.ErrRange, "fast": units.ErrSyntax} {
		if _, err := units.ParseLinkRate(in); !errors.Is(err, want) {
			t.Errorf("ParseLinkRate(%q) error %v, want %v", in, err, want)
		}
	}
}
