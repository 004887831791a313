package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/netprof/netprof/internal/linkstats"
	"github.com/netprof/netprof/measure/ifaces"
)

// selectFlags are the interface-selection flags shared by ifaces and watch.
func selectFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "iface", Usage: "interface(s) to count, by name or ifindex; \"auto\" follows the default route", DefaultText: "auto", EnvVars: []string{"NETPROF_IFACE"}},
		&cli.StringSliceFlag{Name: "driver", Usage: "count the interface(s) bound to this kernel driver (e.g. mana, hv_netvsc, mlx5_core)", EnvVars: []string{"NETPROF_DRIVER"}},
		&cli.StringSliceFlag{Name: "link-speed", Usage: "rated link speed when the driver reports none: RATE for the counted interface(s) or NAME=RATE (a unit is required, decimal: 100Gbit, 25Gbit, 40000Mbit)", EnvVars: []string{"NETPROF_LINK_SPEED"}},
	}
}

func selector(c *cli.Context) ifaces.Selector {
	return ifaces.Selector{Names: splitList(c.StringSlice("iface")), Drivers: splitList(c.StringSlice("driver"))}
}

func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func ifacesCommand() *cli.Command {
	return &cli.Command{
		Name:  "ifaces",
		Usage: "list interfaces (driver, MAC, MTU, master, queues, rated speed), mirrored groups, and which one netprof counts",
		Description: "Interfaces that carry the same bytes (an SR-IOV VF and its hv_netvsc NIC, bond slaves and\n" +
			"the bond, bridge ports and the bridge, macvlans and their lower device) form a group; netprof\n" +
			"counts one interface per group so no byte counts twice, and says why. Speeds are decimal\n" +
			"Gbit/s; \"unknown\" when the driver reports none or a placeholder (veth, tun): never guessed.\n" +
			"Example: netprof ifaces --driver mana --json",
		Flags: append(selectFlags(),
			&cli.BoolFlag{Name: "json", Usage: "print as JSON", EnvVars: []string{"NETPROF_JSON"}}),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError{fmt.Errorf("ifaces takes no arguments (got %q); flags go before arguments", c.Args().Slice())}
			}
			speeds, err := speedOverrides(c.StringSlice("link-speed"))
			if err != nil {
				return usageError{err}
			}
			ns, err := linkstats.OpenNS(nil, 0)
			if err != nil {
				return err
			}
			defer ns.Close()
			links, err := linkstats.Discover(ns)
			if err != nil {
				return err
			}
			groups := ifaces.Plan(links)
			sel, selErr := ifaces.Select(ns.Handle, links, groups, selector(c))
			if selErr == nil {
				applyCountedSpeeds(links, sel, speeds)
				groups = ifaces.Plan(links)
			} else if explicit(c) {
				return usageError{selErr}
			}
			if err := ifaces.ApplySpeeds(links, named(speeds)); err != nil {
				return usageError{err}
			}
			if c.Bool("json") {
				return writeIfacesJSON(c.App.Writer, links, groups, sel, selErr)
			}
			return writeIfacesText(c.App.Writer, links, groups, sel, selErr)
		},
	}
}

// speedOverrides parses --link-speed values of ifaces, watch and blob
// (ifaces.ParseSpeedOverrides: "NAME=RATE" or "RATE", a unit required).
func speedOverrides(vals []string) (map[string]int64, error) {
	out, err := ifaces.ParseSpeedOverrides(vals)
	if err != nil {
		return nil, fmt.Errorf("--link-speed: %w", err)
	}
	return out, nil
}

// explicit reports whether the user named interfaces or drivers (then a
// miss is an error; with the default auto it is only reported).
func explicit(c *cli.Context) bool {
	return len(c.StringSlice("iface")) > 0 || len(c.StringSlice("driver")) > 0
}

func named(speeds map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range speeds {
		if k != "" {
			out[k] = v
		}
	}
	return out
}

// applyCountedSpeeds applies a bare --link-speed to the counted interfaces.
func applyCountedSpeeds(links []linkstats.Link, sel ifaces.Selection, speeds map[string]int64) {
	v, ok := speeds[""]
	if !ok {
		return
	}
	for _, ct := range sel.Counted() {
		for i := range links {
			if links[i].Index == ct.Index {
				mbps := v
				links[i].SpeedMbps, links[i].SpeedNote = &mbps, "--link-speed"
			}
		}
	}
}

func speedText(l linkstats.Link) string {
	if l.SpeedMbps == nil {
		return "unknown"
	}
	return fmt.Sprintf("%g", float64(*l.SpeedMbps)/1e3)
}

