package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/config"
	"github.com/miohq/mio/install"
	"github.com/miohq/mio/secretbox"
)

// adminAccountInstall begins a one-click install (mio admin account
// install) and returns the platform's consent page: opening it in a
// browser and consenting creates the account through the public
// listener's /install/{channel}/callback.
func adminAccountInstall(ctx context.Context, pool *pgxpool.Pool, box *secretbox.Box, cfg *config.Config, a *adminArgs, getenv env) (*install.Begun, error) {
	tid, err := a.tenantID()
	if err != nil {
		return nil, err
	}
	if box == nil {
		return nil, &usageError{"mio admin account install needs the master key (MIO_MASTER_KEY): the app's secret is sealed"}
	}
	p := install.BeginParams{TenantID: tid, ChannelType: a.channel, DisplayName: a.name, ReturnURL: a.returnURL,
		Actor: cliActor(getenv)}
	if a.settingsFile != "" {
		if p.Settings, err = os.ReadFile(a.settingsFile); err != nil {
			return nil, fmt.Errorf("settings file: %w", err)
		}
	}
	cred, err := readSecret(a.credFile, a.credEnv, getenv, "credentials")
	if err != nil {
		return nil, err
	}
	if cred == "" {
		return nil, &usageError{"mio admin account install needs the app's credentials (--credentials-file or --credentials-env): client_id and client_secret"}
	}
	p.Credentials = json.RawMessage(cred)
	if p.WebhookSecret, err = readSecret(a.secretFile, a.secretEnv, getenv, "webhook secret"); err != nil {
		return nil, err
	}
	svc := install.New(pool, install.Config{Box: box, PublicURL: cfg.PublicURL,
		Registry: builtin.Registry(builtin.Options{APIBasePolicy: apiBasePolicyFromEnv(getenv)})})
	begun, err := svc.Begin(ctx, p)
	if errors.Is(err, install.ErrInvalid) || errors.Is(err, install.ErrNotInstallable) {
		return nil, &usageError{err.Error()}
	}
	return begun, err
}
