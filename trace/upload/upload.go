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
	"sync"

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

// Download copies the runs stored under prefix in the container (the
// layout Upload writes, or any tree whose run directories hold
// manifest.json) into dst, keeping the blob names below prefix as paths,
// and returns the local run directories. Only a run's manifest.json and its
// .parquet files are copied, and only for runs whose manifest is there;
// blob names that would leave dst are refused. Up to 8 blobs download at
// once.
func Download(ctx context.Context, cc *container.Client, prefix, dst string) ([]string, error) {
	prefix = strings.Trim(prefix, "/")
	listPrefix := prefix
	if listPrefix != "" {
		listPrefix += "/"
	}
	var names []string
	runs := map[string]bool{} // run directory (blob path) -> has a manifest
	pager := cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &listPrefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", listPrefix, err)
		}
		for _, it := range page.Segment.BlobItems {
			if it.Name == nil {
				continue
			}
			rel := strings.TrimPrefix(*it.Name, listPrefix)
			if !filepath.IsLocal(filepath.FromSlash(rel)) {
				return nil, fmt.Errorf("blob %q: name leaves the download directory", *it.Name)
			}
			if path.Base(rel) == trace.ManifestFile {
				runs[path.Dir(rel)] = true
			}
			if strings.HasSuffix(rel, ".parquet") || path.Base(rel) == trace.ManifestFile {
				names = append(names, rel)
			}
		}
	}
	var want []string
	for _, n := range names {
		if runOf(n, runs) != "" {
			want = append(want, n)
		}
	}
	g := make(chan struct{}, 8)
	errs := make([]error, len(want))
	var wg sync.WaitGroup
	for i, n := range want {
		wg.Add(1)
		g <- struct{}{}
		go func() {
			defer func() { <-g; wg.Done() }()
			errs[i] = downloadFile(ctx, cc.NewBlobClient(path.Join(prefix, n)), filepath.Join(dst, filepath.FromSlash(n)))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("download: %w", err)
	}
	out := make([]string, 0, len(runs))
	for r := range runs {
		out = append(out, filepath.Join(dst, filepath.FromSlash(r)))
	}
	sort.Strings(out)
	return out, nil
}

// runOf returns the run directory (a key of runs) name lies in: the run
// itself (manifest.json), or its parent or grandparent (v1 tables, v2
// parts); "" when none.
func runOf(name string, runs map[string]bool) string {
	d := path.Dir(name)
	for range 2 {
		if runs[d] {
			return d
		}
		d = path.Dir(d)
	}
	return ""
}

func downloadFile(ctx context.Context, bc *blob.Client, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = bc.DownloadFile(ctx, f, nil)
	return errors.Join(err, f.Close())
}
