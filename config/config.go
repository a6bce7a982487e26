// Package config holds MIO's process configuration: one flat Config struct,
// a table of options (flag, environment variable, default, validation) and
// the loader that applies flags over environment over defaults. There is no
// global configuration: commands load a Config and pass it down.
//
// Internal to MIO; not a stable API.
package config

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/miohq/mio/envelope"
)

// Config is MIO's configuration. Fields are alphabetical; each comment
// gives the environment variable and the default.
type Config struct {
	// AdminAddr (MIO_ADMIN_ADDR) is the admin listener: /metrics and the
	// admin API. Default 127.0.0.1:9090.
	AdminAddr string
	// AdminAllowCIDRs (MIO_ADMIN_ALLOW_CIDRS) are the client networks the
	// admin listener answers (/metrics included); others get 403. The
	// client is the TCP peer (a proxy in front is the peer). Default
	// 127.0.0.0/8,::1/128 (loopback).
	AdminAllowCIDRs []netip.Prefix
	// APIAllowHTTPHosts (MIO_API_ALLOW_HTTP_HOSTS) are the hosts an
	// account's api_base_url may name over plain http (with MIO_ENV=dev
	// any host may). Default none: https only.
	APIAllowHTTPHosts []string
	// ArchiveBatchRows (MIO_ARCHIVE_BATCH_ROWS) is the most messages one
	// archive batch (NDJSON objects + cursor commit) holds. Default 10000.
	ArchiveBatchRows int
	// ArchiveInterval (MIO_ARCHIVE_INTERVAL) is how often the archive job
	// runs. Default 1m.
	ArchiveInterval time.Duration
	// ArchiveMaxAge (MIO_ARCHIVE_MAX_AGE) flushes a partial archive batch
	// once its oldest message has been ready this long. Default 10m.
	ArchiveMaxAge time.Duration
	// AttachmentMaxBytes (MIO_ATTACHMENT_MAX_BYTES) caps one attachment
	// download: "25MiB", optionally followed by per-channel overrides
	// ("25MiB,slack=100MiB"), kept in AttachmentMaxBytesByChannel.
	// Telegram bots are limited to 20 MB by the Bot API anyway. Default
	// 25MiB.
	AttachmentMaxBytes          int64
	AttachmentMaxBytesByChannel map[string]int64
	// AttachmentURLTTL (MIO_ATTACHMENT_URL_TTL), when positive with a gs://
	// blob store, makes GET /v1/attachments/{id} redirect to a signed URL
	// valid this long instead of streaming. Default 0 (stream).
	AttachmentURLTTL time.Duration
	// BlobRetention (MIO_BLOB_RETENTION) is how long an unreferenced blob
	// is kept before it is deleted. Default 24h.
	BlobRetention time.Duration
	// DataDir (MIO_DATA_DIR) is where `mio dev` keeps its PostgreSQL
	// cluster, blobs and dev.json. Default ./.mio.
	DataDir string
	// DatabaseURL (MIO_DATABASE_URL, or DATABASE_URL) is the PostgreSQL
	// connection URL. Empty: `mio dev` starts a private PostgreSQL; other
	// commands refuse to start.
	DatabaseURL string
	// DatabaseListenURL (MIO_DATABASE_LISTEN_URL) is a direct connection
	// URL (a session, not a transaction pooler) for LISTEN. Set it when
	// DatabaseURL goes through PgBouncer in transaction mode: consumer
	// wake-ups then LISTEN on it and River polls instead of listening.
	// Default empty (LISTEN on a pooled connection).
	DatabaseListenURL string
	// DedupRetention (MIO_DEDUP_RETENTION) is how long inbound dedup keys
	// are kept: a platform redelivery older than this is stored again.
	// Default 720h (30 days).
	DedupRetention time.Duration
	// DBMaxConns (MIO_DB_MAX_CONNS) caps the connection pool. Default 20.
	DBMaxConns int32
	// DBRuntimeRole (MIO_DB_RUNTIME_ROLE) is the role, without BYPASSRLS,
	// that every service session assumes. Default mio_runtime.
	DBRuntimeRole string
	// EnrichWorkers (MIO_ENRICH_WORKERS) is how many attachment jobs run
	// at once per process. Default 10.
	EnrichWorkers int
	// Env (MIO_ENV) is dev or prod. Default dev.
	Env string
	// FetchAllowedHosts (MIO_FETCH_ALLOWED_HOSTS) overrides, per channel,
	// the hosts attachments may be downloaded from:
	// "webhook=files.example.com,*.cdn.example.com;slack=files.slack.com".
	// A channel not named keeps its adapter's hosts; "webhook=" (empty)
	// allows any public host. Default: the adapters' hosts.
	FetchAllowedHosts map[string][]string
	// FetchInternalHosts (MIO_FETCH_INTERNAL_HOSTS) are host names that
	// attachment downloads may reach even though they resolve to private,
	// loopback or link-local addresses (a private mirror, a self-hosted
	// Bot API server). Default none: public addresses only.
	FetchInternalHosts []string
	// FetchTimeout (MIO_FETCH_TIMEOUT) bounds one attachment download,
	// body included; a download it cuts is retried, never stored.
	// Default 60s.
	FetchTimeout time.Duration
	// HTTPAddr (MIO_HTTP_ADDR) is the public listener. Default :8080.
	HTTPAddr string
	// InboxRetention (MIO_INBOX_RETENTION) is how long inbox messages are
	// kept; a message is deleted after it only once archived. Default 168h.
	InboxRetention time.Duration
	// IngestFlushers (MIO_INGEST_FLUSHERS) is how many group-commit
	// transactions may be in flight at once. Default 2.
	IngestFlushers int
	// IngestBurstFlushers (MIO_INGEST_BURST_FLUSHERS) are group-commit
	// transactions in flight besides IngestFlushers while the recent
	// ones carry few webhooks (20 or fewer on average). Default 1.
	IngestBurstFlushers int
	// IngestWindow (MIO_INGEST_WINDOW) is how long a group commit waits to
	// gather concurrent webhooks. Default 500µs.
	IngestWindow time.Duration
	// LogLevel (MIO_LOG_LEVEL): debug, info, warn or error. Default info.
	LogLevel slog.Level
	// MasterKey (MIO_MASTER_KEY) is the 32-byte AES-256 key, base64
	// encoded, that encrypts account credentials at rest. Required by
	// commands that read or write credentials.
	MasterKey []byte
	// MCPAllowedOrigins (MIO_MCP_ALLOWED_ORIGINS) are the browser origins
	// (scheme://host[:port]) the MCP endpoint /mcp answers; a request
	// with another Origin header is refused, one without passes. Default
	// none.
	MCPAllowedOrigins []string
	// NatsCreds (MIO_NATS_CREDS) is a NATS credentials file (JWT + nkey)
	// for the bridge. Default none.
	NatsCreds string
	// NatsDuplicateWindow (MIO_NATS_DUPLICATE_WINDOW) is the duplicate
	// window of the stream MIO creates, and the least an existing one must
	// have. Default 2m.
	NatsDuplicateWindow time.Duration
	// NatsStream (MIO_NATS_STREAM) is the JetStream stream the bridge
	// publishes to (created over mio.> when missing). Default MIO.
	NatsStream string
	// NatsURL (MIO_NATS_URL) enables the optional NATS bridge
	// (docs/nats.md). Default off.
	NatsURL string
	// OutboundFlushers (MIO_OUTBOUND_FLUSHERS) is how many group-commit
	// transactions of POST /v1/outbound may be in flight at once, and as
	// many of stream appends. Default 2.
	OutboundFlushers int
	// OutboundBurstFlushers (MIO_OUTBOUND_BURST_FLUSHERS) are group-commit
	// transactions of sends in flight besides OutboundFlushers while the
	// recent ones carry few sends (20 or fewer on average). Default 0.
	OutboundBurstFlushers int
	// OutboundWindow (MIO_OUTBOUND_WINDOW) is how long a group commit
	// waits to gather concurrent sends (or stream appends). Default 500µs.
	OutboundWindow time.Duration
	// PublicURL (MIO_PUBLIC_URL) is the externally reachable base URL of the
	// public listener, used to print webhook URLs. Default derived from
	// HTTPAddr (http://localhost:PORT); PublicURLDerived is then true.
	PublicURL        string
	PublicURLDerived bool
	// FromFlags are the settings given as flags on the command line, as
	// environment entries ("MIO_INGEST_FLUSHERS=3"), in the options'
	// order: a command that starts another mio process (mio-bench's
	// server) passes them on, so a flag means the same there.
	FromFlags []string
	// Pprof (MIO_PPROF) serves /debug/pprof on the admin listener, to
	// operator admin tokens only. Default false.
	Pprof bool
	// ReconcileInterval (MIO_RECONCILE_INTERVAL) is how often the catch-up
	// reconciler reads platform history. Default 5m.
	ReconcileInterval time.Duration
	// ReconcileWindow (MIO_RECONCILE_WINDOW): conversations active within
	// it are reconciled (keep it below MIO_DEDUP_RETENTION). Default 24h.
	ReconcileWindow time.Duration
	// RetentionInterval (MIO_RETENTION_INTERVAL) is how often inbox and
	// blob retention run. Default 1h.
	RetentionInterval time.Duration
	// Role (MIO_ROLE) selects what `mio serve` runs: all, api, worker or
	// bridge. Default all.
	Role string
	// SendTimeout (MIO_SEND_TIMEOUT) bounds one provider call of the
	// dispatcher; a send attempt's lease is 15s more (how long a message
	// whose worker died waits before another worker resumes it). Default
	// 30s.
	SendTimeout time.Duration
	// ShutdownTimeout (MIO_SHUTDOWN_TIMEOUT) bounds graceful shutdown.
	// Default 20s.
	ShutdownTimeout time.Duration
	// StreamTimeout (MIO_STREAM_TIMEOUT) is how long a streamed reply may
	// stay open: one its agent has not finished by then is finished with
	// its text so far. Default 2m.
	StreamTimeout time.Duration
	// WebhookDeadline (MIO_WEBHOOK_DEADLINE) bounds every webhook request,
	// from first byte to answer. Default 2.5s.
	WebhookDeadline time.Duration
	// WebhookMaxBody (MIO_WEBHOOK_MAX_BODY) is the largest webhook body
	// accepted, in bytes (suffixes KiB, MiB allowed). Default 1MiB.
	WebhookMaxBody int64
	// BlobURL (MIO_BLOB_URL) is the blob store: file://DIR or
	// gs://BUCKET/PREFIX. Default file://$MIO_DATA_DIR/blobs.
	BlobURL string
}

