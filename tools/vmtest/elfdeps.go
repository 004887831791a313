package main

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// libDirs are searched, in order, for a DT_NEEDED library that no RUNPATH
// finds: the dynamic loader's defaults on Debian (multiarch first).
var libDirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib",
}

// elfDeps returns what the ELF executable or library at path needs at run
// time on this machine: its program interpreter and every DT_NEEDED
// library, transitively, as the host paths the loader would open (not
// dereferenced: the guest gets each file at the same path). A static
// executable needs nothing. The error names a library that cannot be found.
func elfDeps(path string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	queue := []string{path}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		interp, needed, err := elfNeeds(cur)
		if err != nil {
			return nil, err
		}
		for _, dep := range append(interp, needed...) {
			if !seen[dep] {
				seen[dep] = true
				out = append(out, dep)
				queue = append(queue, dep)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// elfNeeds returns the interpreter (if any) and the resolved DT_NEEDED
// libraries of one ELF file.
func elfNeeds(path string) (interp, needed []string, err error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open ELF %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			data := make([]byte, p.Filesz)
			if _, err := p.ReadAt(data, 0); err != nil {
				return nil, nil, fmt.Errorf("%s: read PT_INTERP: %w", path, err)
			}
			interp = append(interp, strings.TrimRight(string(data), "\x00"))
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: DT_NEEDED: %w", path, err)
	}
	runpath := searchPath(f, path)
	for _, lib := range libs {
		p, err := findLib(lib, runpath, f)
		if err != nil {
			return nil, nil, fmt.Errorf("%s needs %s: %w", path, lib, err)
		}
		needed = append(needed, p)
	}
	return interp, needed, nil
}

// searchPath returns f's DT_RUNPATH (or DT_RPATH) directories with $ORIGIN
// expanded, followed by libDirs.
func searchPath(f *elf.File, path string) []string {
	var dirs []string
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		vals, _ := f.DynString(tag)
		for _, v := range vals {
			for _, d := range strings.Split(v, ":") {
				d = strings.ReplaceAll(d, "$ORIGIN", filepath.Dir(path))
				d = strings.ReplaceAll(d, "${ORIGIN}", filepath.Dir(path))
				if d != "" {
					dirs = append(dirs, d)
				}
			}
		}
		if len(dirs) > 0 {
			break
		}
	}
	return append(dirs, libDirs...)
}

var errLibNotFound = errors.New("library not found")

// findLib returns the first file named lib in dirs that is an ELF file of
// the same class and machine as want (the loader skips others too).
func findLib(lib string, dirs []string, want *elf.File) (string, error) {
	if strings.Contains(lib, "/") {
		return lib, nil
	}
	for _, d := range dirs {
		p := filepath.Join(d, lib)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		ok := f.Class == want.Class && f.Machine == want.Machine
		f.Close()
		if ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w in %s", errLibNotFound, strings.Join(dirs, ":"))
}
