package blob_test

import (
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/traffic/blob"
	"github.com/netprof/netprof/traffic/blob/blobtest"
)

// Every fourth GET answers 503 ServerBusy: netprof counts exactly as many
// 503 attempts as the server sent, retries each, and the download is
// still byte-exact.
func TestBusyCountedExactly(t *testing.T) {
	s := newServer(t)
	const size = 24<<20 + 12345
	s.PutSynthetic("cont", "big.bin", size)
	s.SetFault(blobtest.BusyEvery(4))
	o := fastRetries(blob.DefaultOptions())
	o.Concurrency, o.BlockSize, o.MaxRetries = 4, 1<<20, 5
	c := newClient(t, devEnv, o)
	out := filepath.Join(t.TempDir(), "big.bin")
	x, err := pull(t, c, blob.PullConfig{Targets: []blob.Target{target(t, s.URL+"/cont/big.bin")}, Sink: out})
	if err != nil {
		t.Fatal(err)
	}
	if shaFile(t, out) != shaSynthetic(t, size) {
		t.Fatal("pulled file differs from the blob")
	}
	st := sumStats(x)
	busy := s.Count(http.StatusServiceUnavailable, "ServerBusy")
	if busy == 0 || st.HTTP503 != uint64(busy) {
		t.Errorf("netprof counted %d 503 attempts, the server sent %d", st.HTTP503, busy)
	}
	if st.Codes503["ServerBusy"] != uint64(busy) || len(st.Codes503) != 1 {
		t.Errorf("503 codes %v, want ServerBusy=%d", st.Codes503, busy)
	}
	// Every 503 was retried once; nothing else failed.
	if st.Retries != st.HTTP503 || st.HTTP500 != 0 || st.HTTPOther != 0 {
		t.Errorf("retries %d, 500 %d, other %d; want retries = 503s = %d and no other failures",
			st.Retries, st.HTTP500, st.HTTPOther, st.HTTP503)
	}
	// One HEAD + 25 ranged GETs answered, plus the 503s.
	blocks := uint64((size + o.BlockSize - 1) / o.BlockSize)
	if got := uint64(s.Count(http.StatusPartialContent, "")); got != blocks {
		t.Errorf("server answered %d ranged GETs, want %d blocks", got, blocks)
	}
	if st.Requests != 1+blocks+st.HTTP503 || st.HTTP2xx != 1+blocks {
		t.Errorf("requests %d (2xx %d), want %d (2xx %d)", st.Requests, st.HTTP2xx, 1+blocks+st.HTTP503, 1+blocks)
	}
	if st.Bytes != size {
		t.Errorf("bytes %d, want %d", st.Bytes, size)
	}
	if n := st.Latency.Count(); n != st.Requests {
		t.Errorf("%d latency samples, want one per attempt (%d)", n, st.Requests)
	}
}

// With every GET busy and retries exhausted, Run fails naming the status,
// the error code, the blob and the attempts; the count still matches.
func TestRetriesExhausted(t *testing.T) {
	s := newServer(t)
	s.PutSynthetic("cont", "hot.bin", 3<<20)
	s.SetFault(blobtest.AlwaysBusy())
	o := fastRetries(blob.DefaultOptions())
	o.Concurrency, o.BlockSize, o.MaxRetries = 1, 1<<20, 2
	c := newClient(t, devEnv, o)
	x, err := pull(t, c, blob.PullConfig{Targets: []blob.Target{target(t, s.URL+"/cont/hot.bin")}})
	var re *blob.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a *blob.RequestError", err)
	}
	if re.Status != 503 || re.Code != "ServerBusy" || re.Attempts != 3 {
		t.Errorf("status %d code %q attempts %d, want 503 ServerBusy after 3", re.Status, re.Code, re.Attempts)
	}
	msg := err.Error()
	for _, want := range []string{"HTTP 503 ServerBusy", s.URL + "/cont/hot.bin", "bytes=0-1048575", "after 3 attempts"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error is not one line: %q", msg)
	}
	if st := sumStats(x); st.HTTP503 != 3 || s.Count(503, "ServerBusy") != 3 || st.Retries != 2 {
		t.Errorf("503: netprof %d, server %d, retries %d; want 3, 3, 2", st.HTTP503, s.Count(503, "ServerBusy"), st.Retries)
	}
}

