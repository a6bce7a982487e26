package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/secretbox"
)

const adminUsage = `mio admin — operator commands (connects with MIO_DATABASE_URL, else the database of
the mio dev in MIO_DATA_DIR via its dev.json; MIO_MASTER_KEY seals secrets)

  mio admin tenant create --name NAME
  mio admin tenant list | show ID | disable ID | enable ID
  mio admin tenant nats --tenant ID on|off   publish the tenant to NATS or not (default on)
  mio admin account create --tenant ID --channel SLUG [--name NAME] [--external-id ID]
        [--settings-file F] [--credentials-file F|-] [--credentials-env VAR]
        [--webhook-secret-file F|-] [--webhook-secret-env VAR]
  mio admin account install --tenant ID --channel SLUG (one with the capability install) [--name NAME]
        (--credentials-file F|- | --credentials-env VAR: the app's client_id, client_secret)
        [--settings-file F (scopes, api_base_url, …)] [--webhook-secret-file F|- | --webhook-secret-env VAR]
        [--public-url URL] [--return-url URL]   prints the platform's consent page (authorize_url)
  mio admin account list --tenant ID [--limit N] [--after NEXT]
  mio admin account show ID | disable ID | enable ID
  mio admin account update ID [--name NAME] [--rate-limit N|default] [--burst N|default]
        [--max-attempts N|default] [--api-base-url URL|default] [--settings-file F (merged)]
  mio admin account rotate-secret ID (--webhook-secret-file F|- | --webhook-secret-env VAR) [--grace 24h]
  mio admin account rotate-credentials ID (--credentials-file F|- | --credentials-env VAR)
  mio admin token create --tenant ID --name NAME --roles consume,produce,read
  mio admin token list --tenant ID [--limit N] [--after NEXT] | revoke ID --tenant ID
  mio admin admin-token create --name NAME --roles viewer,operator,credential-admin [--ttl 720h]
  mio admin admin-token list | revoke ID
  mio admin consumer list [--tenant ID] [--limit N] [--after NEXT] | show NAME --tenant ID | delete NAME --tenant ID
  mio admin consumer seek NAME --tenant ID --time RFC3339   (deliver messages received from then on)
  mio admin dead list [outbound|consumer|attachment] [--tenant ID] [--channel SLUG]
  mio admin dead show ID | requeue ID | discard ID [--tenant ID]
  mio admin dead requeue-all | discard-all [--kind K] [--tenant ID] [--channel SLUG] [--limit N]
  mio admin audit list [--tenant ID] [--action A] [--before ID] [--limit N]
  mio admin queue health [--tenant ID]
  mio admin channel-types   (the channels, their capabilities and default rate limits; no database)
  mio admin inbox tail --tenant ID   (inbound messages as they arrive, one JSON per line, until Ctrl-C)
  mio admin outbound search --tenant ID [--state S] [--account ID] [--conversation C]
        [--since RFC3339] [--until RFC3339] [--limit N] [--after ID (the previous page's next)]

Each command takes its own flags above, plus --database-url, --db-runtime-role,
--master-key, --data-dir and --log-level (or their environment variables);
account commands also --public-url. Other server flags are refused.

Secrets are never taken as plain flags (they would land in shell history):
give a file, '-' for standard input, or the name of an environment variable.
Output is JSON; secrets are never printed back (a new token is shown once).
Every change is written to mio.audit_log as cli:<os user>. Repeating an
idempotent change (revoke, disable, requeue) exits 0 with "changed": false.
Tenant names are unique (case-insensitively): creating a tenant whose name
exists prints the existing tenant, says so on standard error and exits 0.
`

// adminCommand is what one admin command accepts on the command line
// besides the configuration flags every admin command takes (the
// database, master key, data dir and log level): its own flags and other
// configuration flags it needs.
type adminCommand struct {
	flags, config []string
}

