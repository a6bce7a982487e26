package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/config"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/localpg"
	"github.com/miohq/mio/migrations"
	"github.com/miohq/mio/secretbox"
)

// devInfo is $MIO_DATA_DIR/dev.json: the demo install, for scripts.
type devInfo struct {
	PublicURL     string    `json:"public_url"`
	AdminURL      string    `json:"admin_url"`
	TenantID      uuid.UUID `json:"tenant_id"`
	AccountID     uuid.UUID `json:"account_id"`
	ChannelType   string    `json:"channel_type"`
	WebhookURL    string    `json:"webhook_url"`
	WebhookSecret string    `json:"webhook_secret"`
	APIToken      string    `json:"api_token"`
	AdminToken    string    `json:"admin_token"`
	// DatabaseURL lets `mio admin` find the dev database (owner role).
	DatabaseURL string `json:"database_url"`
	// ConsoleURL is the admin listener's root (the operator console).
	ConsoleURL string `json:"console_url"`
}

func cmdDev(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	cfg, rest, err := loadConfig("dev", args, getenv, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", rest[0])}
	}
	if cfg.Env == "prod" {
		return &usageError{"mio dev refuses to run with MIO_ENV=prod: use mio serve"}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	log := newLogger(stderr, cfg.LogLevel)
	rt := config.TuneRuntime(getenv, os.ReadFile)
	if cfg.MasterKey == nil {
		if cfg.MasterKey, err = devSecretFile(filepath.Join(cfg.DataDir, "master.key"), 32); err != nil {
			return err
		}
	}

	if cfg.DatabaseURL == "" {
		password, err := devSecretFile(filepath.Join(cfg.DataDir, "pg-password"), 24)
		if err != nil {
			return err
		}
		logFile, err := os.OpenFile(filepath.Join(cfg.DataDir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer logFile.Close()
		fmt.Fprintf(stdout, "starting PostgreSQL in %s ...\n", filepath.Join(cfg.DataDir, "pg"))
		srv, err := localpg.Start(ctx, localpg.Options{
			DataDir:        filepath.Join(cfg.DataDir, "pg"),
			Password:       base64.RawURLEncoding.EncodeToString(password),
			Log:            logFile,
			KillWithParent: true,
		})
		if err != nil {
			return fmt.Errorf("local PostgreSQL: %w", err)
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := srv.Stop(sctx); err != nil {
				fmt.Fprintln(stderr, "mio: stop PostgreSQL:", err)
			} else {
				fmt.Fprintln(stdout, "PostgreSQL stopped")
			}
		}()
		if err := ensureDatabase(ctx, srv.URL("postgres"), "mio"); err != nil {
			return err
		}
		cfg.DatabaseURL = srv.URL("mio")
	}

	owner, err := db.Open(ctx, cfg.DatabaseURL, db.PoolOptions{MaxConns: 2, StatementTimeout: -1, ApplicationName: "mio-dev"})
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	if _, err := migrations.New(owner).WithChannelTypes(channelTypes(builtin.Registry(builtin.Options{}))).Up(ctx); err != nil {
		owner.Close()
		return fmt.Errorf("migrate: %w", err)
	}
	owner.Close()

	info, err := devSeed(ctx, cfg)
	if err != nil {
		return fmt.Errorf("seed demo install: %w", err)
	}

	tp, stopTracing, err := startTracing(ctx, getenv, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	return serve(ctx, cfg, log, &rt, tp, func(publicAddr, adminAddr string) {
		info.AdminURL = "http://" + loopbackURLHost(adminAddr)
		info.ConsoleURL = info.AdminURL + "/"
		info.DatabaseURL = cfg.DatabaseURL
		if cfg.PublicURLDerived && publicAddr != "" {
			// The listener may have picked its port (":0"): show the real one.
			info.PublicURL = "http://" + loopbackURLHost(publicAddr)
			info.WebhookURL = admin.WebhookURL(info.PublicURL, info.ChannelType, info.AccountID)
		}
		if err := writeJSONFile(filepath.Join(cfg.DataDir, "dev.json"), info); err != nil {
			log.Warn("write dev.json", "err", err)
		}
		fmt.Fprintf(stdout, `
MIO is running (Ctrl-C to stop)
  public URL:      %s
  admin URL:       %s/metrics
  console:         %s (sign in with the admin token)
  webhook URL:     %s
  webhook secret:  %s
  API token:       %s
  admin token:     %s
  written to:      %s
`, info.PublicURL, info.AdminURL, info.ConsoleURL, info.WebhookURL, info.WebhookSecret, info.APIToken, info.AdminToken, filepath.Join(cfg.DataDir, "dev.json"))
	})
}

// devSeed creates (once) a demo tenant, a generic-webhook account and
// tokens, reusing what dev.json records when it is still in the database.
// A data directory new to the database (no dev.json, or one naming an
// account the database lacks) reuses the database's demo tenant, the
// tenant name being unique, and adds an account and tokens of its own: a
// token is stored only as a hash and the account's secret is sealed with
// the data directory's master key, so neither can be recovered here.
func devSeed(ctx context.Context, cfg *config.Config) (*devInfo, error) {
	pool, err := db.Open(ctx, cfg.DatabaseURL, db.PoolOptions{MaxConns: 2, RuntimeRole: cfg.DBRuntimeRole})
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	box, err := secretbox.New(cfg.MasterKey)
	if err != nil {
		return nil, err
	}
	svc := admin.New(pool, box, cfg.PublicURL)
	path := filepath.Join(cfg.DataDir, "dev.json")

	var prev devInfo
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &prev) == nil && prev.AccountID != uuid.Nil {
		if _, err := svc.AccountShow(ctx, prev.TenantID, prev.AccountID); err == nil {
			prev.PublicURL = cfg.PublicURL
			prev.WebhookURL = admin.WebhookURL(cfg.PublicURL, prev.ChannelType, prev.AccountID)
			return &prev, nil
		}
	}

	tenant, _, err := svc.TenantCreate(ctx, "demo")
	if err != nil {
		return nil, err
	}
	secret := "whsec_" + base64.StdEncoding.EncodeToString(randomBytes(32))
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{
		TenantID: tenant.ID, ChannelType: "webhook", DisplayName: "demo webhook", WebhookSecret: secret,
	})
	if err != nil {
		return nil, err
	}
	token, _, err := svc.TokenCreate(ctx, tenant.ID, "demo", []db.Role{db.RoleConsume, db.RoleProduce, db.RoleRead})
	if err != nil {
		return nil, err
	}
	adminToken, _, err := svc.AdminTokenCreate(ctx, admin.AdminTokenCreateParams{Name: "demo",
		Roles: []db.AdminRole{db.AdminRoleViewer, db.AdminRoleOperator, db.AdminRoleCredentialAdmin}})
	if err != nil {
		return nil, err
	}
	return &devInfo{
		PublicURL: cfg.PublicURL, TenantID: tenant.ID, AccountID: acct.ID, ChannelType: acct.ChannelType,
		WebhookURL: acct.WebhookURL, WebhookSecret: secret, APIToken: token, AdminToken: adminToken,
	}, nil
}

func ensureDatabase(ctx context.Context, maintenanceURL, name string) error {
	conn, err := pgx.Connect(ctx, maintenanceURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	}
	return err
}

// devSecretFile returns the secret in path, creating it with n random
// bytes (base64) on first use.
func devSecretFile(path string, n int) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil {
		k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(k) != n {
			return nil, fmt.Errorf("%s is corrupt: delete it to generate a new one", path)
		}
		return k, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	k := randomBytes(n)
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(k)+"\n"), 0o600); err != nil {
		return nil, err
	}
	return k, nil
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// loopbackURLHost turns a listener address into a host:port usable in a
// URL (an unspecified host becomes localhost).
func loopbackURLHost(addr string) string {
	if strings.HasPrefix(addr, "[::]:") {
		return "localhost:" + strings.TrimPrefix(addr, "[::]:")
	}
	if strings.HasPrefix(addr, "0.0.0.0:") {
		return "localhost:" + strings.TrimPrefix(addr, "0.0.0.0:")
	}
	return addr
}