// Roles accepted by --role.
var roles = []string{"all", "api", "worker", "bridge"}

type option struct {
	flag   string
	envs   []string
	def    string
	secret bool // also read from ENV_FILE
	usage  string
	set    func(c *Config, v string) error
}

func options() []option {
	return []option{
		{flag: "admin-addr", envs: []string{"MIO_ADMIN_ADDR"}, def: "127.0.0.1:9090", usage: "admin listener (metrics, admin API)",
			set: func(c *Config, v string) error { return addr(&c.AdminAddr, v) }},
		{flag: "admin-allow-cidrs", envs: []string{"MIO_ADMIN_ALLOW_CIDRS"}, def: "127.0.0.0/8,::1/128", usage: "client networks the admin listener answers (comma-separated CIDRs)",
			set: func(c *Config, v string) error {
				c.AdminAllowCIDRs = nil
				for _, f := range strings.Split(v, ",") {
					if f = strings.TrimSpace(f); f == "" {
						continue
					}
					p, err := netip.ParsePrefix(f)
					if err != nil {
						return fmt.Errorf("want comma-separated CIDRs (10.0.0.0/8,::1/128): %q", f)
					}
					c.AdminAllowCIDRs = append(c.AdminAllowCIDRs, p.Masked())
				}
				if len(c.AdminAllowCIDRs) == 0 {
					return errors.New("want at least one CIDR (0.0.0.0/0,::/0 allows every client)")
				}
				return nil
			}},
		{flag: "api-allow-http-hosts", envs: []string{"MIO_API_ALLOW_HTTP_HOSTS"}, usage: "hosts an account's api_base_url may name over plain http (comma-separated)",
			set: func(c *Config, v string) error { return hostList(&c.APIAllowHTTPHosts, v) }},
		{flag: "archive-batch-rows", envs: []string{"MIO_ARCHIVE_BATCH_ROWS"}, def: "10000", usage: "most messages in one archive batch",
			set: func(c *Config, v string) error {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 || n > 1_000_000 {
					return errors.New("want an integer from 1 to 1000000")
				}
				c.ArchiveBatchRows = n
				return nil
			}},
		{flag: "archive-interval", envs: []string{"MIO_ARCHIVE_INTERVAL"}, def: "1m", usage: "how often the NDJSON archive job runs",
			set: func(c *Config, v string) error { return duration(&c.ArchiveInterval, v, time.Second, 24*time.Hour) }},
		{flag: "archive-max-age", envs: []string{"MIO_ARCHIVE_MAX_AGE"}, def: "10m", usage: "flush a partial archive batch once its oldest message is this old",
			set: func(c *Config, v string) error { return duration(&c.ArchiveMaxAge, v, 0, 24*time.Hour) }},
		{flag: "attachment-max-bytes", envs: []string{"MIO_ATTACHMENT_MAX_BYTES"}, def: "25MiB", usage: "largest attachment downloaded, optionally per channel (25MiB,slack=100MiB)",
			set: func(c *Config, v string) error { return attachmentMaxBytes(c, v) }},
		{flag: "attachment-url-ttl", envs: []string{"MIO_ATTACHMENT_URL_TTL"}, def: "0s", usage: "with gs://, redirect attachment downloads to signed URLs valid this long (0: stream)",
			set: func(c *Config, v string) error { return duration(&c.AttachmentURLTTL, v, 0, 7*24*time.Hour) }},
		{flag: "blob-retention", envs: []string{"MIO_BLOB_RETENTION"}, def: "24h", usage: "how long unreferenced attachment blobs are kept",
			set: func(c *Config, v string) error { return duration(&c.BlobRetention, v, time.Minute, 24*365*time.Hour) }},
		{flag: "blob-url", envs: []string{"MIO_BLOB_URL"}, def: "", usage: "blob store: file://DIR or gs://BUCKET/PREFIX (default file://$MIO_DATA_DIR/blobs)",
			set: func(c *Config, v string) error {
				if v == "" {
					return nil
				}
				u, err := url.Parse(v)
				if err != nil || (u.Scheme != "file" && u.Scheme != "gs") || (u.Scheme == "gs" && u.Host == "") {
					return errors.New("want file://DIR or gs://BUCKET/PREFIX")
				}
				c.BlobURL = v
				return nil
			}},
		{flag: "data-dir", envs: []string{"MIO_DATA_DIR"}, def: "./.mio", usage: "where mio dev keeps its database, blobs and dev.json",
			set: func(c *Config, v string) error {
				if v == "" {
					return errors.New("want a directory path")
				}
				c.DataDir = v
				return nil
			}},
		{flag: "database-url", envs: []string{"MIO_DATABASE_URL", "DATABASE_URL"}, secret: true, usage: "PostgreSQL URL (postgres://user:pass@host:5432/db)",
			set: func(c *Config, v string) error {
				return postgresURL(&c.DatabaseURL, v)
			}},
		{flag: "database-listen-url", envs: []string{"MIO_DATABASE_LISTEN_URL"}, secret: true, usage: "direct (session) PostgreSQL URL for LISTEN, when MIO_DATABASE_URL goes through a transaction pooler such as PgBouncer; River then polls",
			set: func(c *Config, v string) error { return postgresURL(&c.DatabaseListenURL, v) }},
		{flag: "dedup-retention", envs: []string{"MIO_DEDUP_RETENTION"}, def: "720h", usage: "how long inbound dedup keys are kept",
			set: func(c *Config, v string) error { return duration(&c.DedupRetention, v, time.Hour, 24*365*time.Hour) }},
		{flag: "db-max-conns", envs: []string{"MIO_DB_MAX_CONNS"}, def: "20", usage: "database connection pool size",
			set: func(c *Config, v string) error {
				n, err := strconv.Atoi(v)
				if err != nil || n < 2 || n > 1000 {
					return errors.New("want an integer from 2 to 1000")
				}
				c.DBMaxConns = int32(n)
				return nil
			}},
		{flag: "db-runtime-role", envs: []string{"MIO_DB_RUNTIME_ROLE"}, def: "mio_runtime", usage: "PostgreSQL role (no BYPASSRLS) the service assumes",
			set: func(c *Config, v string) error {
				if v == "" || strings.ContainsAny(v, "\"\x00") {
					return errors.New("want a role name")
				}
				c.DBRuntimeRole = v
				return nil
			}},
		{flag: "enrich-workers", envs: []string{"MIO_ENRICH_WORKERS"}, def: "10", usage: "attachment fetch jobs run at once",
			set: func(c *Config, v string) error {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 || n > 1000 {
					return errors.New("want an integer from 1 to 1000")
				}
				c.EnrichWorkers = n
				return nil
			}},
		{flag: "env", envs: []string{"MIO_ENV"}, def: "dev", usage: "dev or prod",
			set: func(c *Config, v string) error { return oneOf(&c.Env, v, []string{"dev", "prod"}) }},
		{flag: "fetch-allowed-hosts", envs: []string{"MIO_FETCH_ALLOWED_HOSTS"}, usage: "per-channel attachment hosts (webhook=a.example.com,*.b.example.com;slack=...)",
			set: func(c *Config, v string) error { return fetchAllowedHosts(c, v) }},
		{flag: "fetch-internal-hosts", envs: []string{"MIO_FETCH_INTERNAL_HOSTS"}, usage: "host names attachment downloads may reach on private addresses (comma-separated; off by default)",
			set: func(c *Config, v string) error { return hostList(&c.FetchInternalHosts, v) }},
		{flag: "fetch-timeout", envs: []string{"MIO_FETCH_TIMEOUT"}, def: "60s", usage: "bound of one attachment download, body included (a download it cuts is retried, never stored)",
			set: func(c *Config, v string) error { return duration(&c.FetchTimeout, v, time.Second, time.Hour) }},
		{flag: "http-addr", envs: []string{"MIO_HTTP_ADDR"}, def: ":8080", usage: "public listener (webhooks, /v1 API, health)",
			set: func(c *Config, v string) error { return addr(&c.HTTPAddr, v) }},
		{flag: "inbox-retention", envs: []string{"MIO_INBOX_RETENTION"}, def: "168h", usage: "how long inbox messages are kept (deleted only once archived)",
			set: func(c *Config, v string) error { return duration(&c.InboxRetention, v, time.Hour, 24*3650*time.Hour) }},
		{flag: "ingest-flushers", envs: []string{"MIO_INGEST_FLUSHERS"}, def: "2", usage: "group-commit transactions in flight",
			set: func(c *Config, v string) error { return intRange(&c.IngestFlushers, v, 1, 256) }},
		{flag: "ingest-burst-flushers", envs: []string{"MIO_INGEST_BURST_FLUSHERS"}, def: "1", usage: "group-commit transactions in flight besides --ingest-flushers while recent ones carry 20 webhooks or fewer",
			set: func(c *Config, v string) error { return intRange(&c.IngestBurstFlushers, v, 0, 256) }},
		{flag: "ingest-window", envs: []string{"MIO_INGEST_WINDOW"}, def: "500us", usage: "how long a group commit gathers webhooks",
			set: func(c *Config, v string) error { return duration(&c.IngestWindow, v, 0, time.Second) }},
		{flag: "log-level", envs: []string{"MIO_LOG_LEVEL"}, def: "info", usage: "debug, info, warn or error",
			set: func(c *Config, v string) error {
				var l slog.Level
				if err := l.UnmarshalText([]byte(v)); err != nil || !contains([]string{"debug", "info", "warn", "error"}, strings.ToLower(v)) {
					return errors.New("want one of debug, info, warn, error")
				}
				c.LogLevel = l
				return nil
			}},
		{flag: "mcp-allowed-origins", envs: []string{"MIO_MCP_ALLOWED_ORIGINS"}, usage: "browser origins /mcp answers, scheme://host[:port] (comma-separated; requests without Origin always pass)",
			set: func(c *Config, v string) error {
				c.MCPAllowedOrigins = nil
				for _, f := range strings.Split(v, ",") {
					if f = strings.TrimSpace(f); f == "" {
						continue
					}
					u, err := url.Parse(f)
					if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
						return fmt.Errorf("want comma-separated origins such as https://app.example.com: %q", f)
					}
					c.MCPAllowedOrigins = append(c.MCPAllowedOrigins, strings.TrimRight(f, "/"))
				}
				return nil
			}},
		{flag: "master-key", envs: []string{"MIO_MASTER_KEY"}, secret: true, usage: "base64 32-byte key encrypting credentials at rest",
			set: func(c *Config, v string) error {
				if v == "" {
					return nil
				}
				k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
				if err != nil || len(k) != 32 {
					return errors.New("want 32 random bytes, base64 encoded (openssl rand -base64 32)")
				}
				c.MasterKey = k
				return nil
			}},
		{flag: "nats-creds", envs: []string{"MIO_NATS_CREDS"}, usage: "NATS credentials file of the bridge (JWT + nkey)",
			set: func(c *Config, v string) error { c.NatsCreds = v; return nil }},
		{flag: "nats-duplicate-window", envs: []string{"MIO_NATS_DUPLICATE_WINDOW"}, def: "2m", usage: "duplicate window of the JetStream stream (republishes after a crash are dropped within it)",
			set: func(c *Config, v string) error { return duration(&c.NatsDuplicateWindow, v, time.Second, 24*time.Hour) }},
		{flag: "nats-stream", envs: []string{"MIO_NATS_STREAM"}, def: "MIO", usage: "JetStream stream of the bridge (created when missing; docs/nats.md)",
			set: func(c *Config, v string) error {
				if v == "" || strings.ContainsAny(v, ".*> \t/\\") {
					return errors.New("want a stream name without '.', '*', '>', '/', '\\' or spaces")
				}
				c.NatsStream = v
				return nil
			}},
		{flag: "nats-url", envs: []string{"MIO_NATS_URL"}, usage: "NATS URL for the optional bridge (nats://host:4222)",
			set: func(c *Config, v string) error {
				if v == "" {
					return nil
				}
				u, err := url.Parse(v)
				if err != nil || (u.Scheme != "nats" && u.Scheme != "tls") || u.Host == "" {
					return errors.New("want nats://host:port or tls://host:port")
				}
				c.NatsURL = v
				return nil
			}},
		{flag: "outbound-burst-flushers", envs: []string{"MIO_OUTBOUND_BURST_FLUSHERS"}, def: "0", usage: "group-commit transactions of sends in flight besides --outbound-flushers while recent ones carry 20 sends or fewer",
			set: func(c *Config, v string) error { return intRange(&c.OutboundBurstFlushers, v, 0, 256) }},
		{flag: "outbound-flushers", envs: []string{"MIO_OUTBOUND_FLUSHERS"}, def: "2", usage: "group-commit transactions of sends in flight",
			set: func(c *Config, v string) error { return intRange(&c.OutboundFlushers, v, 1, 256) }},
		{flag: "outbound-window", envs: []string{"MIO_OUTBOUND_WINDOW"}, def: "500us", usage: "how long a group commit gathers sends",
			set: func(c *Config, v string) error { return duration(&c.OutboundWindow, v, 0, time.Second) }},
		{flag: "pprof", envs: []string{"MIO_PPROF"}, def: "false", usage: "serve /debug/pprof on the admin listener (operator admin tokens only)",
			set: func(c *Config, v string) error {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return errors.New("want true or false")
				}
				c.Pprof = b
				return nil
			}},
		{flag: "public-url", envs: []string{"MIO_PUBLIC_URL"}, usage: "external base URL of the public listener (default http://localhost:PORT)",
			set: func(c *Config, v string) error {
				if v == "" {
					return nil
				}
				u, err := url.Parse(v)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return errors.New("want an http:// or https:// URL")
				}
				c.PublicURL = strings.TrimRight(v, "/")
				return nil
			}},
		{flag: "reconcile-interval", envs: []string{"MIO_RECONCILE_INTERVAL"}, def: "5m", usage: "how often the catch-up reconciler reads platform history",
			set: func(c *Config, v string) error {
				return duration(&c.ReconcileInterval, v, 10*time.Second, 24*time.Hour)
			}},
		{flag: "reconcile-window", envs: []string{"MIO_RECONCILE_WINDOW"}, def: "24h", usage: "conversations active within it are reconciled (below the dedup retention)",
			set: func(c *Config, v string) error { return duration(&c.ReconcileWindow, v, time.Hour, 720*time.Hour) }},
		{flag: "retention-interval", envs: []string{"MIO_RETENTION_INTERVAL"}, def: "1h", usage: "how often inbox and blob retention run",
			set: func(c *Config, v string) error { return duration(&c.RetentionInterval, v, time.Minute, 24*time.Hour) }},
		{flag: "role", envs: []string{"MIO_ROLE"}, def: "all", usage: "what mio serve runs: all, api, worker or bridge",
			set: func(c *Config, v string) error { return oneOf(&c.Role, v, roles) }},
		{flag: "send-timeout", envs: []string{"MIO_SEND_TIMEOUT"}, def: "30s", usage: "bounds one provider call; a send's lease is 15s more (a dead worker's message is resumed after it)",
			set: func(c *Config, v string) error { return duration(&c.SendTimeout, v, time.Second, 5*time.Minute) }},
		{flag: "shutdown-timeout", envs: []string{"MIO_SHUTDOWN_TIMEOUT"}, def: "20s", usage: "graceful shutdown bound",
			set: func(c *Config, v string) error { return duration(&c.ShutdownTimeout, v, time.Second, time.Hour) }},
		{flag: "stream-timeout", envs: []string{"MIO_STREAM_TIMEOUT"}, def: "2m", usage: "how long a streamed reply may stay open before it is finished with its text so far",
			set: func(c *Config, v string) error { return duration(&c.StreamTimeout, v, time.Second, time.Hour) }},
		{flag: "webhook-deadline", envs: []string{"MIO_WEBHOOK_DEADLINE"}, def: "2.5s", usage: "deadline of every webhook request",
			set: func(c *Config, v string) error {
				return duration(&c.WebhookDeadline, v, 100*time.Millisecond, time.Minute)
			}},
		{flag: "webhook-max-body", envs: []string{"MIO_WEBHOOK_MAX_BODY"}, def: "1MiB", usage: "largest webhook body accepted",
			set: func(c *Config, v string) error {
				n, err := ParseBytes(v)
				if err != nil || n < 1024 || n > 64<<20 {
					return errors.New("want a size from 1KiB to 64MiB, e.g. 1MiB or 1048576")
				}
				c.WebhookMaxBody = n
				return nil
			}},
	}
}