func adminCommands() map[string]adminCommand {
	printsURLs := []string{"public-url"} // account commands print webhook URLs
	return map[string]adminCommand{
		"tenant create":  {flags: []string{"name"}},
		"tenant list":    {},
		"tenant show":    {},
		"tenant disable": {},
		"tenant enable":  {},
		"tenant nats":    {flags: []string{"tenant"}},
		"account create": {flags: []string{"tenant", "channel", "name", "external-id", "settings-file",
			"credentials-file", "credentials-env", "webhook-secret-file", "webhook-secret-env"}, config: printsURLs},
		"account install": {flags: []string{"tenant", "channel", "name", "settings-file",
			"credentials-file", "credentials-env", "webhook-secret-file", "webhook-secret-env", "return-url"}, config: printsURLs},
		"account list":    {flags: []string{"tenant", "limit", "after"}, config: printsURLs},
		"account show":    {config: printsURLs},
		"account disable": {config: printsURLs},
		"account enable":  {config: printsURLs},
		"account update": {flags: []string{"name", "rate-limit", "burst", "max-attempts", "api-base-url", "settings-file"},
			config: printsURLs},
		"account rotate-secret":      {flags: []string{"webhook-secret-file", "webhook-secret-env", "grace"}, config: printsURLs},
		"account rotate-credentials": {flags: []string{"credentials-file", "credentials-env"}, config: printsURLs},
		"token create":               {flags: []string{"tenant", "name", "roles"}},
		"token list":                 {flags: []string{"tenant", "limit", "after"}},
		"token revoke":               {flags: []string{"tenant"}},
		"admin-token create":         {flags: []string{"name", "roles", "ttl"}},
		"admin-token list":           {flags: []string{"limit", "after"}},
		"admin-token revoke":         {},
		"consumer list":              {flags: []string{"tenant", "limit", "after"}},
		"consumer show":              {flags: []string{"tenant"}},
		"consumer delete":            {flags: []string{"tenant"}},
		"consumer seek":              {flags: []string{"tenant", "time"}},
		"dead list":                  {flags: []string{"tenant", "channel"}},
		"dead show":                  {flags: []string{"tenant"}},
		"dead requeue":               {flags: []string{"tenant"}},
		"dead discard":               {flags: []string{"tenant"}},
		"dead requeue-all":           {flags: []string{"tenant", "channel", "kind", "limit"}},
		"dead discard-all":           {flags: []string{"tenant", "channel", "kind", "limit"}},
		"audit list":                 {flags: []string{"tenant", "action", "before", "limit"}},
		"queue health":               {flags: []string{"tenant"}},
		"inbox tail":                 {flags: []string{"tenant"}},
		"outbound search":            {flags: []string{"tenant", "state", "account", "conversation", "since", "until", "limit", "after"}},
	}
}

// adminArgs are the admin commands' own flags and positional arguments.
type adminArgs struct {
	name, tenant, channel, externalID                      string
	settingsFile, credFile, credEnv, secretFile, secretEnv string
	roles, ttl, grace, kind, limit, after, action, before  string
	seekTime, state, accountID, conversation, since, until string
	rateLimit, burst, maxAttempts, apiBaseURL              string
	returnURL                                              string
	positional                                             []string
}

