package blob_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/netprof/netprof/traffic/blob"
)

func TestParseTarget(t *testing.T) {
	tg, err := blob.ParseTarget("https://acct.blob.core.windows.net/cont/a/b.bin?sv=2024-01-01&sp=r&sig=c2VjcmV0%2Bc2ln")
	if err != nil {
		t.Fatal(err)
	}
	if tg.Account != "acct" || tg.Container != "cont" || tg.Blob != "a/b.bin" || !tg.SAS || tg.Host != "acct.blob.core.windows.net:443" {
		t.Errorf("parsed %+v", tg)
	}
	if tg.Display != "https://acct.blob.core.windows.net/cont/a/b.bin?REDACTED" {
		t.Errorf("Display %q", tg.Display)
	}
	tg, err = blob.ParseTarget("http://127.0.0.1:10000/devstoreaccount1/cont/b")
	if err != nil || tg.Account != "devstoreaccount1" || tg.Container != "cont" || tg.Blob != "b" || tg.SAS {
		t.Errorf("emulator URL: %+v, %v", tg, err)
	}
	for _, bad := range []string{"", "not a url", "ftp://h/c/b", "https://acct.blob.core.windows.net/", "https://acct.blob.core.windows.net/c",
		"https://user:pw@acct.blob.core.windows.net/cc/b", "http://127.0.0.1:1/acct", "https://a.blob.core.windows.net/UPPER/b",
		"https://a.blob.core.windows.net/a--b/x"} {
		if _, err := blob.ParseTarget(bad); !errors.Is(err, blob.ErrBadURL) {
			t.Errorf("ParseTarget(%q) = %v, want ErrBadURL", bad, err)
		} else if strings.Contains(err.Error(), "pw@") {
			t.Errorf("error %q shows the password", err)
		}
	}
}

func TestBlobURLKeepsSAS(t *testing.T) {
	ct, err := blob.ParseContainer("https://a.blob.core.windows.net/cont/pre/fix?sv=1&sig=abcd")
	if err != nil || ct.Blob != "pre/fix" {
		t.Fatalf("%+v %v", ct, err)
	}
	tg, err := ct.BlobURL("pre/fix/x")
	if err != nil {
		t.Fatal(err)
	}
	if tg.URL != "https://a.blob.core.windows.net/cont/pre/fix/x?sv=1&sig=abcd" || tg.Blob != "pre/fix/x" || !tg.SAS {
		t.Errorf("BlobURL = %+v", tg)
	}
	et, _ := blob.ParseContainer("http://127.0.0.1:5/devstoreaccount1/cont")
	if tg, _ := et.BlobURL("n"); tg.URL != "http://127.0.0.1:5/devstoreaccount1/cont/n" {
		t.Errorf("emulator BlobURL = %q", tg.URL)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://a/c/b":                          "https://a/c/b",
		"https://a/c/b?sv=1&sig=S3cr3t":          "https://a/c/b?REDACTED",
		"https://a/c/b?snapshot=2024&sig=S3cr3t": "https://a/c/b?snapshot=2024&REDACTED",
		"sv=1&sig=S3cr3t":                        "REDACTED",
		"--upload=https://a/c?sig=S3cr3t&se=x":   "--upload=https://a/c?REDACTED",
	} {
		if got := blob.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	args := blob.RedactArgs([]string{"netprof", "--concurrency", "4", "https://a/c/b?sig=S3cr3t"})
	if strings.Contains(strings.Join(args, " "), "S3cr3t") || args[2] != "4" {
		t.Errorf("RedactArgs = %q", args)
	}
}

func TestCredentialsFromEnv(t *testing.T) {
	const key = "c2VjcmV0LWtleS1zZWNyZXQta2V5LXNlY3JldC1rZXktc2VjcmV0LWtleQ=="
	cs := "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + key + ";EndpointSuffix=core.windows.net"
	c, err := blob.CredentialsFromEnv(blob.AuthAuto, env(map[string]string{blob.EnvConnectionString: cs}))
	if err != nil {
		t.Fatal(err)
	}
	msg := "failed with " + key + " in " + cs
	if got := c.Redact(msg); strings.Contains(got, key) || strings.Contains(got, "secret") || !strings.Contains(got, "REDACTED") {
		t.Errorf("Redact = %q", got)
	}
	// A key that is not base64 is refused without quoting it.
	_, err = blob.CredentialsFromEnv(blob.AuthAuto, env(map[string]string{blob.EnvAccount: "a", blob.EnvKey: "not base64 !!"}))
	if err == nil || strings.Contains(err.Error(), "not base64 !!") {
		t.Errorf("bad key: %v", err)
	}
	// A key without its account, and shared-key mode without a key.
	if _, err := blob.CredentialsFromEnv(blob.AuthAuto, env(map[string]string{blob.EnvKey: key})); err == nil {
		t.Error("a key without AZURE_STORAGE_ACCOUNT was accepted")
	}
	if _, err := blob.CredentialsFromEnv(blob.AuthSharedKey, env(nil)); !errors.Is(err, blob.ErrNoCredentials) {
		t.Errorf("shared-key without a key: %v", err)
	}
	if _, err := blob.CredentialsFromEnv("magic", env(nil)); err == nil {
		t.Error("an unknown auth mode was accepted")
	}
}

// Without credentials an http URL is refused before any request (Entra ID
// needs https); a key for another account is refused too.
func TestNoCredentials(t *testing.T) {
	s := newServer(t)
	s.PutSynthetic("cont", "b", 1)
	c := newClient(t, env(nil), blob.DefaultOptions())
	_, err := pull(t, c, blob.PullConfig{Targets: []blob.Target{target(t, s.URL+"/cont/b")}})
	if !errors.Is(err, blob.ErrNoCredentials) || !strings.Contains(err.Error(), blob.EnvKey) {
		t.Errorf("no credentials: %v", err)
	}
	other := env(map[string]string{blob.EnvAccount: "other", blob.EnvKey: "c2VjcmV0"})
	c = newClient(t, other, blob.DefaultOptions())
	_, err = pull(t, c, blob.PullConfig{Targets: []blob.Target{target(t, s.URL+"/cont/b")}})
	if !errors.Is(err, blob.ErrNoCredentials) || !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("key of another account: %v", err)
	}
	if n := s.Count(200, "") + s.Count(404, ""); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

func TestSynthetic(t *testing.T) {
	s := blob.Synthetic{Size: 3<<20 + 11}
	whole := make([]byte, s.Size)
	if n, err := s.ReadAt(whole, 0); n != len(whole) || err != nil {
		t.Fatalf("ReadAt whole: %d %v", n, err)
	}
	// Any sub-range reads the same bytes; past the end gives io.EOF.
	for _, r := range [][2]int64{{1, 5}, {1<<20 + 3, 1 << 20}, {s.Size - 9, 9}} {
		p := make([]byte, r[1])
		if n, _ := s.ReadAt(p, r[0]); n != len(p) || string(p) != string(whole[r[0]:r[0]+r[1]]) {
			t.Errorf("ReadAt(%d, %d) differs", r[0], r[1])
		}
	}
	if n, err := s.ReadAt(make([]byte, 20), s.Size-10); n != 10 || err == nil {
		t.Errorf("read past the end: %d %v", n, err)
	}
	// The period is not a power of two: blocks of 1 MiB differ.
	if string(whole[:1<<20]) == string(whole[1<<20:2<<20]) {
		t.Error("1 MiB blocks repeat")
	}
}
