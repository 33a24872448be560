package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/gate/contact"
	"github.com/xpromo/xpromo/server/groupcommit"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/lifecycle"
)

// config is the server's configuration. Each setting comes from its flag, else
// its environment variable, else the default.
type config struct {
	Addr        string
	DatabaseURL string // empty: embedded SQLite under DataDir
	DataDir     string
	AdminToken  string
	Mode        string
	LogFormat   string
	LogLevel    slog.Level

	// Failover bounds (docs/operations.md, "High availability"): each
	// connection attempt, each statement (PostgreSQL), each request.
	ConnectTimeout, StatementTimeout, RequestTimeout time.Duration
	ReadConns                                        int // PostgreSQL's read pool; 0: as the write pool

	BaseURL        string // public URL; empty: http://<listen address>
	RedisURL       string
	ReadLimit      int // requests per minute; 0: the default
	WriteLimit     int
	JobConcurrency int // background jobs run at once by this instance
	CategoriesFile string
	X402PayTo      string
	X402Network    string
	X402EURUSD     string
	// X402FacilitatorURL and X402RPCURL: the x402 facilitator that settles
	// top-ups, and the chain's JSON-RPC the reconciliation pass reads;
	// X402RateURL the rate endpoint quoting challenges.
	X402FacilitatorURL, X402RPCURL, X402RateURL string

	// Stripe (live mode; docs/operations.md, "Stripe").
	StripeSecretKey        string
	StripeWebhookSecrets   []string
	StripeAPIURL           string
	StripeConnectCountry   string
	StripeSuccessURL       string
	StripeConnectReturnURL string

	// Attribution (docs/attribution.md).
	OfferSecret, PreviousOfferSecret string
	IPToASNFile, DatacentersFile     string
	TrustedProxies                   []netip.Prefix
	// CanaryRate: one fill in CanaryRate is a canary; 0 none.
	CanaryRate int

	// Lifecycle are the review's thresholds and the go-live bar
	// (docs/apps.md "Lifecycle"; lifecycle.go reads them).
	Lifecycle lifecycle.Rules

	// WebhooksAllowLoopback admits webhook endpoints on 127.0.0.1 and ::1
	// (test mode only; docs/webhooks.md).
	WebhooksAllowLoopback bool
	MCPAllowedOrigins     []string // browser origins allowed on /mcp (docs/mcp.md)

	// The vetting gate's counterparts (docs/gate.md, "Configuration").
	Gate assembly.GateConfig
	// GroupCommit: concurrent install claims share transactions, each in
	// a savepoint (docs/ledger.md, "Group commit of units").
	GroupCommit groupcommit.Config
	// GroupCommitAuto (--group-commit=auto): on for SQLite, off for
	// PostgreSQL, where it measured slower (BENCHMARKS.md).
	GroupCommitAuto bool
	// PprofAddr: a loopback address serving net/http/pprof (profiling
	// under load, BENCHMARKS.md); empty: none.
	PprofAddr string
	// NoBackground (--background=none): the instance answers requests and
	// stores its own fill counts, and leaves the sweep, the review, the
	// job queue, deliveries, recoveries and purges to the other instances
	// (docs/operations.md, "Instances that only answer").
	NoBackground bool
	// The reputation signals' sources (docs/reputation.md, "The scoring job").
	Scoring assembly.ScoringConfig
	// Guard: the process's memory limit, body slots and read deadlines
	// (guard.go; docs/operations.md, "The process guard").
	Guard guardConfig
}

// maxJobConcurrency bounds --job-concurrency: each running job may hold a
// download and a database connection for its completion.
const maxJobConcurrency = 64

// minLiveAdminToken is the shortest admin token accepted in live mode; a
// short token on a live server is a password that can be guessed.
const minLiveAdminToken = 32

// setting is one configuration knob: its flag, environment variable, default
// and help. The table drives flag registration, env lookup and the docs.
type setting struct {
	flag, env, def, usage string
	serveOnly             bool // only `serve` takes it
}