// Load parses args (without the command name) over the environment
// (getenv, usually os.Getenv) over defaults and validates the result. A bad
// value fails with one line naming the setting and the accepted form.
func Load(name string, args []string, getenv func(string) string, usageOut io.Writer) (*Config, []string, error) {
	return LoadWith(name, args, getenv, usageOut, nil)
}

// LoadWith is Load with a command's own flags registered on the same flag
// set (register may be nil).
func LoadWith(name string, args []string, getenv func(string) string, usageOut io.Writer, register func(*flag.FlagSet)) (*Config, []string, error) {
	return load(name, args, getenv, usageOut, register, nil)
}

// LoadOnly is LoadWith accepting on the command line only the named
// configuration flags (e.g. "database-url") besides the command's own:
// any other is a usage error. The environment and defaults still supply
// every setting.
func LoadOnly(name string, args []string, getenv func(string) string, usageOut io.Writer, register func(*flag.FlagSet), flags ...string) (*Config, []string, error) {
	opts := options()
	only := make(map[string]bool, len(flags))
	for _, f := range flags {
		if !slices.ContainsFunc(opts, func(o option) bool { return o.flag == f }) {
			panic("config: LoadOnly: no configuration flag --" + f)
		}
		only[f] = true
	}
	return load(name, args, getenv, usageOut, register, only)
}

