package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/google/uuid"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/secretbox"
)

const adminUsage = `mio admin — operator commands (connects with MIO_DATABASE_URL; MIO_MASTER_KEY seals secrets)

  mio admin tenant create --name NAME
  mio admin tenant list
  mio admin tenant nats --tenant ID on|off   publish the tenant to NATS or not (default on)
  mio admin account create --tenant ID --channel SLUG [--name NAME] [--external-id ID]
        [--settings-file F] [--credentials-file F|-] [--credentials-env VAR]
        [--webhook-secret-file F|-] [--webhook-secret-env VAR]
  mio admin account list --tenant ID
  mio admin account show ID
  mio admin account disable ID | enable ID
  mio admin token create --tenant ID --name NAME --roles consume,produce,read
  mio admin dead list [outbound|consumer|attachment] [--tenant ID] [--channel SLUG]
  mio admin dead show ID | requeue ID | discard ID [--tenant ID]

Each command takes its own flags above, plus --database-url, --db-runtime-role,
--master-key, --data-dir and --log-level (or their environment variables);
account commands also --public-url. Other server flags are refused.

Secrets are never taken as plain flags (they would land in shell history):
give a file, '-' for standard input, or the name of an environment variable.
Output is JSON; secrets are never printed back (a new token is shown once).
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
		"tenant create": {flags: []string{"name"}},
		"tenant list":   {},
		"tenant nats":   {flags: []string{"tenant"}},
		"account create": {flags: []string{"tenant", "channel", "name", "external-id", "settings-file",
			"credentials-file", "credentials-env", "webhook-secret-file", "webhook-secret-env"}, config: printsURLs},
		"account list":    {flags: []string{"tenant"}, config: printsURLs},
		"account show":    {config: printsURLs},
		"account disable": {config: printsURLs},
		"account enable":  {config: printsURLs},
		"token create":    {flags: []string{"tenant", "name", "roles"}},
		"dead list":       {flags: []string{"tenant", "channel"}},
		"dead show":       {flags: []string{"tenant"}},
		"dead requeue":    {flags: []string{"tenant"}},
		"dead discard":    {flags: []string{"tenant"}},
	}
}

// adminArgs are the admin commands' own flags and positional arguments.
type adminArgs struct {
	name, tenant, channel, externalID                      string
	settingsFile, credFile, credEnv, secretFile, secretEnv string
	roles                                                  string
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
		"channel":             {&a.channel, "channel type: slack, telegram, discord, zoho_cliq, whatsapp, webhook"},
		"external-id":         {&a.externalID, "platform id of the install (workspace, bot, phone number id)"},
		"settings-file":       {&a.settingsFile, "JSON file of non-secret adapter settings"},
		"credentials-file":    {&a.credFile, "JSON file of credentials ('-' for stdin)"},
		"credentials-env":     {&a.credEnv, "environment variable holding the credentials JSON"},
		"webhook-secret-file": {&a.secretFile, "file holding the webhook secret ('-' for stdin)"},
		"webhook-secret-env":  {&a.secretEnv, "environment variable holding the webhook secret"},
		"roles":               {&a.roles, "comma-separated token roles"},
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
	var a adminArgs
	configFlags := append([]string{"database-url", "db-runtime-role", "master-key", "data-dir", "log-level"}, c.config...)
	cfg, positional, err := loadConfigOnly("admin "+command, rest, getenv, stderr,
		func(fs *flag.FlagSet) { a.register(fs, c.flags) }, configFlags...)
	if err != nil {
		return err
	}
	a.positional = positional
	if cfg.DatabaseURL == "" {
		return &usageError{"MIO_DATABASE_URL (or DATABASE_URL) is required for mio admin"}
	}
	pool, err := db.Open(ctx, cfg.DatabaseURL, db.PoolOptions{MaxConns: 2, RuntimeRole: cfg.DBRuntimeRole, ApplicationName: "mio-admin"})
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer pool.Close()
	var box *secretbox.Box
	if cfg.MasterKey != nil {
		if box, err = secretbox.New(cfg.MasterKey); err != nil {
			return err
		}
	}
	svc := admin.New(pool, box, cfg.PublicURL)
	out := json.NewEncoder(stdout)
	out.SetIndent("", "  ")

	switch command {
	case "tenant create":
		t, err := svc.TenantCreate(ctx, a.name)
		if err != nil {
			return adminErr(err)
		}
		return out.Encode(t)
	case "tenant list":
		ts, err := svc.TenantList(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tCREATED")
		for _, t := range ts {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", t.ID, t.Name, t.CreatedAt.Format("2006-01-02T15:04:05Z07:00"))
		}
		return tw.Flush()
	case "account create":
		info, err := adminAccountCreate(ctx, svc, &a, getenv)
		if err != nil {
			return err
		}
		return out.Encode(info)
	case "account list":
		tid, err := a.tenantID()
		if err != nil {
			return err
		}
		list, err := svc.AccountList(ctx, tid)
		if err != nil {
			return err
		}
		if list == nil {
			list = []*admin.AccountInfo{}
		}
		return out.Encode(list)
	case "account show":
		tid, id, err := a.account(ctx, svc)
		if err != nil {
			return err
		}
		info, err := svc.AccountShow(ctx, tid, id)
		if err != nil {
			return err
		}
		return out.Encode(info)
	case "account disable", "account enable":
		tid, id, err := a.account(ctx, svc)
		if err != nil {
			return err
		}
		status := db.AccountDisabled
		if command == "account enable" {
			status = db.AccountActive
		}
		info, err := svc.AccountSetStatus(ctx, tid, id, status)
		if err != nil {
			return err
		}
		return out.Encode(info)
	case "tenant nats":
		return cmdAdminTenantNATS(ctx, pool, &a, stdout)
	case "dead list", "dead show", "dead requeue", "dead discard":
		return cmdAdminDead(ctx, pool, args[1], a.tenant, a.channel, a.positional, stdout)
	case "token create":
		tid, err := a.tenantID()
		if err != nil {
			return err
		}
		var roles []db.Role
		for _, r := range strings.Split(a.roles, ",") {
			if r = strings.TrimSpace(r); r != "" {
				roles = append(roles, db.Role(r))
			}
		}
		token, meta, err := svc.TokenCreate(ctx, tid, a.name, roles)
		if err != nil {
			return adminErr(err)
		}
		return out.Encode(struct {
			Token string `json:"token"`
			*db.APIToken
		}{token, meta})
	}
	return fmt.Errorf("mio admin: command %q has no implementation", command)
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
		Registry: builtin.Registry(builtin.Options{})}
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