// register defines the named flags on fs.
func (a *adminArgs) register(fs *flag.FlagSet, names []string) {
	flags := map[string]struct {
		dst   *string
		usage string
	}{
		"name":                {&a.name, "name"},
		"tenant":              {&a.tenant, "tenant id"},
		"channel":             {&a.channel, "channel type: " + strings.Join(builtin.Registry(builtin.Options{}).Types(), ", ")},
		"external-id":         {&a.externalID, "platform id of the install (workspace, bot, phone number id)"},
		"settings-file":       {&a.settingsFile, "JSON file of non-secret adapter settings"},
		"credentials-file":    {&a.credFile, "JSON file of credentials ('-' for stdin)"},
		"credentials-env":     {&a.credEnv, "environment variable holding the credentials JSON"},
		"webhook-secret-file": {&a.secretFile, "file holding the webhook secret ('-' for stdin)"},
		"webhook-secret-env":  {&a.secretEnv, "environment variable holding the webhook secret"},
		"roles":               {&a.roles, "comma-separated token roles"},
		"ttl":                 {&a.ttl, "admin token lifetime (e.g. 720h); empty: no expiry"},
		"grace":               {&a.grace, "how long the previous webhook secret keeps verifying (default 24h; 0s: none)"},
		"kind":                {&a.kind, "dead letter kind: outbound, consumer or attachment"},
		"limit":               {&a.limit, "page size or how many to act on (1 to 1000)"},
		"after":               {&a.after, "page cursor (the previous page's next)"},
		"action":              {&a.action, "audit action, e.g. account.update"},
		"before":              {&a.before, "audit entries older than this id (the previous page's next)"},
		"state":               {&a.state, "outbound handoff state: queued, sending, handed_off or dead"},
		"account":             {&a.accountID, "account id"},
		"conversation":        {&a.conversation, "conversation id"},
		"since":               {&a.since, "from this RFC 3339 time on"},
		"until":               {&a.until, "before this RFC 3339 time"},
		"time":                {&a.seekTime, "RFC 3339 time, e.g. 2026-11-22T06:00:00Z"},
		"rate-limit":          {&a.rateLimit, "outbound messages per second, or 'default'"},
		"burst":               {&a.burst, "outbound burst, or 'default'"},
		"max-attempts":        {&a.maxAttempts, "send attempts per series (1 to 100), or 'default'"},
		"api-base-url":        {&a.apiBaseURL, "the platform API base URL (settings.api_base_url), or 'default'"},
		"return-url":          {&a.returnURL, "where the browser goes after the install (account_id added); default a page of MIO's"},
	}
	for _, n := range names {
		f, ok := flags[n]
		if !ok {
			panic("mio admin: no flag --" + n)
		}
		fs.StringVar(f.dst, n, "", f.usage)
	}
}

func cmdAdmin(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	if len(args) == 1 && args[0] == "channel-types" {
		out := json.NewEncoder(stdout)
		out.SetIndent("", "  ")
		return out.Encode(admin.Page[channels.Description]{Items: builtin.Registry(builtin.Options{}).Describe()})
	}
	if len(args) < 2 {
		fmt.Fprint(stderr, adminUsage)
		return &usageError{"mio admin needs a noun and a verb (see above)"}
	}
	command, rest := args[0]+" "+args[1], args[2:]
	c, ok := adminCommands()[command]
	if !ok {
		fmt.Fprint(stderr, adminUsage)
		return &usageError{fmt.Sprintf("mio admin: unknown command %q", command)}
	}
	// Positional arguments may come first ("account update ID --flag").
	var lead []string
	for len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		lead, rest = append(lead, rest[0]), rest[1:]
	}
	var a adminArgs
	configFlags := append([]string{"database-url", "db-runtime-role", "master-key", "data-dir", "log-level"}, c.config...)
	cfg, positional, err := loadConfigOnly("admin "+command, rest, getenv, stderr,
		func(fs *flag.FlagSet) { a.register(fs, c.flags) }, configFlags...)
	if err != nil {
		return err
	}
	a.positional = append(lead, positional...)
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = devDatabaseURL(cfg.DataDir)
	}
	if cfg.DatabaseURL == "" {
		return &usageError{"MIO_DATABASE_URL (or DATABASE_URL) is required for mio admin (or run it beside a mio dev: MIO_DATA_DIR/dev.json)"}
	}
	pool, err := db.Open(ctx, cfg.DatabaseURL, db.PoolOptions{MaxConns: 2, RuntimeRole: cfg.DBRuntimeRole, ApplicationName: "mio-admin"})
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer pool.Close()
	var box *secretbox.Box
	if cfg.MasterKey == nil {
		cfg.MasterKey = devMasterKey(cfg.DataDir)
	}
	if cfg.MasterKey != nil {
		if box, err = secretbox.New(cfg.MasterKey); err != nil {
			return err
		}
	}
	svc := admin.New(pool, box, cfg.PublicURL).As(cliActor(getenv)).WithRegistry(builtin.Registry(builtin.Options{APIBasePolicy: apiBasePolicy(cfg)}))
	out := json.NewEncoder(stdout)
	out.SetIndent("", "  ")
	var res any
	if command == "account install" {
		res, err = adminAccountInstall(ctx, pool, box, cfg, &a, getenv)
	} else {
		res, err = runAdmin(ctx, svc, pool, command, &a, getenv, stdout, stderr)
	}
	if err != nil {
		return adminErr(err)
	}
	if res == nil {
		return nil
	}
	return out.Encode(res)
}