func writeIfacesText(w io.Writer, links []linkstats.Link, groups []ifaces.Group, sel ifaces.Selection, selErr error) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tINDEX\tDRIVER\tKIND\tMAC\tMTU\tMASTER\tLOWER\tQUEUES rx/tx/ch\tSPEED Gbit/s\tSTATE\tCOUNTED")
	for _, l := range links {
		counted := "-"
		for _, g := range groups {
			switch {
			case !g.Has(l.Index):
			case !g.Counts(l.Index):
				counted = "no: mirror, " + g.Counted[0].Name + " counts its bytes"
			case selected(sel, l.Index):
				counted = "yes"
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\t%d/%d/%d\t%s\t%s\t%s\n", l.Name, l.Index, l.Driver, l.Kind,
			dash(l.MAC), l.MTU, dash(l.Master), dash(l.Lower), l.RxQueues, l.TxQueues, l.Channels, speedText(l), l.OperState, counted)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nspeeds:")
	for _, l := range links {
		fmt.Fprintf(w, "  %s: %s (%s)\n", l.Name, speedText(l), l.SpeedNote)
	}
	fmt.Fprintln(w, "\nmirrored groups (one interface counted per group):")
	n := 0
	for _, g := range groups {
		if !g.Mirrored() {
			continue
		}
		n++
		var names []string
		for _, m := range g.Members {
			names = append(names, m.Name)
		}
		fmt.Fprintf(w, "  %s [%s]: %s\n", g.Shape, strings.Join(names, ", "), g.Reason)
	}
	if n == 0 {
		fmt.Fprintln(w, "  none")
	}
	fmt.Fprintln(w)
	if selErr != nil {
		fmt.Fprintf(w, "netprof would count: nothing yet: %v\n", selErr)
		return nil
	}
	var names []string
	for _, ct := range sel.Counted() {
		names = append(names, ct.Name)
	}
	fmt.Fprintf(w, "netprof would count: %s (%s)\n", strings.Join(names, ", "), strings.Join(sel.Why, "; "))
	return nil
}

// selected reports whether ifindex is counted in the selection.
func selected(sel ifaces.Selection, idx int) bool {
	for _, c := range sel.Counted() {
		if c.Index == idx {
			return true
		}
	}
	return false
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type ifaceJSON struct {
	Name      string `json:"name"`
	Index     int    `json:"index"`
	Driver    string `json:"driver"`
	Kind      string `json:"kind"`
	MAC       string `json:"mac"`
	MTU       int    `json:"mtu"`
	Master    string `json:"master,omitempty"`
	Lower     string `json:"lower,omitempty"`
	RxQueues  int    `json:"rx_queues"`
	TxQueues  int    `json:"tx_queues"`
	Channels  int    `json:"channels"`
	SpeedMbps *int64 `json:"rated_speed_mbps"`
	SpeedNote string `json:"rated_speed_source"`
	OperState string `json:"oper_state"`
	BusInfo   string `json:"bus_info,omitempty"`
	// Counted: netprof counts it with this selection; Mirror: its bytes
	// are inside MirrorOf's counters, so it is never counted.
	Counted  bool   `json:"counted"`
	Mirror   bool   `json:"mirror"`
	MirrorOf string `json:"mirror_of,omitempty"`
}

type groupJSON struct {
	Shape   string   `json:"shape"`
	Members []string `json:"members"`
	Counted []string `json:"counted"`
	Reason  string   `json:"reason"`
}

func writeIfacesJSON(w io.Writer, links []linkstats.Link, groups []ifaces.Group, sel ifaces.Selection, selErr error) error {
	out := struct {
		Interfaces []ifaceJSON `json:"interfaces"`
		Groups     []groupJSON `json:"groups"`
		WouldCount []string    `json:"would_count"`
		Why        []string    `json:"why"`
		Error      string      `json:"error,omitempty"`
	}{Interfaces: []ifaceJSON{}, Groups: []groupJSON{}, WouldCount: []string{}, Why: sel.Why}
	for _, l := range links {
		j := ifaceJSON{Name: l.Name, Index: l.Index, Driver: l.Driver, Kind: l.Kind, MAC: l.MAC, MTU: l.MTU, Master: l.Master,
			Lower: l.Lower, RxQueues: l.RxQueues, TxQueues: l.TxQueues, Channels: l.Channels, SpeedMbps: l.SpeedMbps,
			SpeedNote: l.SpeedNote, OperState: l.OperState, BusInfo: l.BusInfo}
		j.Counted = selected(sel, l.Index)
		for _, g := range groups {
			if g.Has(l.Index) && !g.Counts(l.Index) {
				j.Mirror, j.MirrorOf = true, g.Counted[0].Name
			}
		}
		out.Interfaces = append(out.Interfaces, j)
	}
	for _, g := range groups {
		gj := groupJSON{Shape: string(g.Shape), Reason: g.Reason}
		for _, m := range g.Members {
			gj.Members = append(gj.Members, m.Name)
		}
		for _, c := range g.Counted {
			gj.Counted = append(gj.Counted, c.Name)
		}
		out.Groups = append(out.Groups, gj)
	}
	for _, c := range sel.Counted() {
		out.WouldCount = append(out.WouldCount, c.Name)
	}
	if selErr != nil {
		out.Error = selErr.Error()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// isUsage reports whether err is the user's to fix (exit 2).
func isUsage(err error) bool {
	var nf *ifaces.NotFoundError
	return errors.As(err, &nf) || errors.Is(err, ifaces.ErrNoMatch)
}
