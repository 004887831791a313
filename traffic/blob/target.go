package blob

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
)

// ErrBadURL is wrapped by ParseTarget and ParseContainer when a URL is not
// a usable Blob storage URL.
var ErrBadURL = errors.New("bad blob URL")

// Target is one blob (or container) URL, parsed.
type Target struct {
	// URL is the URL as given, SAS included: pass it to the SDK only.
	URL string
	// Display is URL without its SAS (see Redact): safe to print and
	// record.
	Display string
	// Host is the endpoint's host:port (port 443 or 80 implied by the
	// scheme when absent).
	Host string
	// Account is the storage account: the first host label
	// (account.blob.core.windows.net) or, for IP-style endpoints such as
	// Azurite at 127.0.0.1:10000/devstoreaccount1, the first path element.
	Account   string
	Container string
	// Blob is the blob name (may contain '/'); for a container URL, an
	// optional name prefix.
	Blob string
	// SAS reports whether the URL carries a SAS token (a "sig" parameter).
	SAS bool
	// sasQuery is the SAS query string, kept for redaction.
	sasQuery string
	// sig is the SAS signature value, kept for redaction.
	sig string
	// ipStyle is set for emulator URLs with the account in the path.
	ipStyle bool
}

// ParseTarget parses a blob URL:
// https://ACCOUNT.blob.core.windows.net/CONTAINER/BLOB[?SAS] or, for an
// emulator, http://127.0.0.1:PORT/ACCOUNT/CONTAINER/BLOB. It returns an
// error wrapping ErrBadURL that names what is missing; the error shows the
// URL without its SAS.
func ParseTarget(raw string) (Target, error) {
	t, err := parse(raw)
	if err == nil && t.Blob == "" {
		err = fmt.Errorf("%w %q: no blob name (want SCHEME://HOST/CONTAINER/BLOB)", ErrBadURL, t.Display)
	}
	return t, err
}

// ParseContainer parses a container URL, optionally followed by a name
// prefix: https://ACCOUNT.blob.core.windows.net/CONTAINER[/PREFIX][?SAS].
// Target.Blob holds the prefix (without a trailing '/').
func ParseContainer(raw string) (Target, error) {
	t, err := parse(raw)
	t.Blob = strings.Trim(t.Blob, "/")
	return t, err
}

func parse(raw string) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return Target{}, fmt.Errorf("%w %q: want SCHEME://HOST/CONTAINER/BLOB", ErrBadURL, Redact(raw))
	}
	disp := Redact(raw)
	if u.Scheme != "https" && u.Scheme != "http" {
		return Target{}, fmt.Errorf("%w %q: scheme %q, want https (or http for a local emulator)", ErrBadURL, disp, u.Scheme)
	}
	if u.User != nil {
		return Target{}, fmt.Errorf("%w %q: user information in a blob URL is not supported", ErrBadURL, disp)
	}
	parts, err := blob.ParseURL(raw)
	if err != nil {
		return Target{}, fmt.Errorf("%w %q: %v", ErrBadURL, disp, err)
	}
	t := Target{URL: raw, Display: disp, Container: parts.ContainerName, Blob: parts.BlobName}
	t.Host = u.Host
	if u.Port() == "" {
		port := "443"
		if u.Scheme == "http" {
			port = "80"
		}
		t.Host = net.JoinHostPort(u.Hostname(), port)
	}
	t.Account = parts.IPEndpointStyleInfo.AccountName
	t.ipStyle = t.Account != ""
	if t.Account == "" {
		t.Account, _, _ = strings.Cut(u.Hostname(), ".")
	}
	if t.Container == "" {
		return t, fmt.Errorf("%w %q: no container (want SCHEME://HOST/CONTAINER/BLOB)", ErrBadURL, disp)
	}
	if !validContainer(t.Container) {
		return t, fmt.Errorf("%w %q: container name %q: want 3-63 lowercase letters, digits and single hyphens", ErrBadURL, disp, t.Container)
	}
	if sig := parts.SAS.Signature(); sig != "" {
		t.SAS, t.sig = true, sig
		t.sasQuery = parts.SAS.Encode()
	}
	return t, nil
}

// validContainer applies the service's container naming rules ($root and
// $web are special containers).
func validContainer(n string) bool {
	if n == "$root" || n == "$web" || n == "$logs" {
		return true
	}
	if len(n) < 3 || len(n) > 63 || n[0] == '-' || n[len(n)-1] == '-' || strings.Contains(n, "--") {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// BlobURL returns the URL of the blob name inside container target t,
// keeping t's SAS (a container SAS is valid for its blobs).
func (t Target) BlobURL(name string) (Target, error) {
	cu, err := t.containerURL()
	if err != nil {
		return Target{}, err
	}
	u, _ := url.Parse(cu)
	u.Path += "/" + name
	return ParseTarget(u.String())
}

// containerURL returns the URL of t's container, keeping t's query.
func (t Target) containerURL() (string, error) {
	u, err := url.Parse(t.URL)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	u.Path = "/" + t.Container
	if t.ipStyle {
		u.Path = "/" + t.Account + "/" + t.Container
	}
	u.RawPath = ""
	return u.String(), nil
}

// keepParams are query parameters that are not part of a SAS and are kept
// by Redact.
var keepParams = map[string]bool{"snapshot": true, "versionid": true}

// Redact returns raw without its SAS and user information: the query
// parameters other than snapshot and versionid are replaced by a single
// "REDACTED" marker, user:password@ by "REDACTED@". A
// string that does not parse as a URL is returned with everything after
// the first '?' replaced the same way.
func Redact(raw string) string {
	raw = redactUserinfo(raw)
	base, query, ok := strings.Cut(raw, "?")
	if !ok {
		if strings.Contains(strings.ToLower(raw), "sig=") {
			return "REDACTED"
		}
		return raw
	}
	vals, err := url.ParseQuery(query)
	if err != nil {
		return base + "?REDACTED"
	}
	var kept []string
	redacted := false
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		vs := vals[k]
		if !keepParams[strings.ToLower(k)] {
			redacted = true
			continue
		}
		for _, v := range vs {
			kept = append(kept, url.QueryEscape(k)+"="+url.QueryEscape(v))
		}
	}
	if redacted {
		kept = append(kept, "REDACTED")
	}
	if len(kept) == 0 {
		return base
	}
	return base + "?" + strings.Join(kept, "&")
}

// redactUserinfo replaces a URL's user:password@ with REDACTED@.
func redactUserinfo(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw
	}
	rest := raw[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		return raw[:i+3] + "REDACTED@" + rest[at+1:]
	}
	return raw
}

// RedactArgs returns args with every argument that looks like a URL
// passed through Redact (for argv recorded in a manifest).
func RedactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.Contains(a, "://") || strings.Contains(a, "sig=") {
			out[i] = Redact(a)
		}
	}
	return out
}