var settings = []setting{
	{flag: "addr", env: "XPROMO_ADDR", def: "127.0.0.1:8080", usage: "listen address (host:port)", serveOnly: true},
	{flag: "database-url", env: "DATABASE_URL", def: "", usage: "PostgreSQL URL (postgres://…); empty uses embedded SQLite in the data dir"},
	{flag: "db-connect-timeout", env: "XPROMO_DB_CONNECT_TIMEOUT", def: "5s", usage: "PostgreSQL: time limit of one connection attempt (per host of a multi-host URL) and of a pooled connection's liveness ping (a Go duration); the URL's connect_timeout wins"},
	{flag: "db-read-conns", env: "XPROMO_DB_READ_CONNS", def: "0", usage: "PostgreSQL: connections of the read pool (reads never queue behind the write pool's transactions); 0: as many as the write pool (pool_max_conns)", serveOnly: true},
	{flag: "db-statement-timeout", env: "XPROMO_DB_STATEMENT_TIMEOUT", def: "20s", usage: "PostgreSQL: statement_timeout of the server's sessions (a Go duration; 0: none); the URL's statement_timeout wins", serveOnly: true},
	{flag: "request-timeout", env: "XPROMO_REQUEST_TIMEOUT", def: "30s", usage: "deadline of one API request (a Go duration): past it the request answers 503 unavailable with Retry-After, so a lost database primary costs seconds, not minutes", serveOnly: true},
	{flag: "data-dir", env: "XPROMO_DATA_DIR", def: "./data", usage: "directory of the embedded SQLite database (xpromo.db)"},
	{flag: "admin-token", env: "XPROMO_ADMIN_TOKEN", def: "", usage: "bearer token of the operator API; empty disables it", serveOnly: true},
	{flag: "mode", env: "XPROMO_MODE", def: "test", usage: "test (simulated payments, xp_test_ keys) or live", serveOnly: true},
	{flag: "log-format", env: "XPROMO_LOG_FORMAT", def: "text", usage: "log format: text or json"},
	{flag: "log-level", env: "XPROMO_LOG_LEVEL", def: "info", usage: "log level: debug, info, warn or error"},
	{flag: "base-url", env: "XPROMO_BASE_URL", def: "", usage: "public URL of this server, used in links it hands out (checkout pages); empty: http://<listen address>", serveOnly: true},
	{flag: "redis-url", env: "XPROMO_REDIS_URL", def: "", usage: "Redis URL (redis://host:port/db) to share rate limits across instances; empty: in-memory limits", serveOnly: true},
	{flag: "rate-read", env: "XPROMO_RATE_READ", def: "600", usage: "reads (GET) allowed per minute per API key, or per IP without a key", serveOnly: true},
	{flag: "rate-write", env: "XPROMO_RATE_WRITE", def: "60", usage: "writes (POST) allowed per minute per API key, or per IP without a key", serveOnly: true},
	{flag: "job-concurrency", env: "XPROMO_JOB_CONCURRENCY", def: "4", usage: "background jobs (vetting gate, scoring) this instance runs at once", serveOnly: true},
	{flag: "fraud-max-rate", env: "XPROMO_FRAUD_MAX_RATE", def: "0.3", usage: "fraud rate (claims rejected for fraud ÷ verified claims, as publisher) at or above which the lifecycle review suspends an app, over 0 and at most 1", serveOnly: true},
	{flag: "fraud-min-claims", env: "XPROMO_FRAUD_MIN_CLAIMS", def: "20", usage: "fewest verified claims as publisher in the fraud window before the fraud rate is judged", serveOnly: true},
	{flag: "fraud-window", env: "XPROMO_FRAUD_WINDOW", def: "168h", usage: "how far back the fraud rate looks (a Go duration)", serveOnly: true},
	{flag: "churn-min-retention", env: "XPROMO_CHURN_MIN_RETENTION", def: "0.2", usage: "share of its decided installs as publisher (in the fraud window) an app must retain; below it the lifecycle review suspends it for churn and claws back, over 0 and at most 1", serveOnly: true},
	{flag: "churn-min-decided", env: "XPROMO_CHURN_MIN_DECIDED", def: "20", usage: "fewest decided installs as publisher in the fraud window before churn is judged", serveOnly: true},
	{flag: "suspend-upheld-complaints", env: "XPROMO_SUSPEND_UPHELD_COMPLAINTS", def: "3", usage: "upheld complaints about an app (in the complaints window, since its last reinstatement) that suspend it", serveOnly: true},
	{flag: "complaints-window", env: "XPROMO_COMPLAINTS_WINDOW", def: "2160h", usage: "how long an upheld complaint counts against an app for suspension (a Go duration); a review reinstates an app it suspended for complaints once fewer are left in it", serveOnly: true},
	{flag: "clawback-window", env: "XPROMO_CLAWBACK_WINDOW", def: "720h", usage: "how long before a suspension for fraud a chain may have cleared and still be clawed back (a Go duration)", serveOnly: true},
	{flag: "review-interval", env: "XPROMO_REVIEW_INTERVAL", def: "5m", usage: "how often the lifecycle review runs (suspensions, clawbacks; a Go duration)", serveOnly: true},
	{flag: "canary-rate", env: "XPROMO_CANARY_RATE", def: "200", usage: "one fill in this many, on average per publisher app, answers a canary (a planted offer an honest SDK never shows or clicks; docs/apps.md \"Canary check\"); 0 serves none", serveOnly: true},
	{flag: "canary-min-served", env: "XPROMO_CANARY_MIN_SERVED", def: "5", usage: "canaries an app must have been served since its last reinstatement, none clicked, for its behaviour's canary to be true", serveOnly: true},
	{flag: "canary-max-clicks", env: "XPROMO_CANARY_MAX_CLICKS", def: "1", usage: "canaries an app's SDK key signed clicks for, since its last reinstatement, that suspend it for fraud (reason canary_failed; its cleared earnings are clawed back)", serveOnly: true},
	{flag: "live-min-cleared", env: "XPROMO_LIVE_MIN_CLEARED", def: "10", usage: "charged installs bought in the last 30 days a throttled app needs to go live", serveOnly: true},
	{flag: "live-min-retention", env: "XPROMO_LIVE_MIN_RETENTION", def: "0.4", usage: "48-hour retention (charged ÷ resolved) a throttled app needs to go live, over 0 and at most 1", serveOnly: true},
	{flag: "categories-file", env: "XPROMO_CATEGORIES_FILE", def: "", usage: "categories and floors (JSON, see docs/marketplace.md); empty: the shipped catalogue", serveOnly: true},
	{flag: "x402-facilitator-url", env: "XPROMO_X402_FACILITATOR_URL", def: "", usage: "base URL of the x402 facilitator settling top-ups (POST /verify, /settle), e.g. https://x402.org/facilitator; empty: x402 payments are refused (503 x402_unavailable); required in live mode", serveOnly: true},
	{flag: "x402-rpc-url", env: "XPROMO_X402_RPC_URL", def: "", usage: "JSON-RPC URL of the x402 network's chain, read by the reconciliation of settlements the facilitator did not answer; empty: such settlements stay pending for an operator", serveOnly: true},
	{flag: "x402-rate-url", env: "XPROMO_X402_RATE_URL", def: "", usage: "rate endpoint quoting x402 top-ups: GET answers {\"rate\": \"1.08\"} (USD per EUR); each challenge's amount is then stored and must be paid exactly before it lapses; empty: --x402-eur-usd", serveOnly: true},
	{flag: "x402-pay-to", env: "XPROMO_X402_PAY_TO", def: "", usage: "address x402 top-ups pay to", serveOnly: true},
	{flag: "x402-network", env: "XPROMO_X402_NETWORK", def: "", usage: "x402 network: base or base-sepolia (test mode: base-sepolia only)", serveOnly: true},
	{flag: "x402-eur-usd", env: "XPROMO_X402_EUR_USD", def: "", usage: "EUR to USD rate used to quote top-ups in USDC (e.g. 1.08); empty: 1", serveOnly: true},
	{flag: "stripe-secret-key", env: "XPROMO_STRIPE_SECRET_KEY", def: "", usage: "live mode: the Stripe secret key (sk_live_… or rk_live_…); prefer the environment variable, a flag shows in ps", serveOnly: true},
	{flag: "stripe-webhook-secret", env: "XPROMO_STRIPE_WEBHOOK_SECRET", def: "", usage: "live mode: signing secret(s) of the Stripe webhook endpoint <base URL>/v1/stripe/webhook (whsec_…), comma-separated while rolling one", serveOnly: true},
	{flag: "stripe-api-url", env: "XPROMO_STRIPE_API_URL", def: "", usage: "Stripe's API base URL; empty: https://api.stripe.com. Set it to rehearse against another counterpart, which also admits an sk_test_ key in live mode", serveOnly: true},
	{flag: "stripe-connect-country", env: "XPROMO_STRIPE_CONNECT_COUNTRY", def: "", usage: "live mode: country (ISO 3166-1 alpha-2, e.g. DE) of the Stripe Express accounts created for apps' payouts", serveOnly: true},
	{flag: "stripe-success-url", env: "XPROMO_STRIPE_SUCCESS_URL", def: "", usage: "where Stripe Checkout sends the payer after paying (and cancelling); empty: the base URL", serveOnly: true},
	{flag: "stripe-connect-return-url", env: "XPROMO_STRIPE_CONNECT_RETURN_URL", def: "", usage: "where Stripe's Connect onboarding sends the account holder back; empty: the base URL", serveOnly: true},
	{flag: "offer-secret", env: "XPROMO_OFFER_SECRET", def: "", usage: "secret (at least 32 bytes) sealing attribution offers, the same on every instance; empty: in test mode one drawn at first start and kept in the store, refused in live mode", serveOnly: true},
	{flag: "offer-secret-previous", env: "XPROMO_OFFER_SECRET_PREVIOUS", def: "", usage: "the offer secret before a rotation, still verifying offers sealed with it (keep it 30 minutes)", serveOnly: true},
	{flag: "ip2asn-file", env: "XPROMO_IP2ASN_FILE", def: "", usage: "IP-to-ASN table in the iptoasn.com TSV format (gzip or plain) for fraud_datacenter_asn", serveOnly: true},
	{flag: "datacenters-file", env: "XPROMO_DATACENTERS_FILE", def: "", usage: "datacenter AS numbers and CIDR prefixes, one per line; empty: the list shipped with the server", serveOnly: true},
	{flag: "webhooks-allow-loopback", env: "XPROMO_WEBHOOKS_ALLOW_LOOPBACK", def: "false", usage: "test mode only: let webhook endpoints be on 127.0.0.1 and ::1 (any port), for a receiver on this machine; true or false (1 or 0)", serveOnly: true},
	{flag: "mcp-allowed-origins", env: "XPROMO_MCP_ALLOWED_ORIGINS", def: "", usage: "comma-separated origins (scheme://host[:port], or *) of browser pages allowed to call /mcp, besides loopback ones and the base URL's; their hosts are accepted as Host too", serveOnly: true},
	{flag: "group-commit", env: "XPROMO_GROUP_COMMIT", def: "auto", usage: "let concurrent install claims share database transactions, each in a savepoint and answered after the shared commit (docs/ledger.md): true, false, or auto (SQLite: true; PostgreSQL: false, where it measured slower)", serveOnly: true},
	{flag: "group-commit-batch", env: "XPROMO_GROUP_COMMIT_BATCH", def: "0", usage: "most claims in one shared transaction; 0: the store's default (SQLite 256, PostgreSQL 32)", serveOnly: true},
	{flag: "group-commit-in-flight", env: "XPROMO_GROUP_COMMIT_IN_FLIGHT", def: "0", usage: "PostgreSQL: shared transactions running at once; 0: the default (4). SQLite always runs one (one writer)", serveOnly: true},
	{flag: "background", env: "XPROMO_BACKGROUND", def: "all", usage: "all: this instance also runs the background work (clearing sweep, lifecycle review, job queue, webhook deliveries, recoveries, purges); none: it only answers requests and stores its own fill counts, for a pool of instances that serve fills on cores of their own while others run the rest (PostgreSQL only; docs/operations.md)", serveOnly: true},
	{flag: "pprof-addr", env: "XPROMO_PPROF_ADDR", def: "", usage: "loopback address (127.0.0.1:port) serving Go's profiler at /debug/pprof/ for profiling under load; empty: off", serveOnly: true},
	// The process guard (docs/operations.md, "The process guard").
	{flag: "memory-limit", env: "XPROMO_MEMORY_LIMIT", def: "auto", usage: "the Go runtime's soft memory limit this process sets itself: a size (e.g. 2GiB, 512MiB), off, or auto (GOMEMLIMIT when set, else 3/4 of the cgroup's or the machine's memory)", serveOnly: true},
	{flag: "body-readers", env: "XPROMO_BODY_READERS", def: "256", usage: "requests that may send a body (read whole, at most 1 MiB) at once; the rest are answered 503 unavailable with Retry-After", serveOnly: true},
	{flag: "read-timeout", env: "XPROMO_READ_TIMEOUT", def: "30s", usage: "time a client has to send a request's headers and body (Go duration); a slower one is cut off", serveOnly: true},
	{flag: "read-header-timeout", env: "XPROMO_READ_HEADER_TIMEOUT", def: "10s", usage: "time a client has to send a request's headers (Go duration), at most --read-timeout", serveOnly: true},
	{flag: "trusted-proxies", env: "XPROMO_TRUSTED_PROXIES", def: "", usage: "comma-separated CIDR prefixes (or addresses) of proxies whose X-Forwarded-For is believed; empty: none", serveOnly: true},
	// The vetting gate (docs/gate.md).
	{flag: "gate-roots-file", env: "XPROMO_GATE_ROOTS_FILE", def: "", usage: "PEM file of the code-signing roots app downloads must chain to (Microsoft code-signing roots, Apple Root CA); empty: no real download is trusted (gate_untrusted_signer); required in live mode", serveOnly: true},
	{flag: "clamd-address", env: "XPROMO_CLAMD_ADDRESS", def: "", usage: "clamd address for the malware scan: tcp://host:port, host:port, unix:///path or /path; empty: real downloads cannot be scanned (gate_scanner_unavailable); required in live mode", serveOnly: true},
	{flag: "clamd-max-stream", env: "XPROMO_CLAMD_MAX_STREAM", def: "104857600", usage: "most bytes of a download streamed to clamd (larger: gate_too_large_to_scan); keep it at or below clamd's StreamMaxLength", serveOnly: true},
	{flag: "rdap-base-url", env: "XPROMO_RDAP_BASE_URL", def: "", usage: "RDAP server asked about every domain; empty: the server IANA's bootstrap file names for the TLD", serveOnly: true},
	{flag: "rdap-bootstrap-url", env: "XPROMO_RDAP_BOOTSTRAP_URL", def: "", usage: "where IANA's RDAP bootstrap file (dns.json) is fetched; empty: https://data.iana.org/rdap/dns.json", serveOnly: true},
	{flag: "rdap-bootstrap-file", env: "XPROMO_RDAP_BOOTSTRAP_FILE", def: "", usage: "local copy of IANA's dns.json, read instead of fetching it", serveOnly: true},
	{flag: "gate-notary-url", env: "XPROMO_GATE_NOTARY_URL", def: "", usage: "notarisation ticket lookup for macOS apps and .pkg files (Apple's CloudKit records lookup when empty); off: none, only a stapled ticket counts", serveOnly: true},
	{flag: "gate-revocation", env: "XPROMO_GATE_REVOCATION", def: "on", usage: "revocation checking of a verified signer's chain: on (OCSP at the certificate's responder, else its CRL; an unreachable one passes with evidence saying so) or off", serveOnly: true},
	{flag: "smtp-host", env: "XPROMO_SMTP_HOST", def: "", usage: "SMTP server mailing the contact challenges; empty: none is mailed (gate_mail_unavailable); required in live mode", serveOnly: true},
	{flag: "smtp-port", env: "XPROMO_SMTP_PORT", def: "0", usage: "SMTP port; 0: 587, or 465 with --smtp-tls implicit", serveOnly: true},
	{flag: "smtp-tls", env: "XPROMO_SMTP_TLS", def: "starttls", usage: "SMTP security: starttls (required), implicit (SMTPS), opportunistic or none", serveOnly: true},
	{flag: "smtp-username", env: "XPROMO_SMTP_USERNAME", def: "", usage: "SMTP user name; empty: no authentication", serveOnly: true},
	{flag: "smtp-password", env: "XPROMO_SMTP_PASSWORD", def: "", usage: "SMTP password (prefer the variable: flags show in ps)", serveOnly: true},
	{flag: "smtp-from", env: "XPROMO_SMTP_FROM", def: "", usage: "sender of the challenge emails, e.g. \"xpromo <verify@example.com>\"; required with --smtp-host", serveOnly: true},
	{flag: "gate-max-download", env: "XPROMO_GATE_MAX_DOWNLOAD", def: "1073741824", usage: "largest app download the gate fetches, in bytes (larger: gate_package_too_large)", serveOnly: true},
	{flag: "gate-download-timeout", env: "XPROMO_GATE_DOWNLOAD_TIMEOUT", def: "10m", usage: "time limit of one download, redirects included (Go duration)", serveOnly: true},
	{flag: "gate-job-budget", env: "XPROMO_GATE_JOB_BUDGET", def: "15m", usage: "time budget of one gate job (Go duration); more than the download timeout", serveOnly: true},
	// The scoring job (docs/reputation.md).
	{flag: "model-base-url", env: "XPROMO_MODEL_BASE_URL", def: "", usage: "OpenAI-compatible chat-completions API root asked about each app (AI visibility), e.g. https://api.openai.com/v1; empty: ai_visibility_unavailable (test mode: the sandbox answers for reserved names)", serveOnly: true},
	{flag: "model", env: "XPROMO_MODEL", def: "", usage: "the model asked (\"model\" in the request); required with --model-base-url", serveOnly: true},
	{flag: "model-api-key", env: "XPROMO_MODEL_API_KEY", def: "", usage: "API key sent to the model endpoint as a bearer token; empty: none (prefer the variable: flags show in ps)", serveOnly: true},
	{flag: "model-no-json-mode", env: "XPROMO_MODEL_NO_JSON_MODE", def: "false", usage: "leave response_format out of the model requests, for servers that refuse it; true or false", serveOnly: true},
	{flag: "store-lookup-url", env: "XPROMO_STORE_LOOKUP_URL", def: "", usage: "iTunes Search API root read for Mac App Store ratings; empty: https://itunes.apple.com", serveOnly: true},
	{flag: "store-country", env: "XPROMO_STORE_COUNTRY", def: "us", usage: "the App Store storefront (two-letter country code) whose ratings are read", serveOnly: true},
	{flag: "scoring-period", env: "XPROMO_SCORING_PERIOD", def: "168h", usage: "how often an app is re-scored (Go duration; next_review_at); a run with a counterpart down is followed after an hour", serveOnly: true},
}