// load parses args over the environment over defaults; only, when not
// nil, names the configuration flags accepted.
func load(name string, args []string, getenv func(string) string, usageOut io.Writer, register func(*flag.FlagSet), only map[string]bool) (*Config, []string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(usageOut)
	if register != nil {
		register(fs)
	}
	opts := options()
	vals := make(map[string]*string, len(opts))
	for _, o := range opts {
		if only == nil || only[o.flag] {
			vals[o.flag] = fs.String(o.flag, "", usageLine(o))
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	c := &Config{}
	for _, o := range opts {
		v, source := o.def, "default"
		if env, val, ok := lookupEnv(o, getenv); ok {
			v, source = val, env
		}
		if set[o.flag] {
			v, source = *vals[o.flag], "--"+o.flag
			c.FromFlags = append(c.FromFlags, primaryEnv(o)+"="+v)
		}
		if err := o.set(c, v); err != nil {
			shown := v
			if o.secret {
				shown = "(hidden)"
			}
			return nil, nil, fmt.Errorf("invalid %s (%s) %q: %v", primaryEnv(o), source, shown, err)
		}
	}
	if c.PublicURL == "" {
		c.PublicURL, c.PublicURLDerived = defaultPublicURL(c.HTTPAddr), true
	}
	if c.BlobURL == "" {
		c.BlobURL = "file://" + strings.TrimSuffix(c.DataDir, "/") + "/blobs"
	}
	return c, fs.Args(), nil
}

func lookupEnv(o option, getenv func(string) string) (env, val string, ok bool) {
	for _, e := range o.envs {
		if v := getenv(e); v != "" {
			return e, v, true
		}
	}
	if o.secret {
		for _, e := range o.envs {
			if path := getenv(e + "_FILE"); path != "" {
				b, err := os.ReadFile(path)
				if err != nil {
					// Surface as a value the validator rejects with context.
					return e + "_FILE", "\x00unreadable " + path, true
				}
				return e + "_FILE", strings.TrimRight(string(b), "\r\n"), true
			}
		}
	}
	return "", "", false
}

func primaryEnv(o option) string { return o.envs[0] }

func usageLine(o option) string {
	s := o.usage + " (env " + strings.Join(o.envs, ", ")
	if o.secret {
		s += "; or " + o.envs[0] + "_FILE"
	}
	if o.def != "" {
		s += "; default " + o.def
	}
	return s + ")"
}

func defaultPublicURL(httpAddr string) string {
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return "http://localhost:8080"
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

func addr(dst *string, v string) error {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return errors.New("want host:port or :port")
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return errors.New("want host:port or :port with a port from 0 to 65535")
	}
	_ = host
	*dst = v
	return nil
}

// intRange parses v as an integer from lo to hi into dst.
func intRange(dst *int, v string, lo, hi int) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return fmt.Errorf("want an integer from %d to %d", lo, hi)
	}
	*dst = n
	return nil
}

