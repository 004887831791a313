// Package blob moves data to and from Azure Blob storage the way azcopy
// does, and counts every HTTP attempt it makes.
//
// A pull fetches blobs with parallel ranged GETs (Options.Concurrency
// workers, Options.BlockSize bytes per GET); a push uploads with staged
// blocks (Put Block) and one Put Block List per blob, so the block size is
// honoured at every size (azblob's UploadBuffer/UploadFile send one PUT up
// to 256 MiB) and retries are idempotent. Several targets are moved at
// once with their blocks interleaved over the same workers; a sharded pull
// treats its URLs as replicas of one blob and takes block i from replica
// i mod n, spreading the load over accounts or containers.
//
// Every attempt goes through a counting policy placed inside azcore's retry
// loop (policy.ClientOptions.PerRetryPolicies): it sees each try the retry
// policy makes, with its status (2xx, 503, 500, other), the
// x-ms-error-code of 503 responses and its latency to response headers.
// The expected answers of a push's probes (404 of the existence check for a
// new blob or container, 409 of a create that lost a race; a missing
// container is created) are counted apart, as Stats.Expected. Counts are cumulative and lock-free; Transfer.Stats returns them for a
// recorder to difference per interval.
//
// Credentials come from the environment or the URL, never from flags: a
// SAS in the URL, AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_ACCOUNT +
// AZURE_STORAGE_KEY, or azidentity.DefaultAzureCredential (https only).
// Errors and URLs this package returns never contain a key or a SAS
// signature (see Redact and Credentials.Redact).
package blob
