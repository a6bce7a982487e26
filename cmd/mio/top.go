package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/miohq/mio/top"
)

// cmdTop runs `mio top`, the read-only terminal view over the admin
// listener (package top). The admin URL comes from --admin-url,
// MIO_ADMIN_URL or the dev.json of a running mio dev; the admin token from
// --admin-token-file, MIO_ADMIN_TOKEN, MIO_ADMIN_TOKEN_FILE or dev.json.
func cmdTop(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	var opts top.Options
	var adminURL, tokenFile string
	cfg, rest, err := loadConfigOnly("top", args, getenv, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&adminURL, "admin-url", "", "admin listener URL, e.g. http://127.0.0.1:9090 (env MIO_ADMIN_URL; default: dev.json's admin_url)")
		fs.StringVar(&tokenFile, "admin-token-file", "", "file holding an admin token with the viewer role (env MIO_ADMIN_TOKEN or MIO_ADMIN_TOKEN_FILE; default: dev.json's admin_token)")
		fs.DurationVar(&opts.Interval, "interval", 2*time.Second, "refresh period (100ms to 1h)")
		fs.BoolVar(&opts.Once, "once", false, "print one snapshot as plain tables and exit")
		fs.StringVar(&opts.Tenant, "tenant", "", "show one tenant: its name or id (default: every tenant; t cycles)")
	}, "data-dir")
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", rest[0])}
	}
	if opts.Interval < 100*time.Millisecond || opts.Interval > time.Hour {
		return &usageError{"--interval: want 100ms to 1h"}
	}
	var dev devInfo
	if b, err := os.ReadFile(filepath.Join(cfg.DataDir, "dev.json")); err == nil {
		_ = json.Unmarshal(b, &dev)
	}
	if opts.AdminURL, err = topAdminURL(adminURL, getenv, dev); err != nil {
		return err
	}
	if opts.Token, err = topAdminToken(tokenFile, getenv, dev); err != nil {
		return err
	}
	return top.Run(ctx, opts, os.Stdin, stdout)
}

// topAdminURL is the admin listener's URL: the flag, else MIO_ADMIN_URL,
// else dev.json's.
func topAdminURL(flagValue string, getenv env, dev devInfo) (string, error) {
	v, source := flagValue, "--admin-url"
	if v == "" {
		v, source = getenv("MIO_ADMIN_URL"), "MIO_ADMIN_URL"
	}
	if v == "" {
		v, source = dev.AdminURL, "dev.json admin_url"
	}
	if v == "" {
		return "", errors.New("no admin URL: give --admin-url or MIO_ADMIN_URL (e.g. http://127.0.0.1:9090), or run beside a mio dev ($MIO_DATA_DIR/dev.json)")
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("invalid admin URL (%s) %q: want http://host:port", source, v)
	}
	return strings.TrimRight(v, "/"), nil
}

// topAdminToken is the admin token: from the flag's file, else
// MIO_ADMIN_TOKEN, else the file MIO_ADMIN_TOKEN_FILE names, else
// dev.json's.
func topAdminToken(file string, getenv env, dev devInfo) (string, error) {
	source := "--admin-token-file"
	if file == "" {
		if v := getenv("MIO_ADMIN_TOKEN"); v != "" {
			return v, nil
		}
		file, source = getenv("MIO_ADMIN_TOKEN_FILE"), "MIO_ADMIN_TOKEN_FILE"
	}
	if file == "" {
		if dev.AdminToken == "" {
			return "", errors.New("no admin token: give --admin-token-file, MIO_ADMIN_TOKEN or MIO_ADMIN_TOKEN_FILE (mio admin admin-token create --roles viewer), or run beside a mio dev ($MIO_DATA_DIR/dev.json)")
		}
		return dev.AdminToken, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("admin token (%s): %w", source, err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("admin token (%s): %s is empty", source, file)
	}
	return token, nil
}