func duration(dst *time.Duration, v string, lo, hi time.Duration) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		return fmt.Errorf("want a Go duration from %s to %s, e.g. 30s or 2.5s", lo, hi)
	}
	*dst = d
	return nil
}

func oneOf(dst *string, v string, allowed []string) error {
	if !contains(allowed, v) {
		return fmt.Errorf("want one of %s", strings.Join(allowed, ", "))
	}
	*dst = v
	return nil
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// ParseBytes parses a byte size: a plain integer or one with a KiB, MiB or
// GiB suffix.
func ParseBytes(v string) (int64, error) {
	mult := int64(1)
	s := strings.TrimSpace(v)
	for suf, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if strings.HasSuffix(s, suf) {
			mult, s = m, strings.TrimSuffix(s, suf)
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q", v)
	}
	return n * mult, nil
}

// postgresURL sets *dst to v, a postgres:// URL; empty leaves it empty.
func postgresURL(dst *string, v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return errors.New("want postgres://user:password@host:port/database")
	}
	*dst = v
	return nil
}

// Table returns the configuration options as documentation rows (env,
// flag, default, description), sorted by environment variable; the README
// table is checked against it.
func Table() [][4]string {
	opts := options()
	sort.Slice(opts, func(i, j int) bool { return opts[i].envs[0] < opts[j].envs[0] })
	rows := make([][4]string, 0, len(opts))
	for _, o := range opts {
		env := strings.Join(o.envs, ", ")
		if o.secret {
			env += " (or `_FILE`)"
		}
		rows = append(rows, [4]string{env, "--" + o.flag, o.def, o.usage})
	}
	return rows
}

