// Package units parses and formats the sizes and rates netprof's flags and
// reports use, with one convention, stated once:
//
//   - Sizes are bytes. IEC suffixes are binary: KiB = 1024, MiB = 1024², GiB,
//     TiB (also written Ki, Mi, Gi, Ti). SI suffixes with B are decimal:
//     KB (or kB) = 1000, MB = 1000², GB, TB. "B" or no suffix is bytes.
//   - A bare K, M, G or T on a size is refused: iperf3 reads 64K as 65536,
//     azcopy and SI read it as 64000, so either choice silently misleads half
//     the users by 2.4% (K) to 10% (T). The error says what to write instead.
//     A lowercase b on a size (64Kb) is bits and is refused too.
//   - Rates are bits per second and always decimal unless written with an
//     IEC prefix: 10G, 10Gbit, 10Gbit/s, 10Gbps and 10Gb/s all mean
//     10·10⁹ bit/s (as in iperf3 -b and ntttcp). Byte rates say so with B/s
//     or Bps: 1.25GB/s = 10 Gbit/s; 1GiB/s = 2³⁰·8 bit/s. Gibit/s and Gibps
//     (btop's binary "Gibps") are 2³⁰ bit/s. A plain number is bit/s.
//   - Numbers may have a fraction (1.5GiB) and an exponent of at most two
//     digits (1e9); the value must be a whole number of bytes (sizes), is
//     rounded to the nearest bit/s (rates), and must fit in an int64.
//     Negative values, NaN, infinities and unknown suffixes are errors.
//
// Reports print rates in decimal Gbit/s (10⁹ bit/s) everywhere.
package units

import (
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
)

// SizeHelp describes the size convention, for flag usage text.
const SizeHelp = "KiB/MiB/GiB are binary (1024), KB/MB/GB decimal (1000); a bare K/M/G is refused as ambiguous"

// RateHelp describes the rate convention, for flag usage text.
const RateHelp = "bits per second, decimal: 10G = 10Gbit/s = 10Gbps = 10·10^9 bit/s; byte rates as 1.25GB/s; binary only with Gi (Gibit/s)"

// ErrSyntax is wrapped by every parse error about the form of the input
// (unknown suffix, not a number, ambiguous unit).
var ErrSyntax = errors.New("invalid syntax")

// ErrRange is wrapped by every parse error about the value (negative, too
// large, not a whole number of bytes).
var ErrRange = errors.New("value out of range")

// Size is a number of bytes.
type Size int64

// Rate is a data rate in bits per second.
type Rate int64

// Byte multiples.
const (
	KB Size = 1000
	MB      = 1000 * KB
	GB      = 1000 * MB
	TB      = 1000 * GB

	KiB Size = 1 << 10
	MiB      = 1 << 20
	GiB      = 1 << 30
	TiB      = 1 << 40
)

// Bit rate multiples.
const (
	Kbps Rate = 1000
	Mbps      = 1000 * Kbps
	Gbps      = 1000 * Mbps
	Tbps      = 1000 * Gbps
)

// longExpRE matches what is left after numRE when the exponent had more
// than two digits.
var longExpRE = regexp.MustCompile(`^([eE][+-]?)?[0-9]`)

var numRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,2})?`)

// prefixes maps a prefix to its multiplier; "" is 1.
var prefixes = map[string]int64{
	"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
}

// splitNumber parses the leading number of s exactly and returns it and the
// rest (the unit, spaces trimmed).
func splitNumber(kind, s string) (*big.Rat, string, error) {
	in := s
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-") {
		return nil, "", fmt.Errorf("%s %q: negative: %w", kind, in, ErrRange)
	}
	s = strings.TrimPrefix(s, "+")
	m := numRE.FindStringSubmatch(s)
	if m == nil {
		return nil, "", fmt.Errorf("%s %q: not a number followed by a unit: %w", kind, in, ErrSyntax)
	}
	num := m[0]
	rest := strings.TrimSpace(s[len(num):])
	if longExpRE.MatchString(rest) {
		return nil, "", fmt.Errorf("%s %q: exponent out of range (at most two digits): %w", kind, in, ErrRange)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return nil, "", fmt.Errorf("%s %q: not a number: %w", kind, in, ErrSyntax)
	}
	return r, rest, nil
}

// ParseSize parses a size in bytes: "64KiB", "1.5GiB", "1MB", "64kB",
// "1500", "1500B", "4 MiB". See the package documentation for the
// convention. Errors name the input and wrap ErrSyntax (unknown or ambiguous
// unit: a bare "64K" says to write 64KiB or 64KB) or ErrRange (negative, too
// large for an int64, not a whole number of bytes).
func ParseSize(s string) (Size, error) {
	r, unit, err := splitNumber("size", s)
	if err != nil {
		return 0, err
	}
	mult, err := sizeMultiplier(s, unit)
	if err != nil {
		return 0, err
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return 0, fmt.Errorf("size %q: %s bytes is not a whole number of bytes: %w", s, r.FloatString(3), ErrRange)
	}
	if !r.Num().IsInt64() {
		return 0, fmt.Errorf("size %q: too large (max %d bytes): %w", s, int64(maxInt64), ErrRange)
	}
	return Size(r.Num().Int64()), nil
}

const maxInt64 = 1<<63 - 1

func sizeMultiplier(in string, unit string) (int64, error) {
	switch unit {
	case "", "B":
		return 1, nil
	case "K", "k", "M", "m", "G", "g", "T", "t":
		whole := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(in), unit))
		p := strings.ToUpper(unit)
		return 0, fmt.Errorf("size %q: %q is ambiguous (iperf3 reads 1024, SI 1000): write %s%siB (binary) or %s%sB (decimal): %w",
			in, unit, whole, p, whole, p, ErrSyntax)
	case "KiB", "MiB", "GiB", "TiB", "Ki", "Mi", "Gi", "Ti":
		return prefixes[strings.TrimSuffix(unit, "B")], nil
	case "kB", "KB", "MB", "GB", "TB":
		return prefixes[strings.TrimSuffix(unit, "B")], nil
	}
	switch {
	case strings.Contains(unit, "/") || strings.HasSuffix(unit, "ps"):
		return 0, fmt.Errorf("size %q: %q is a rate, not a size: %w", in, unit, ErrSyntax)
	case strings.HasSuffix(unit, "b") || strings.HasSuffix(unit, "bit") || strings.HasSuffix(unit, "bits"):
		return 0, fmt.Errorf("size %q: %q is bits; a size is in bytes (write B, e.g. KiB or KB): %w", in, unit, ErrSyntax)
	}
	return 0, fmt.Errorf("size %q: unknown unit %q (want B, KiB, MiB, GiB, TiB, KB, MB, GB or TB): %w", in, unit, ErrSyntax)
}

// ParseRate parses a rate into bits per second: "10G", "10Gbit", "10Gbit/s",
// "10Gbps", "100Mbit/s", "1.25GB/s", "500MBps", "2Gibit/s", "1000000".
// See the package documentation for the convention. Errors name the input and
// wrap ErrSyntax (unknown unit; a size such as "10GB" without "/s") or
// ErrRange (negative, too large for an int64).
func ParseRate(s string) (Rate, error) {
	r, unit, err := splitNumber("rate", s)
	if err != nil {
		return 0, err
	}
	return rateOf(s, r, unit)
}

// rateOf turns splitNumber's number r and unit of input s into bit/s.
func rateOf(s string, r *big.Rat, unit string) (Rate, error) {
	mult, err := rateMultiplier(s, unit)
	if err != nil {
		return 0, err
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	// Round half up to whole bit/s.
	r.Add(r, big.NewRat(1, 2))
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if !q.IsInt64() {
		return 0, fmt.Errorf("rate %q: too large (max %d bit/s): %w", s, int64(maxInt64), ErrRange)
	}
	return Rate(q.Int64()), nil
}

// ErrNoUnit is wrapped by ParseLinkRate's error for a bare number.
var ErrNoUnit = errors.New("a bare number has no unit")

// ParseLinkRate is ParseRate for a link's rated speed or a target rate:
// the unit is required — a bare number is an error wrapping ErrNoUnit,
// because ethtool prints speeds in Mb/s ("10000") while ParseRate reads a
// bare number as bit/s — and the rate must be positive (ErrRange).
func ParseLinkRate(s string) (Rate, error) {
	r, unit, err := splitNumber("rate", s)
	if err != nil {
		return 0, err
	}
	if unit == "" {
		return 0, fmt.Errorf("rate %q: %w: write e.g. 10Gbit or 100Gbit/s (ethtool's 10000 is Mb/s: 10000Mbit)", s, ErrNoUnit)
	}
	if r.Sign() <= 0 {
		return 0, fmt.Errorf("rate %q: must be positive: %w", s, ErrRange)
	}
	return rateOf(s, r, unit)
}

// rateMultiplier returns bits per second per unit.
func rateMultiplier(in, unit string) (int64, error) {
	if p, ok := ratePrefix(unit); ok {
		return p, nil // bare number or bare prefix: bits, decimal (iperf3 -b)
	}
	for _, suf := range []string{"bit/s", "bits/s", "bps", "b/s", "bit", "bits"} {
		if p, ok := strings.CutSuffix(unit, suf); ok {
			if m, ok := ratePrefix(p); ok {
				return m, nil
			}
		}
	}
	for _, suf := range []string{"B/s", "Bps", "byte/s", "bytes/s"} {
		if p, ok := strings.CutSuffix(unit, suf); ok {
			if m, ok := prefixes[p]; ok && m <= maxInt64/8 {
				return m * 8, nil
			}
		}
	}
	if strings.HasSuffix(unit, "B") {
		whole := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(in), unit))
		return 0, fmt.Errorf("rate %q: %q is a size, not a rate: write %s%s/s for bytes per second or %s%sbit/s for bits: %w",
			in, unit, whole, unit, whole, strings.TrimSuffix(unit, "B"), ErrSyntax)
	}
	return 0, fmt.Errorf("rate %q: unknown unit %q (want e.g. 10G, 10Gbit/s, 10Gbps, 1.25GB/s): %w", in, unit, ErrSyntax)
}

// ratePrefix looks up a rate's prefix; lowercase m, g, t are accepted as
// well (nobody means millibits).
func ratePrefix(p string) (int64, bool) {
	switch p {
	case "m", "g", "t":
		p = strings.ToUpper(p)
	}
	m, ok := prefixes[p]
	return m, ok
}

// Set parses s with ParseSize, so *Size works as a flag.Value (and as a
// urfave/cli Generic).
func (z *Size) Set(s string) error {
	v, err := ParseSize(s)
	if err != nil {
		return err
	}
	*z = v
	return nil
}

// Set parses s with ParseRate, so *Rate works as a flag.Value (and as a
// urfave/cli Generic).
func (r *Rate) Set(s string) error {
	v, err := ParseRate(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}