// cliActor is who the CLI's changes are audited as: cli:<os user>.
func cliActor(getenv env) string {
	name := getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	return "cli:" + name
}

// changedResult is the output of an idempotent change.
type changedResult struct {
	Item    any  `json:"item"`
	Changed bool `json:"changed"`
}

// runAdmin runs one admin command and returns what to print as JSON (nil:
// it printed itself).
func runAdmin(ctx context.Context, svc *admin.Service, pool *pgxpool.Pool, command string, a *adminArgs, getenv env, stdout, stderr io.Writer) (any, error) {
	switch command {
	case "tenant create":
		t, created, err := svc.TenantCreate(ctx, a.name)
		if err == nil && !created {
			fmt.Fprintf(stderr, "tenant %q already existed (%s): nothing created\n", t.Name, t.ID)
		}
		return t, err
	case "tenant list":
		return adminTenantList(ctx, svc, stdout)
	case "tenant show":
		id, err := a.oneID("tenant")
		if err != nil {
			return nil, err
		}
		return svc.TenantShow(ctx, id)
	case "tenant disable", "tenant enable":
		id, err := a.oneID("tenant")
		if err != nil {
			return nil, err
		}
		status := db.TenantDisabled
		if command == "tenant enable" {
			status = db.TenantActive
		}
		t, ch, err := svc.TenantSetStatus(ctx, id, status)
		return changedResult{t, ch}, err
	case "account create":
		return adminAccountCreate(ctx, svc, a, getenv)
	case "account list":
		tid, err := a.tenantID()
		if err != nil {
			return nil, err
		}
		n, err := intFlag("limit", a.limit)
		if err != nil {
			return nil, err
		}
		return svc.AccountPage(ctx, tid, a.after, n)
	case "account show", "account disable", "account enable", "account update", "account rotate-secret", "account rotate-credentials":
		return adminAccount(ctx, svc, command, a, getenv)
	case "token create", "token list", "token revoke":
		return adminToken(ctx, svc, command, a)
	case "admin-token create", "admin-token list", "admin-token revoke":
		return adminAdminToken(ctx, svc, command, a)
	case "consumer list", "consumer show", "consumer delete", "consumer seek":
		return adminConsumer(ctx, svc, command, a)
	case "dead list", "dead show":
		return nil, cmdAdminDead(ctx, pool, strings.TrimPrefix(command, "dead "), a.tenant, a.channel, a.positional, stdout)
	case "dead requeue", "dead discard", "dead requeue-all", "dead discard-all":
		return adminDeadApply(ctx, svc, command, a)
	case "audit list":
		return adminAuditList(ctx, svc, a)
	case "outbound search":
		return adminOutboundSearch(ctx, svc, a)
	case "tenant nats":
		return nil, cmdAdminTenantNATS(ctx, pool, a, stdout)
	case "queue health":
		tid, err := a.optionalTenant()
		if err != nil {
			return nil, err
		}
		return svc.QueueHealth(ctx, tid)
	case "inbox tail":
		tid, err := a.tenantID()
		if err != nil {
			return nil, err
		}
		// One JSON object per line per message received from now on, until
		// interrupted; the database is polled (no LISTEN from the CLI).
		line := json.NewEncoder(stdout)
		return nil, svc.Tail(ctx, tid, admin.TailOptions{Poll: 500 * time.Millisecond,
			Live: func() { fmt.Fprintln(stderr, "mio admin inbox tail: live; Ctrl-C to stop") }},
			func(m *db.TailMessage) error { return line.Encode(m) })
	}
	return nil, fmt.Errorf("mio admin: command %q has no implementation", command)
}

