// Package upload copies a recorded run directory to an Azure Blob
// container in a Hive-style layout, so a store of many runs can be queried
// by partition (DuckDB, Spark, Synapse: hive_partitioning):
//
//	[PREFIX/]host=HOST/date=YYYY-MM-DD/run=RUN/manifest.json
//	[PREFIX/]host=HOST/date=YYYY-MM-DD/run=RUN/traffic/part-000000.parquet
//	...
//
// HOST is the manifest's host, the date is the run's start in UTC, RUN is
// the run directory's base name. The files are copied byte for byte:
// trace remains the only package that writes Parquet.
package upload

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/netprof/netprof/trace"
)

// ErrNotClosed is wrapped by Upload when the run is still being recorded
// (its Parquet files have no footer yet).
var ErrNotClosed = errors.New("run not closed")

// Layout returns the blob-name prefix of a run: PREFIX/host=HOST/
// date=YYYY-MM-DD/run=RUN (no trailing '/'; PREFIX may be empty).
// Partition values are escaped (%XX) outside [A-Za-z0-9._-].
func Layout(prefix string, m trace.Manifest, runName string) string {
	host := m.Host
	if host == "" {
		host = "unknown"
	}
	p := fmt.Sprintf("host=%s/date=%s/run=%s", escape(host), m.Start.UTC().Format("2006-01-02"), escape(runName))
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		p = prefix + "/" + p
	}
	return p
}

// escape percent-encodes every byte outside [A-Za-z0-9._-], so a
// partition value holds no '/', '=' or space.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// Upload copies every regular file of the run directory dir into the
// container under Layout(prefix, manifest, base(dir)), the manifest last
// (a reader that sees manifest.json finds the tables), and returns the
// blob names written. A missing container is created; existing blobs of
// the same name are replaced. It
// returns an error wrapping ErrNotClosed for a run still "recording", and
// otherwise the first failure, naming the file; the local run is never
// modified.
func Upload(ctx context.Context, cc *container.Client, prefix, dir string) ([]string, error) {
	run, err := trace.Open(dir)
	if err != nil {
		return nil, err
	}
	if run.Manifest.Status == trace.StatusRecording {
		return nil, fmt.Errorf("upload %s: %w (status %q)", dir, ErrNotClosed, trace.StatusRecording)
	}
	files, err := runFiles(dir)
	if err != nil {
		return nil, err
	}
	base := Layout(prefix, run.Manifest, filepath.Base(filepath.Clean(dir)))
	var names []string
	for i, f := range files {
		name := path.Join(base, f)
		err := uploadFile(ctx, cc.NewBlockBlobClient(name), filepath.Join(dir, filepath.FromSlash(f)))
		if i == 0 && bloberror.HasCode(err, bloberror.ContainerNotFound) {
			if _, cerr := cc.Create(ctx, nil); cerr != nil && !bloberror.HasCode(cerr, bloberror.ContainerAlreadyExists) {
				return nil, fmt.Errorf("create container: %w", cerr)
			}
			err = uploadFile(ctx, cc.NewBlockBlobClient(name), filepath.Join(dir, filepath.FromSlash(f)))
		}
		if err != nil {
			return names, fmt.Errorf("upload %s: %w", f, err)
		}
		names = append(names, name)
	}
	return names, nil
}

// runFiles lists the run's files as slash-separated relative paths: its
// top-level regular files and each table's files (trace.TablePaths: closed
// parts, in order), sorted, manifest.json last; hidden files (a manifest
// being rewritten, a part being written) are skipped.
func runFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	var files []string
	for _, e := range ents {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") && e.Name() != trace.ManifestFile {
			files = append(files, e.Name())
		}
	}
	for _, table := range trace.TableFiles {
		if slices.Contains(files, table) { // a v1 run's single file
			continue
		}
		paths, err := trace.TablePaths(dir, table)
		if errors.Is(err, fs.ErrNotExist) { // a table older runs lack
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("upload: %w", err)
		}
		for _, p := range paths {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return nil, fmt.Errorf("upload: %w", err)
			}
			files = append(files, filepath.ToSlash(rel))
		}
	}
	sort.Strings(files)
	return append(files, trace.ManifestFile), nil
}

func uploadFile(ctx context.Context, bb *blockblob.Client, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	ct := "application/vnd.apache.parquet"
	if strings.HasSuffix(p, ".json") {
		ct = "application/json"
	}
	_, err = bb.UploadFile(ctx, f, &blockblob.UploadFileOptions{
		BlockSize: 8 << 20, Concurrency: 4,
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: &ct},
	})
	return err
}