// The block size sets every range; the concurrency is reached and never
// exceeded (each GET is held 25 ms so workers overlap).
func TestConcurrencyAndBlockSizeHonoured(t *testing.T) {
	s := newServer(t)
	const size, bs = 10<<20 + 1, 384 << 10
	s.PutSynthetic("cont", "b", size)
	s.SetFault(func(int64, *http.Request) (int, string) {
		time.Sleep(25 * time.Millisecond)
		return 0, ""
	})
	for _, conc := range []int{1, 3, 8} {
		s.ResetStats()
		o := blob.DefaultOptions()
		o.Concurrency, o.BlockSize = conc, bs
		c := newClient(t, devEnv, o)
		x, err := pull(t, c, blob.PullConfig{Targets: []blob.Target{target(t, s.URL+"/cont/b")}})
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]int64{bs: size / bs, size % bs: 1}
		if got := s.RangeSizes(); len(got) != 2 || got[bs] != want[bs] || got[size%bs] != 1 {
			t.Errorf("concurrency %d: range sizes %v, want %v", conc, got, want)
		}
		if got := s.MaxInFlight(); got != int64(conc) {
			t.Errorf("concurrency %d: %d GETs in flight at most", conc, got)
		}
		if st := sumStats(x); st.Requests != uint64(size/bs+2) {
			t.Errorf("concurrency %d: counted %d requests, want HEAD + %d GETs", conc, st.Requests, size/bs+1)
		}
	}
}

// Two blobs pulled at once into a directory; then the same blob from two
// replicas with --shard, each replica serving half the blocks.
func TestMultiTargetAndShard(t *testing.T) {
	s := newServer(t)
	s.PutSynthetic("cont1", "a.bin", 5<<20+3)
	s.PutSynthetic("cont2", "dir/b.bin", 7<<20)
	o := blob.DefaultOptions()
	o.Concurrency, o.BlockSize = 4, 1<<20
	c := newClient(t, devEnv, o)
	dir := t.TempDir() + "/"
	tgs := []blob.Target{target(t, s.URL+"/cont1/a.bin"), target(t, s.URL+"/cont2/dir/b.bin")}
	if _, err := pull(t, c, blob.PullConfig{Targets: tgs, Sink: dir}); err != nil {
		t.Fatal(err)
	}
	if shaFile(t, dir+"cont1/a.bin") != shaSynthetic(t, 5<<20+3) || shaFile(t, dir+"cont2/dir/b.bin") != shaSynthetic(t, 7<<20) {
		t.Error("a pulled file differs from its blob")
	}

	s.PutSynthetic("cont2", "a.bin", 5<<20+3) // a replica of c1/a.bin
	out := filepath.Join(t.TempDir(), "a.bin")
	x, err := pull(t, c, blob.PullConfig{Targets: []blob.Target{tgs[0], target(t, s.URL+"/cont2/a.bin")}, Shard: true, Sink: out})
	if err != nil {
		t.Fatal(err)
	}
	if shaFile(t, out) != shaSynthetic(t, 5<<20+3) {
		t.Error("sharded pull differs from the blob")
	}
	for _, ts := range x.Stats() {
		if ts.Requests != 1+3 { // HEAD + 3 of the 6 blocks
			t.Errorf("replica %s: %d requests, want 4", ts.Target.Display, ts.Requests)
		}
	}
	// Replicas of different sizes are refused before any GET.
	_, err = pull(t, c, blob.PullConfig{Targets: tgs, Shard: true})
	if err == nil || !strings.Contains(err.Error(), "replicas") {
		t.Errorf("shard over different sizes: %v", err)
	}
}

// A missing container or blob and a closed port fail in PreparePull with
// one line naming the problem.
func TestPrepareErrors(t *testing.T) {
	s := newServer(t)
	s.PutSynthetic("cont", "b", 10)
	o := fastRetries(blob.DefaultOptions())
	o.MaxRetries = 1
	c := newClient(t, devEnv, o)
	closed := newServer(t)
	closedURL := closed.URL
	closed.Close()
	for _, tc := range []struct{ url, want string }{
		{s.URL + "/nope/b", "HTTP 404 ContainerNotFound"},
		{s.URL + "/cont/nope", "HTTP 404 BlobNotFound"},
		{closedURL + "/cont/b", "no response: dial tcp"},
	} {
		_, err := pull(t, c, blob.PullConfig{Targets: []blob.Target{target(t, tc.url)}})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line with %q", tc.url, err, tc.want)
		}
	}
}