func adminTenantList(ctx context.Context, svc *admin.Service, stdout io.Writer) (any, error) {
	ts, err := svc.TenantList(ctx)
	if err != nil {
		return nil, err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tCREATED")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Status, t.CreatedAt.Format("2006-01-02T15:04:05Z07:00"))
	}
	return nil, tw.Flush()
}

// adminAccountCreate creates an account from the flags: secrets from
// files, stdin or environment variables, the configuration checked by the
// channel's adapter before anything is written.
func adminAccountCreate(ctx context.Context, svc *admin.Service, a *adminArgs, getenv env) (*admin.AccountInfo, error) {
	tid, err := a.tenantID()
	if err != nil {
		return nil, err
	}
	p := admin.AccountCreateParams{TenantID: tid, ChannelType: a.channel, DisplayName: a.name, ExternalID: a.externalID,
		Registry: builtin.Registry(builtin.Options{APIBasePolicy: apiBasePolicyFromEnv(getenv)})}
	if a.settingsFile != "" {
		if p.Settings, err = os.ReadFile(a.settingsFile); err != nil {
			return nil, fmt.Errorf("settings file: %w", err)
		}
	}
	cred, err := readSecret(a.credFile, a.credEnv, getenv, "credentials")
	if err != nil {
		return nil, err
	}
	if cred != "" {
		p.Credentials = json.RawMessage(cred)
	}
	if p.WebhookSecret, err = readSecret(a.secretFile, a.secretEnv, getenv, "webhook secret"); err != nil {
		return nil, err
	}
	p.WebhookSecret = strings.TrimRight(p.WebhookSecret, "\r\n")
	info, err := svc.AccountCreate(ctx, p)
	if err != nil {
		return nil, adminErr(err)
	}
	return info, nil
}

// tenantID is --tenant, required.
func (a *adminArgs) tenantID() (uuid.UUID, error) {
	id, err := uuid.Parse(a.tenant)
	if err != nil {
		return uuid.Nil, &usageError{"--tenant must be a tenant id (uuid)"}
	}
	return id, nil
}

// account is the one positional account id, with its tenant.
func (a *adminArgs) account(ctx context.Context, svc *admin.Service) (tenantID, id uuid.UUID, err error) {
	if len(a.positional) != 1 {
		return uuid.Nil, uuid.Nil, &usageError{"give one account id"}
	}
	id, err = uuid.Parse(a.positional[0])
	if err != nil {
		return uuid.Nil, uuid.Nil, &usageError{"account id must be a uuid"}
	}
	tenantID, err = svc.TenantOfAccount(ctx, id)
	if err != nil {
		return uuid.Nil, uuid.Nil, fmt.Errorf("account %s: %w", id, err)
	}
	return tenantID, id, nil
}

// readSecret reads a secret from a file ("-" = stdin) or an environment
// variable; at most one source.
func readSecret(file, envVar string, getenv env, what string) (string, error) {
	switch {
	case file != "" && envVar != "":
		return "", &usageError{"give the " + what + " from a file or an environment variable, not both"}
	case file == "-":
		b, err := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
		return string(b), err
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s file: %w", what, err)
		}
		return string(b), nil
	case envVar != "":
		v := getenv(envVar)
		if v == "" {
			return "", &usageError{fmt.Sprintf("environment variable %s (for the %s) is empty", envVar, what)}
		}
		return v, nil
	}
	return "", nil
}

func adminErr(err error) error {
	if errors.Is(err, admin.ErrInvalid) {
		return &usageError{err.Error()}
	}
	return err
}
