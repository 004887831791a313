package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrSchemaVersion is wrapped by Open when manifest.json declares a
// schema_version this package cannot read (newer than SchemaVersion, or
// missing).
var ErrSchemaVersion = errors.New("unsupported trace schema version")

// normalizeManifest returns m with SchemaVersion set, times in UTC and nil
// lists replaced by empty ones (so manifest.json holds [] and {}, not null).
func normalizeManifest(m Manifest) Manifest {
	m.SchemaVersion = SchemaVersion
	m.Start = m.Start.UTC()
	m.End = m.End.UTC()
	if m.Argv == nil {
		m.Argv = []string{}
	}
	if m.Interfaces == nil {
		m.Interfaces = []Interface{}
	}
	if m.Probes == nil {
		m.Probes = []Probe{}
	}
	if m.Maps == nil {
		m.Maps = []BPFMap{}
	}
	if m.Config == nil {
		m.Config = map[string]any{}
	}
	return m
}

func marshalManifest(m Manifest) ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	return append(b, '\n'), nil
}

// writeManifestExclusive creates path, failing with an error wrapping
// os.ErrExist if it exists: creating the manifest claims the directory.
func writeManifestExclusive(path string, m Manifest) (err error) {
	b, err := marshalManifest(m)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", ManifestFile, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", ManifestFile, cerr)
		}
	}()
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", ManifestFile, err)
	}
	return nil
}

// writeManifestAtomic replaces dir/manifest.json via a synced temporary file
// and a rename, so readers see the old or the new manifest, never a mix.
func writeManifestAtomic(dir string, m Manifest) error {
	b, err := marshalManifest(m)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".manifest-*.json")
	if err != nil {
		return fmt.Errorf("create temp manifest: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	_, werr := tmp.Write(b)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("write temp manifest: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("chmod temp manifest: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, ManifestFile)); err != nil {
		return fmt.Errorf("rename manifest: %w", err)
	}
	return nil
}

// readManifest reads dir/manifest.json and checks its schema version.
func readManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return m, fmt.Errorf("open run %s: no readable %s (not a netprof run directory?): %w",
			dir, ManifestFile, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("open run %s: decode %s: %w", dir, ManifestFile, err)
	}
	if m.SchemaVersion < 1 || m.SchemaVersion > SchemaVersion {
		return m, fmt.Errorf("open run %s: schema_version %d, this netprof reads 1..%d: %w",
			dir, m.SchemaVersion, SchemaVersion, ErrSchemaVersion)
	}
	m.Start, m.End = m.Start.UTC(), m.End.UTC()
	return m, nil
}
