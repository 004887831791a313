package blob

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
)

// AuthMode selects how requests are authorised.
type AuthMode string

// Authorisation modes.
const (
	// AuthAuto uses, in order: a SAS in the URL, a shared key from
	// AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT +
	// AZURE_STORAGE_KEY, a SAS from the connection string, then
	// DefaultAzureCredential.
	AuthAuto AuthMode = "auto"
	// AuthSharedKey requires a shared key from the environment.
	AuthSharedKey AuthMode = "shared-key"
	// AuthSAS requires a SAS, in the URL or the connection string.
	AuthSAS AuthMode = "sas"
	// AuthEntra uses azidentity.DefaultAzureCredential (Microsoft Entra
	// ID: environment, workload or managed identity, Azure CLI...); it
	// needs https.
	AuthEntra AuthMode = "entra"
	// AuthAnonymous sends no credentials (public containers).
	AuthAnonymous AuthMode = "anonymous"
)

// AuthModes lists the valid AuthMode values.
var AuthModes = []AuthMode{AuthAuto, AuthSharedKey, AuthSAS, AuthEntra, AuthAnonymous}

// Environment variables read by CredentialsFromEnv.
const (
	EnvConnectionString = "AZURE_STORAGE_CONNECTION_STRING"
	EnvAccount          = "AZURE_STORAGE_ACCOUNT"
	EnvKey              = "AZURE_STORAGE_KEY"
)

// ErrNoCredentials is wrapped when no credentials fit the mode and URL.
var ErrNoCredentials = errors.New("no credentials")

// Credentials are the secrets a run may use. They are read from the
// environment once; Redact removes every one of them from a string.
type Credentials struct {
	mode    AuthMode
	account string
	key     *blob.SharedKeyCredential
	// keySource names where the key came from, for messages.
	keySource string
	connSAS   string

	mu      sync.Mutex
	token   azcore.TokenCredential
	secrets []string
}

// CredentialsFromEnv reads credentials for mode from getenv (os.Getenv in
// production): AZURE_STORAGE_CONNECTION_STRING (AccountName + AccountKey,
// or SharedAccessSignature), else AZURE_STORAGE_ACCOUNT +
// AZURE_STORAGE_KEY. Errors never contain the secrets. It returns an
// error wrapping ErrNoCredentials when mode is AuthSharedKey and there is
// no key.
func CredentialsFromEnv(mode AuthMode, getenv func(string) string) (*Credentials, error) {
	if mode == "" {
		mode = AuthAuto
	}
	if !validMode(mode) {
		return nil, fmt.Errorf("unknown auth mode %q (want one of %v)", mode, AuthModes)
	}
	c := &Credentials{mode: mode}
	if cs := getenv(EnvConnectionString); cs != "" {
		c.addSecret(cs)
		kv := parseConnectionString(cs)
		c.account, c.connSAS = kv["accountname"], strings.TrimPrefix(kv["sharedaccesssignature"], "?")
		c.addSecret(c.connSAS)
		if k := kv["accountkey"]; k != "" {
			c.addSecret(k)
			if err := c.setKey(c.account, k, EnvConnectionString); err != nil {
				return nil, err
			}
		} else if c.connSAS == "" {
			return nil, fmt.Errorf("%s has neither AccountKey nor SharedAccessSignature", EnvConnectionString)
		}
	} else if k := getenv(EnvKey); k != "" {
		c.addSecret(k)
		acct := getenv(EnvAccount)
		if acct == "" {
			return nil, fmt.Errorf("%s is set but %s is not: the shared key needs its account name", EnvKey, EnvAccount)
		}
		if err := c.setKey(acct, k, EnvKey); err != nil {
			return nil, err
		}
		c.account = acct
	}
	if mode == AuthSharedKey && c.key == nil {
		return nil, fmt.Errorf("%w: --auth shared-key needs %s, or %s and %s", ErrNoCredentials, EnvConnectionString, EnvAccount, EnvKey)
	}
	return c, nil
}

func validMode(m AuthMode) bool {
	for _, v := range AuthModes {
		if v == m {
			return true
		}
	}
	return false
}

func (c *Credentials) setKey(account, key, source string) error {
	if account == "" {
		return fmt.Errorf("%s has an AccountKey but no AccountName", source)
	}
	k, err := blob.NewSharedKeyCredential(account, key)
	if err != nil {
		// The SDK's message may quote the key: never pass it on.
		return fmt.Errorf("the account key in %s is not valid base64", source)
	}
	c.key, c.keySource = k, source
	return nil
}