// usageError is a bad command line or configuration: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// parseConfig reads the configuration of command name (its flags in args)
// with env as the environment. Flags win over the environment, which wins
// over the defaults. Help (-h, -help, --help) returns flag.ErrHelp after
// printing the usage to stdout (it was asked for); a bad flag prints the
// error and the usage to stderr. serve is the default command, so its help
// starts with the list of commands.
func parseConfig(name string, args []string, env func(string) string, stdout, stderr io.Writer) (config, error) {
	serve := name == "serve"
	fs := flag.NewFlagSet("xpromo-server "+name, flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	values := map[string]*string{}
	for _, s := range settings {
		if s.serveOnly && !serve {
			continue
		}
		values[s.flag] = fs.String(s.flag, s.def, s.usage+" (env "+s.env+")")
	}
	fs.Usage = func() {
		if serve {
			fmt.Fprintf(&out, "%s\n", usage)
		}
		fmt.Fprintf(&out, "Usage: xpromo-server %s [flags]\n\nFlags (each overrides its environment variable):\n", name)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			stdout.Write(out.Bytes())
			return config{}, err
		}
		// The flag package has written the error and the usage to out.
		stderr.Write(out.Bytes())
		return config{}, exitCode(exitUsage)
	}
	if fs.NArg() > 0 {
		return config{}, usagef("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// source names where a value came from, for error messages.
	source := map[string]string{}
	for _, s := range settings {
		p, ok := values[s.flag]
		if !ok {
			continue
		}
		source[s.flag] = "--" + s.flag
		if set[s.flag] {
			continue
		}
		if v := env(s.env); v != "" {
			*p = v
			source[s.flag] = s.env
		}
	}
	get := func(name string) string {
		if p, ok := values[name]; ok {
			return strings.TrimSpace(*p)
		}
		return ""
	}

	cfg := config{
		Addr:        get("addr"),
		DatabaseURL: get("database-url"),
		DataDir:     get("data-dir"),
		AdminToken:  get("admin-token"),
		Mode:        strings.ToLower(get("mode")),
		LogFormat:   strings.ToLower(get("log-format")),
	}
	if err := cfg.LogLevel.UnmarshalText([]byte(get("log-level"))); err != nil {
		return cfg, usagef("%s: invalid log level %q (want debug, info, warn or error)", source["log-level"], get("log-level"))
	}
	switch cfg.LogFormat {
	case "text", "json":
	default:
		return cfg, usagef("%s: invalid log format %q (want text or json)", source["log-format"], cfg.LogFormat)
	}
	if cfg.DataDir == "" {
		return cfg, usagef("%s: the data directory must not be empty", source["data-dir"])
	}
	if cfg.DatabaseURL != "" {
		if err := checkDatabaseURL(cfg.DatabaseURL); err != nil {
			return cfg, usagef("%s: %v", source["database-url"], err)
		}
	}
	var err error
	if cfg.ConnectTimeout, err = time.ParseDuration(get("db-connect-timeout")); err != nil || cfg.ConnectTimeout <= 0 {
		return cfg, usagef("%s: %q is not a positive Go duration", source["db-connect-timeout"], get("db-connect-timeout"))
	}
	if !serve {
		return cfg, nil
	}
	if cfg.ReadConns, err = strconv.Atoi(get("db-read-conns")); err != nil || cfg.ReadConns < 0 {
		return cfg, usagef("%s: %q is not a whole number of connections (0: as the write pool)", source["db-read-conns"], get("db-read-conns"))
	}
	for name, dst := range map[string]*time.Duration{"db-statement-timeout": &cfg.StatementTimeout, "request-timeout": &cfg.RequestTimeout} {
		d, err := time.ParseDuration(get(name))
		if err != nil || d < 0 || name == "request-timeout" && d == 0 {
			return cfg, usagef("%s: %q is not a positive Go duration", source[name], get(name))
		}
		*dst = d
	}
	if err := checkAddr(cfg.Addr); err != nil {
		return cfg, usagef("%s: %v", source["addr"], err)
	}
	cfg.BaseURL = strings.TrimSuffix(get("base-url"), "/")
	if cfg.BaseURL != "" {
		if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cfg, usagef("%s: %q is not an http(s) URL", source["base-url"], cfg.BaseURL)
		}
	}
	cfg.RedisURL = get("redis-url")
	cfg.CategoriesFile = get("categories-file")
	cfg.X402PayTo, cfg.X402Network, cfg.X402EURUSD = get("x402-pay-to"), get("x402-network"), get("x402-eur-usd")
	cfg.X402FacilitatorURL, cfg.X402RPCURL, cfg.X402RateURL = get("x402-facilitator-url"), get("x402-rpc-url"), get("x402-rate-url")
	for _, f := range []string{"x402-facilitator-url", "x402-rpc-url", "x402-rate-url"} {
		if v := get(f); v != "" {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return cfg, usagef("%s is not an http(s) URL", source[f]) // not echoed: it may hold a credential
			}
		}
	}
	cfg.OfferSecret, cfg.PreviousOfferSecret = get("offer-secret"), get("offer-secret-previous")
	cfg.StripeSecretKey, cfg.StripeAPIURL, cfg.StripeConnectCountry = get("stripe-secret-key"), get("stripe-api-url"), get("stripe-connect-country")
	cfg.StripeSuccessURL, cfg.StripeConnectReturnURL = get("stripe-success-url"), get("stripe-connect-return-url")
	for v := range strings.SplitSeq(get("stripe-webhook-secret"), ",") {
		if v = strings.TrimSpace(v); v != "" {
			cfg.StripeWebhookSecrets = append(cfg.StripeWebhookSecrets, v)
		}
	}
	for _, name := range []string{"stripe-api-url", "stripe-success-url", "stripe-connect-return-url"} {
		if v := get(name); v != "" {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return cfg, usagef("%s: %q is not an http(s) URL", source[name], v)
			}
		}
	}
	for _, sec := range []string{"offer-secret", "offer-secret-previous"} {
		if v := get(sec); v != "" && len(v) < 32 {
			return cfg, usagef("%s: the offer secret must be at least 32 bytes", source[sec])
		}
	}
	cfg.IPToASNFile, cfg.DatacentersFile = get("ip2asn-file"), get("datacenters-file")
	if cfg.PprofAddr = get("pprof-addr"); cfg.PprofAddr != "" {
		// The profiler shows memory and goroutines: never off this machine.
		host, _, err := net.SplitHostPort(cfg.PprofAddr)
		if a, aerr := netip.ParseAddr(host); err != nil || aerr != nil || !a.IsLoopback() {
			return cfg, usagef("%s: %q is not a loopback host:port", source["pprof-addr"], cfg.PprofAddr)
		}
	}
	for v := range strings.SplitSeq(get("trusted-proxies"), ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		p, err := netip.ParsePrefix(v)
		if err != nil {
			a, aerr := netip.ParseAddr(v)
			if aerr != nil {
				return cfg, usagef("%s: %q is not a CIDR prefix or an address", source["trusted-proxies"], v)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		cfg.TrustedProxies = append(cfg.TrustedProxies, p.Masked())
	}
	for v := range strings.SplitSeq(get("mcp-allowed-origins"), ",") {
		if v = strings.TrimSuffix(strings.TrimSpace(v), "/"); v == "" {
			continue
		}
		if u, err := url.Parse(v); v != "*" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "") {
			return cfg, usagef("%s: %q is not an origin (scheme://host[:port]) nor *", source["mcp-allowed-origins"], v)
		}
		cfg.MCPAllowedOrigins = append(cfg.MCPAllowedOrigins, v)
	}
	for name, dst := range map[string]*int{"rate-read": &cfg.ReadLimit, "rate-write": &cfg.WriteLimit} {
		n, err := strconv.Atoi(get(name))
		if err != nil || n < 1 {
			return cfg, usagef("%s: %q is not a positive number of requests per minute", source[name], get(name))
		}
		*dst = n
	}
	switch v := get("group-commit"); v {
	case "auto":
		cfg.GroupCommitAuto = true
	default:
		on, err := strconv.ParseBool(v)
		if err != nil {
			return cfg, usagef("%s: %q is not auto, true or false", source["group-commit"], v)
		}
		cfg.GroupCommit.Off = !on
	}
	for name, dst := range map[string]*int{"group-commit-batch": &cfg.GroupCommit.MaxBatch, "group-commit-in-flight": &cfg.GroupCommit.InFlight} {
		n, err := strconv.Atoi(get(name))
		if err != nil || n < 0 || n > 1024 {
			return cfg, usagef("%s: %q is not a number from 0 (the default) to 1024", source[name], get(name))
		}
		*dst = n
	}
	switch v := get("background"); v {
	case "all":
	case "none":
		// One embedded store has one process: nothing else would sweep.
		if cfg.DatabaseURL == "" {
			return cfg, usagef("%s: none needs --database-url: the embedded store has no other instance to run the background work", source["background"])
		}
		cfg.NoBackground = true
	default:
		return cfg, usagef("%s: %q is not all or none", source["background"], v)
	}
	concurrency, err := strconv.Atoi(get("job-concurrency"))
	if err != nil || concurrency < 1 || concurrency > maxJobConcurrency {
		return cfg, usagef("%s: %q is not a number of jobs from 1 to %d", source["job-concurrency"], get("job-concurrency"), maxJobConcurrency)
	}
	cfg.JobConcurrency = concurrency
	if cfg.CanaryRate, err = strconv.Atoi(get("canary-rate")); err != nil || cfg.CanaryRate < 0 {
		return cfg, usagef("%s: %q is not a whole number of fills (0 serves no canary)", source["canary-rate"], get("canary-rate"))
	}
	if cfg.Lifecycle, err = lifecycleRules(get, source); err != nil {
		return cfg, err
	}
	switch cfg.Mode {
	case httpapi.ModeTest, httpapi.ModeLive:
	default:
		return cfg, usagef("%s: invalid mode %q (want test or live)", source["mode"], cfg.Mode)
	}
	loopback, err := strconv.ParseBool(get("webhooks-allow-loopback"))
	if err != nil {
		return cfg, usagef("%s: %q is not true or false", source["webhooks-allow-loopback"], get("webhooks-allow-loopback"))
	}
	if loopback && cfg.Mode == httpapi.ModeLive {
		return cfg, usagef("%s: loopback webhook endpoints are for test mode only; live mode refuses them", source["webhooks-allow-loopback"])
	}
	cfg.WebhooksAllowLoopback = loopback
	if err := gateConfig(&cfg, get, source); err != nil {
		return cfg, err
	}
	if err := scoringConfig(&cfg, get, source); err != nil {
		return cfg, err
	}
	if err := parseGuard(&cfg, get, source); err != nil {
		return cfg, err
	}
	if cfg.Mode == httpapi.ModeLive && cfg.AdminToken != "" && len(cfg.AdminToken) < minLiveAdminToken {
		return cfg, usagef("%s: the admin token must be at least %d characters in live mode", source["admin-token"], minLiveAdminToken)
	}
	return cfg, nil
}

