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
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/secretbox"
)

const adminUsage = `mio admin — operator commands (connects with MIO_DATABASE_URL; MIO_MASTER_KEY seals secrets)

  mio admin tenant create --name NAME
  mio admin tenant list
  mio admin account create --tenant ID --channel SLUG [--name NAME] [--external-id ID]
        [--settings-file F] [--credentials-file F|-] [--credentials-env VAR]
        [--webhook-secret-file F|-] [--webhook-secret-env VAR]
  mio admin account list --tenant ID
  mio admin account show ID
  mio admin account disable ID | enable ID
  mio admin token create --tenant ID --name NAME --roles consume,produce,read
  mio admin dead list [outbound|consumer|attachment] [--tenant ID] [--channel SLUG]
  mio admin dead show ID | requeue ID | discard ID [--tenant ID]

Secrets are never taken as plain flags (they would land in shell history):
give a file, '-' for standard input, or the name of an environment variable.
Output is JSON; secrets are never printed back (a new token is shown once).
`

func cmdAdmin(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, adminUsage)
		return &usageError{"mio admin needs a noun and a verb (see above)"}
	}
	noun, verb, rest := args[0], args[1], args[2:]
	var (
		name, tenant, channel, externalID                      string
		settingsFile, credFile, credEnv, secretFile, secretEnv string
		roles                                                  string
		positional                                             []string
	)
	cfg, positional, err := loadConfigWith("admin "+noun+" "+verb, rest, getenv, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&name, "name", "", "name")
		fs.StringVar(&tenant, "tenant", "", "tenant id")
		fs.StringVar(&channel, "channel", "", "channel type: slack, telegram, discord, zoho_cliq, whatsapp, webhook")
		fs.StringVar(&externalID, "external-id", "", "platform id of the install (workspace, bot, phone number id)")
		fs.StringVar(&settingsFile, "settings-file", "", "JSON file of non-secret adapter settings")
		fs.StringVar(&credFile, "credentials-file", "", "JSON file of credentials ('-' for stdin)")
		fs.StringVar(&credEnv, "credentials-env", "", "environment variable holding the credentials JSON")
		fs.StringVar(&secretFile, "webhook-secret-file", "", "file holding the webhook secret ('-' for stdin)")
		fs.StringVar(&secretEnv, "webhook-secret-env", "", "environment variable holding the webhook secret")
		fs.StringVar(&roles, "roles", "", "comma-separated token roles")
	})
	if err != nil {
		return err
	}
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

	needTenant := func() (uuid.UUID, error) {
		id, err := uuid.Parse(tenant)
		if err != nil {
			return uuid.Nil, &usageError{"--tenant must be a tenant id (uuid)"}
		}
		return id, nil
	}
	accountArg := func() (uuid.UUID, uuid.UUID, error) {
		if len(positional) != 1 {
			return uuid.Nil, uuid.Nil, &usageError{"give one account id"}
		}
		id, err := uuid.Parse(positional[0])
		if err != nil {
			return uuid.Nil, uuid.Nil, &usageError{"account id must be a uuid"}
		}
		t, err := svc.TenantOfAccount(ctx, id)
		if err != nil {
			return uuid.Nil, uuid.Nil, fmt.Errorf("account %s: %w", id, err)
		}
		return t, id, nil
	}

	switch noun + " " + verb {
	case "tenant create":
		t, err := svc.TenantCreate(ctx, name)
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
		tid, err := needTenant()
		if err != nil {
			return err
		}
		p := admin.AccountCreateParams{TenantID: tid, ChannelType: channel, DisplayName: name, ExternalID: externalID}
		if settingsFile != "" {
			if p.Settings, err = os.ReadFile(settingsFile); err != nil {
				return fmt.Errorf("settings file: %w", err)
			}
		}
		cred, err := readSecret(credFile, credEnv, getenv, "credentials")
		if err != nil {
			return err
		}
		if cred != "" {
			p.Credentials = json.RawMessage(cred)
		}
		if p.WebhookSecret, err = readSecret(secretFile, secretEnv, getenv, "webhook secret"); err != nil {
			return err
		}
		p.WebhookSecret = strings.TrimRight(p.WebhookSecret, "\r\n")
		registry := builtin.Registry(builtin.Options{})
		p.Validate = func(a admin.AccountSecrets) error {
			ch, ok := registry.Get(a.Account.ChannelType)
			if !ok {
				return fmt.Errorf("unknown channel %q", a.Account.ChannelType)
			}
			sec, err := ingest.OpenSecrets(nil, &db.Account{ID: a.Account.ID, TenantID: a.Account.TenantID, ExternalID: a.Account.ExternalID, Settings: a.Account.Settings})
			if err != nil {
				return err
			}
			sec.Credentials, sec.WebhookSecret = a.Credentials, a.WebhookSecret
			_, err = ch.NewInbound(sec)
			return err
		}
		info, err := svc.AccountCreate(ctx, p)
		if err != nil {
			return adminErr(err)
		}
		return out.Encode(info)
	case "account list":
		tid, err := needTenant()
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
		tid, id, err := accountArg()
		if err != nil {
			return err
		}
		info, err := svc.AccountShow(ctx, tid, id)
		if err != nil {
			return err
		}
		return out.Encode(info)
	case "account disable", "account enable":
		tid, id, err := accountArg()
		if err != nil {
			return err
		}
		status := db.AccountDisabled
		if verb == "enable" {
			status = db.AccountActive
		}
		info, err := svc.AccountSetStatus(ctx, tid, id, status)
		if err != nil {
			return err
		}
		return out.Encode(info)
	case "dead list", "dead show", "dead requeue", "dead discard":
		return cmdAdminDead(ctx, pool, verb, tenant, channel, positional, stdout)
	case "token create":
		tid, err := needTenant()
		if err != nil {
			return err
		}
		var rl []string
		for _, r := range strings.Split(roles, ",") {
			if r = strings.TrimSpace(r); r != "" {
				rl = append(rl, r)
			}
		}
		token, meta, err := svc.TokenCreate(ctx, tid, name, rl)
		if err != nil {
			return adminErr(err)
		}
		return out.Encode(struct {
			Token string `json:"token"`
			*db.APIToken
		}{token, meta})
	default:
		fmt.Fprint(stderr, adminUsage)
		return &usageError{fmt.Sprintf("mio admin: unknown command %q", noun+" "+verb)}
	}
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