// MarkdownTable renders the options as the README's configuration table.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| variable | flag | default | meaning |\n| --- | --- | --- | --- |\n")
	for _, r := range Table() {
		secret := strings.HasSuffix(r[0], " (or `_FILE`)")
		envs := strings.Split(strings.TrimSuffix(r[0], " (or `_FILE`)"), ", ")
		for i := range envs {
			envs[i] = "`" + envs[i] + "`"
		}
		e := strings.Join(envs, ", ")
		if secret {
			e += " (or `_FILE`)"
		}
		def := ""
		if r[2] != "" {
			def = "`" + r[2] + "`"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", e, r[1], def, r[3])
	}
	return b.String()
}

// attachmentMaxBytes parses "25MiB" or "25MiB,slack=100MiB,webhook=5MiB".
func attachmentMaxBytes(c *Config, v string) error {
	const want = "want a size from 1KiB to 4GiB, optionally followed by channel=size overrides (25MiB,slack=100MiB)"
	parts := strings.Split(v, ",")
	n, err := ParseBytes(parts[0])
	if err != nil || n < 1<<10 || n > 4<<30 {
		return errors.New(want)
	}
	c.AttachmentMaxBytes = n
	c.AttachmentMaxBytesByChannel = nil
	for _, p := range parts[1:] {
		ch, size, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !envelope.ValidChannelType(ch) {
			return fmt.Errorf("%s; %q is not channel=size with a channel slug", want, p)
		}
		n, err := ParseBytes(size)
		if err != nil || n < 1<<10 || n > 4<<30 {
			return errors.New(want)
		}
		if c.AttachmentMaxBytesByChannel == nil {
			c.AttachmentMaxBytesByChannel = map[string]int64{}
		}
		c.AttachmentMaxBytesByChannel[ch] = n
	}
	return nil
}