func checkAddr(addr string) error {
	// An empty host (":8080") means every interface, which net.Listen accepts.
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("invalid listen address %q (want host:port, e.g. 127.0.0.1:8080)", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("invalid port in listen address %q", addr)
	}
	return nil
}

// checkDatabaseURL accepts postgres:// and postgresql:// URLs. The message
// never repeats the URL: it may carry a password.
func checkDatabaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("the database URL does not parse as a URL (want postgres://user:password@host:5432/dbname)")
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return fmt.Errorf("unsupported database URL scheme %q (want postgres://…; leave it empty for embedded SQLite)", u.Scheme)
	}
	if u.Host == "" && u.Query().Get("host") == "" {
		return errors.New("the database URL names no host")
	}
	return nil
}

// sqlitePath is the embedded database's file.
func (c config) sqlitePath() string { return filepath.Join(c.DataDir, "xpromo.db") }

// redactURL returns the database URL without its password or query (which
// can carry password= or sslpassword=), safe to log.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable)"
	}
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	if u.User != nil {
		r.User = url.User(u.User.Username())
	}
	return r.String()
}

// gateConfig reads the vetting gate's settings. What live mode requires of
// them is checked when the server is built (assembly.Build), which says which
// are missing.
func gateConfig(cfg *config, get func(string) string, source map[string]string) error {
	g := &cfg.Gate
	g.RootsFile, g.ClamdAddress = get("gate-roots-file"), get("clamd-address")
	g.RDAPBaseURL, g.RDAPBootstrapURL, g.RDAPBootstrapFile = get("rdap-base-url"), get("rdap-bootstrap-url"), get("rdap-bootstrap-file")
	g.NotaryURL = get("gate-notary-url")
	switch strings.ToLower(get("gate-revocation")) {
	case "on": // the zero value: checking on
	case "off":
		g.Revocation = "off"
	default:
		return usagef("%s: %q is on or off", source["gate-revocation"], get("gate-revocation"))
	}
	g.SMTP = contact.SMTPConfig{Host: get("smtp-host"), TLS: contact.TLSMode(strings.ToLower(get("smtp-tls"))),
		Username: get("smtp-username"), Password: get("smtp-password"), From: get("smtp-from")}
	port, err := strconv.Atoi(get("smtp-port"))
	if err != nil || port < 0 || port > 65535 {
		return usagef("%s: %q is not a port", source["smtp-port"], get("smtp-port"))
	}
	g.SMTP.Port = port
	switch g.SMTP.TLS {
	case contact.TLSStartTLS, contact.TLSImplicit, contact.TLSOpportunistic, contact.TLSNone:
	default:
		return usagef("%s: %q is not starttls, implicit, opportunistic or none", source["smtp-tls"], get("smtp-tls"))
	}
	if g.SMTP.Host != "" && g.SMTP.From == "" {
		return usagef("%s: the sender of the challenge emails is required with an SMTP server", source["smtp-from"])
	}
	for name, dst := range map[string]*int64{"gate-max-download": &g.MaxDownloadBytes, "clamd-max-stream": &g.ClamdMaxStreamBytes} {
		n, err := strconv.ParseInt(get(name), 10, 64)
		if err != nil || n < 1 {
			return usagef("%s: %q is not a positive number of bytes", source[name], get(name))
		}
		*dst = n
	}
	for name, dst := range map[string]*time.Duration{"gate-download-timeout": &g.DownloadTimeout, "gate-job-budget": &g.Budget} {
		d, err := time.ParseDuration(get(name))
		if err != nil || d <= 0 {
			return usagef("%s: %q is not a positive duration (e.g. 10m)", source[name], get(name))
		}
		*dst = d
	}
	if g.Budget <= g.DownloadTimeout {
		return usagef("%s: the gate job's budget (%s) must be longer than the download timeout (%s)", source["gate-job-budget"], g.Budget, g.DownloadTimeout)
	}
	return nil
}

