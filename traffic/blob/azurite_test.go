package blob_test

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/netprof/netprof/traffic/blob"
	"github.com/netprof/netprof/traffic/blob/blobtest"
)

// newContainer creates container name in the emulator with the plain SDK.
func newContainer(t *testing.T, c *blob.Client, az *blobtest.Azurite, name string) blob.Target {
	t.Helper()
	ct, err := blob.ParseContainer(az.Endpoint + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := c.ContainerClient(ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cc.Create(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return ct
}

func blobIn(t *testing.T, ct blob.Target, name string) blob.Target {
	t.Helper()
	tg, err := ct.BlobURL(name)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// Push a file as staged blocks, check the committed block list, pull it
// back with another block size: byte-exact, one ranged GET per block.
func TestAzuritePushPull(t *testing.T) {
	az := blobtest.StartAzurite(t)
	o := blob.DefaultOptions()
	o.Concurrency, o.BlockSize = 3, 4<<20
	c := newClient(t, az.Env(), o)
	ct := newContainer(t, c, az, "data")
	src := filepath.Join(t.TempDir(), "src.bin")
	data := make([]byte, 21<<20+777)
	rand.Read(data)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tg := blobIn(t, ct, "dir/src.bin")
	ctx := context.Background()
	x := mustPush(t, c, blob.PushConfig{Targets: []blob.Target{tg}, File: src})
	st := sumStats(x)
	// 6 Put Block + 1 Put Block List; the HEAD's 404 BlobNotFound (a new
	// blob) is an expected answer, not a request of the transfer.
	if st.Requests != 7 || st.HTTP2xx != 7 || st.HTTPOther != 0 || st.Expected != 1 || st.Bytes != uint64(len(data)) {
		t.Errorf("push counted %+v; want 7 requests, all 2xx, 0 other, 1 expected (the 404 of the new blob), %d bytes", st, len(data))
	}
	if p := x.Prepared(); p[0].CreatedContainer || p[0].BlobExisted {
		t.Errorf("Prepared %+v: the container existed, the blob did not", p)
	}
	bb, err := blockblob.NewClientWithSharedKeyCredential(tg.URL, mustKey(t, az), nil)
	if err != nil {
		t.Fatal(err)
	}
	bl, err := bb.GetBlockList(ctx, blockblob.BlockListTypeCommitted, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(bl.CommittedBlocks); n != 6 {
		t.Errorf("%d committed blocks, want 6 of 4 MiB", n)
	}
	for i, b := range bl.CommittedBlocks {
		if want := min(int64(4<<20), int64(len(data))-int64(i)*4<<20); *b.Size != want {
			t.Errorf("block %d: %d bytes, want %d", i, *b.Size, want)
		}
	}

	o.BlockSize = 3 << 20
	c2 := newClient(t, az.Env(), o)
	out := filepath.Join(t.TempDir(), "out.bin")
	x, err = pull(t, c2, blob.PullConfig{Targets: []blob.Target{tg}, Sink: out})
	if err != nil {
		t.Fatal(err)
	}
	if shaFile(t, out) != shaFile(t, src) {
		t.Fatal("pulled blob differs from the pushed file")
	}
	if st := sumStats(x); st.Requests != 1+8 || st.HTTP2xx != 9 {
		t.Errorf("pull counted %d requests (%d 2xx), want HEAD + 8 ranged GETs of 3 MiB", st.Requests, st.HTTP2xx)
	}
}

// A push to a container that does not exist creates it: the container
// exists afterwards, the bytes read back, and the existence check's 404
// ContainerNotFound is an expected answer (0 other errors).
func TestAzuritePushNewContainer(t *testing.T) {
	az := blobtest.StartAzurite(t)
	o := blob.DefaultOptions()
	o.Concurrency, o.BlockSize = 2, 1<<20
	c := newClient(t, az.Env(), o)
	ctx := context.Background()
	cc, err := container.NewClientWithSharedKeyCredential(az.Endpoint+"/nptest", mustKey(t, az), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cc.GetProperties(ctx, nil); !blob.IsCode(err, "ContainerNotFound") {
		t.Fatalf("container nptest before the push: %v, want ContainerNotFound", err)
	}
	const size = 3<<20 + 5
	tg := target(t, az.Endpoint+"/nptest/test1.bin")
	x := mustPush(t, c, blob.PushConfig{Targets: []blob.Target{tg}, Size: size})
	if _, err := cc.GetProperties(ctx, nil); err != nil {
		t.Fatalf("container nptest after the push: %v", err)
	}
	st := sumStats(x)
	// Create Container + 4 Put Block + Put Block List.
	if st.Requests != 6 || st.HTTP2xx != 6 || st.HTTPOther != 0 || st.Expected != 1 {
		t.Errorf("push counted %+v; want 6 requests, all 2xx, 0 other, 1 expected 404", st)
	}
	if got := x.CreatedContainers(); len(got) != 1 || got[0] != az.Endpoint+"/nptest" {
		t.Errorf("CreatedContainers %q", got)
	}
	out := filepath.Join(t.TempDir(), "out.bin")
	if _, err := pull(t, c, blob.PullConfig{Targets: []blob.Target{tg}, Sink: out}); err != nil {
		t.Fatal(err)
	}
	if shaFile(t, out) != shaSynthetic(t, size) {
		t.Fatal("pulled blob differs from what was pushed")
	}
}

// One synthetic blob stored in two containers, pulled sharded: byte-exact,
// blocks split evenly between the replicas.
func TestAzuriteShardedPull(t *testing.T) {
	az := blobtest.StartAzurite(t)
	o := blob.DefaultOptions()
	o.Concurrency, o.BlockSize = 4, 2<<20
	c := newClient(t, az.Env(), o)
	const size = 16<<20 + 5
	var reps []blob.Target
	for _, name := range []string{"replica-a", "replica-b"} {
		tg := blobIn(t, newContainer(t, c, az, name), "big.bin")
		mustPush(t, c, blob.PushConfig{Targets: []blob.Target{tg}, Size: size, DeleteAfter: false})
		reps = append(reps, tg)
	}
	out := filepath.Join(t.TempDir(), "big.bin")
	x, err := pull(t, c, blob.PullConfig{Targets: reps, Shard: true, Sink: out})
	if err != nil {
		t.Fatal(err)
	}
	if shaFile(t, out) != shaSynthetic(t, size) {
		t.Fatal("sharded pull differs from the synthetic content")
	}
	for _, ts := range x.Stats() {
		// 9 blocks: replica a serves 0,2,4,6,8, replica b 1,3,5,7.
		want := uint64(1 + 5 - ts.Index)
		if ts.Requests != want || ts.HTTP2xx != want {
			t.Errorf("replica %d: %d requests (%d 2xx), want %d", ts.Index, ts.Requests, ts.HTTP2xx, want)
		}
	}
}

// A wrong key (403), a missing container (404) and a closed port fail in
// prepare with one line that holds no secret.
func TestAzuriteBadInputs(t *testing.T) {
	az := blobtest.StartAzurite(t)
	wrongKey := strings.Repeat("A", 40) + "wrongkeywrongkey" + strings.Repeat("B", 32)
	bad := env(map[string]string{blob.EnvAccount: blobtest.DevAccount, blob.EnvKey: wrongKey})
	o := fastRetries(blob.DefaultOptions())
	o.MaxRetries = 1
	good := newClient(t, az.Env(), o)
	newContainer(t, good, az, "exists")
	for _, tc := range []struct {
		name   string
		getenv func(string) string
		url    string
		want   string
		status int
	}{
		{"wrong key", bad, az.Endpoint + "/exists/b", "HTTP 403", 403},
		{"missing container", az.Env(), az.Endpoint + "/missing/b", "HTTP 404 ContainerNotFound", 404},
		{"closed port", az.Env(), "http://127.0.0.1:1/" + blobtest.DevAccount + "/cont/b", "no response", 0},
	} {
		c := newClient(t, tc.getenv, o)
		_, err := pull(t, c, blob.PullConfig{Targets: []blob.Target{target(t, tc.url)}})
		var re *blob.RequestError
		if !errors.As(err, &re) || re.Status != tc.status {
			t.Errorf("%s: %v, want a RequestError with status %d", tc.name, err, tc.status)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") || strings.Contains(msg, wrongKey[:20]) {
			t.Errorf("%s: %q, want one line with %q and no key", tc.name, msg, tc.want)
		}
	}
}

// Bench creates its container, measures, and removes everything.
func TestAzuriteBench(t *testing.T) {
	az := blobtest.StartAzurite(t)
	o := blob.DefaultOptions()
	o.Concurrency, o.BlockSize = 4, 1<<20
	c := newClient(t, az.Env(), o)
	ctx := context.Background()
	ct, _ := blob.ParseContainer(az.Endpoint + "/benchc")
	for _, mode := range []string{blob.KindPull, blob.KindPush} {
		b, err := c.PrepareBench(ctx, blob.BenchConfig{Container: ct, Mode: mode, Count: 2, Size: 3<<20 + 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Measure.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if st := sumStats(b.Measure); st.Bytes != 2*(3<<20+1) {
			t.Errorf("%s: %d bytes moved, want %d", mode, st.Bytes, 2*(3<<20+1))
		}
		if err := b.Cleanup(ctx); err != nil {
			t.Fatal(err)
		}
		cc, _ := container.NewClientWithSharedKeyCredential(ct.URL, mustKey(t, az), nil)
		if _, err := cc.GetProperties(ctx, nil); !blob.IsCode(err, "ContainerNotFound") {
			t.Errorf("%s: the bench's container still exists after cleanup (%v)", mode, err)
		}
	}
}

func mustKey(t *testing.T, az *blobtest.Azurite) *container.SharedKeyCredential {
	t.Helper()
	k, err := container.NewSharedKeyCredential(az.Account, az.Key)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