// fetchAllowedHosts parses "webhook=a.example.com,*.b.example.com;slack=files.slack.com".
func fetchAllowedHosts(c *Config, v string) error {
	c.FetchAllowedHosts = nil
	if strings.TrimSpace(v) == "" {
		return nil
	}
	for _, entry := range strings.Split(v, ";") {
		ch, list, ok := strings.Cut(strings.TrimSpace(entry), "=")
		if !ok || !envelope.ValidChannelType(ch) {
			return fmt.Errorf("want channel=host,host;channel=host with channel slugs; got %q", entry)
		}
		hosts := []string{}
		for _, h := range strings.Split(list, ",") {
			h = strings.ToLower(strings.TrimSpace(h))
			if h == "" {
				continue
			}
			bare := strings.TrimPrefix(h, "*.")
			if bare == "" || strings.ContainsAny(bare, "/:*@ ") {
				return fmt.Errorf("want host names such as files.example.com or *.example.com; got %q", h)
			}
			hosts = append(hosts, h)
		}
		if c.FetchAllowedHosts == nil {
			c.FetchAllowedHosts = map[string][]string{}
		}
		c.FetchAllowedHosts[ch] = hosts
	}
	return nil
}

// hostList parses "a.example.com,10.0.0.5": exact host names or IP
// literals, no ports, schemes or wildcards.
func hostList(dst *[]string, v string) error {
	*dst = nil
	for _, h := range strings.Split(v, ",") {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		if strings.ContainsAny(h, "/:*@ ") {
			return fmt.Errorf("want host names such as mirror.internal or 10.0.0.5, comma-separated; got %q", h)
		}
		*dst = append(*dst, h)
	}
	return nil
}