// scoringConfig reads the reputation signals' settings.
func scoringConfig(cfg *config, get func(string) string, source map[string]string) error {
	c := &cfg.Scoring
	c.ModelBaseURL, c.Model, c.ModelAPIKey = get("model-base-url"), get("model"), get("model-api-key")
	if (c.ModelBaseURL == "") != (c.Model == "") {
		return usagef("%s and %s: a model endpoint needs both its base URL and the model's name", source["model-base-url"], source["model"])
	}
	noJSON, err := strconv.ParseBool(get("model-no-json-mode"))
	if err != nil {
		return usagef("%s: %q is not true or false", source["model-no-json-mode"], get("model-no-json-mode"))
	}
	c.ModelNoJSONMode = noJSON
	c.StoreBaseURL, c.StoreCountry = get("store-lookup-url"), strings.ToLower(get("store-country"))
	if len(c.StoreCountry) != 2 {
		return usagef("%s: %q is not a two-letter country code", source["store-country"], get("store-country"))
	}
	d, err := time.ParseDuration(get("scoring-period"))
	if err != nil || d < time.Hour {
		return usagef("%s: %q is not a duration of at least an hour (e.g. 168h)", source["scoring-period"], get("scoring-period"))
	}
	c.Period = d
	if c.CanaryMinServed, err = strconv.ParseInt(get("canary-min-served"), 10, 64); err != nil || c.CanaryMinServed < 1 {
		return usagef("%s: %q is not a positive whole number", source["canary-min-served"], get("canary-min-served"))
	}
	return nil
}