// parseConnectionString splits "Key=Value;..." into lower-cased keys.
func parseConnectionString(cs string) map[string]string {
	kv := map[string]string{}
	for _, part := range strings.Split(cs, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok {
			kv[strings.ToLower(k)] = v
		}
	}
	return kv
}

// Mode returns the authorisation mode.
func (c *Credentials) Mode() AuthMode { return c.mode }

// addSecret remembers s (and its URL-escaped forms) for Redact.
func (c *Credentials) addSecret(s string) {
	if len(s) < 4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range []string{s, url.QueryEscape(s), url.PathEscape(s)} {
		found := false
		for _, x := range c.secrets {
			found = found || x == v
		}
		if !found {
			c.secrets = append(c.secrets, v)
		}
	}
	// Longest first, so a secret containing another is replaced whole.
	sort.Slice(c.secrets, func(i, j int) bool { return len(c.secrets[i]) > len(c.secrets[j]) })
}

// Redact returns s with every secret these credentials hold or have seen
// in a target's URL (keys, connection strings, SAS tokens and signatures)
// replaced by "REDACTED", and any SAS query of a URL in s removed.
func (c *Credentials) Redact(s string) string {
	if c != nil {
		c.mu.Lock()
		for _, x := range c.secrets {
			s = strings.ReplaceAll(s, x, "REDACTED")
		}
		c.mu.Unlock()
	}
	// A signature nobody told us about: cut from it to the next space.
	for from := 0; ; {
		i := strings.Index(strings.ToLower(s[from:]), "sig=")
		if i < 0 {
			break
		}
		i += from
		end := strings.IndexAny(s[i:], " \t\n\"'")
		if end < 0 {
			end = len(s) - i
		}
		s = s[:i] + "sig=REDACTED" + s[i+end:]
		from = i + len("sig=REDACTED")
	}
	return s
}

// authFor decides how to authorise requests to t: it returns the shared
// key, the token credential, or neither (SAS in the URL or anonymous), and
// the URL to use (with the connection string's SAS appended when that is
// the credential).
func (c *Credentials) authFor(t Target) (*blob.SharedKeyCredential, azcore.TokenCredential, string, error) {
	if t.SAS {
		c.addSecret(t.sig)
		c.addSecret(t.sasQuery)
	}
	switch c.mode {
	case AuthAnonymous:
		return nil, nil, t.URL, nil
	case AuthSAS:
		if t.SAS {
			return nil, nil, t.URL, nil
		}
		if c.connSAS != "" {
			return nil, nil, appendSAS(t.URL, c.connSAS), nil
		}
		return nil, nil, "", fmt.Errorf("%w for %s: --auth sas needs a SAS in the URL or in %s", ErrNoCredentials, t.Display, EnvConnectionString)
	case AuthSharedKey:
		return c.sharedKeyFor(t)
	case AuthEntra:
		return c.entraFor(t)
	}
	// AuthAuto.
	switch {
	case t.SAS:
		return nil, nil, t.URL, nil
	case c.key != nil:
		return c.sharedKeyFor(t)
	case c.connSAS != "":
		return nil, nil, appendSAS(t.URL, c.connSAS), nil
	}
	if !strings.HasPrefix(t.URL, "https://") {
		return nil, nil, "", fmt.Errorf("%w for %s: set %s, or %s and %s, or use a SAS URL (Entra ID needs https)",
			ErrNoCredentials, t.Display, EnvConnectionString, EnvAccount, EnvKey)
	}
	return c.entraFor(t)
}

func (c *Credentials) sharedKeyFor(t Target) (*blob.SharedKeyCredential, azcore.TokenCredential, string, error) {
	if !strings.EqualFold(c.key.AccountName(), t.Account) {
		return nil, nil, "", fmt.Errorf("%w for %s: the shared key from %s is for account %q, the URL is in account %q",
			ErrNoCredentials, t.Display, c.keySource, c.key.AccountName(), t.Account)
	}
	return c.key, nil, t.URL, nil
}

func (c *Credentials) entraFor(t Target) (*blob.SharedKeyCredential, azcore.TokenCredential, string, error) {
	if !strings.HasPrefix(t.URL, "https://") {
		return nil, nil, "", fmt.Errorf("%w for %s: Entra ID (DefaultAzureCredential) needs an https URL", ErrNoCredentials, t.Display)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token == nil {
		tok, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return nil, nil, "", fmt.Errorf("%w: DefaultAzureCredential: %v", ErrNoCredentials, err)
		}
		c.token = tok
	}
	return nil, c.token, t.URL, nil
}

// appendSAS appends a SAS query string to u.
func appendSAS(u, sas string) string {
	if strings.Contains(u, "?") {
		return u + "&" + sas
	}
	return u + "?" + sas
}
