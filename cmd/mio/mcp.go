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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/miohq/mio/client"
	"github.com/miohq/mio/mcpserver"
)

// cmdMCP runs `mio mcp`: an MCP server on stdin and stdout for a desktop
// agent, calling a MIO server's /v1 API (mcpserver.ClientBackend). The
// server is MIO_URL, the token MIO_API_TOKEN or the file
// MIO_API_TOKEN_FILE names; unset, both come from the dev.json of a
// running mio dev. Only protocol frames go to stdout; logs go to stderr.
func cmdMCP(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, rest, err := loadConfigOnly("mcp", args, getenv, stderr, func(*flag.FlagSet) {}, "data-dir", "log-level")
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", rest[0])}
	}
	var dev devInfo
	if b, err := os.ReadFile(filepath.Join(cfg.DataDir, "dev.json")); err == nil {
		_ = json.Unmarshal(b, &dev)
	}
	base, err := mcpURL(getenv, dev)
	if err != nil {
		return err
	}
	token, err := mcpToken(getenv, dev)
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogLevel)
	backend := mcpserver.NewClientBackend(client.New(base, token))
	srv := mcpserver.New(mcpserver.Options{Backend: func(context.Context, *mcp.RequestExtra) (mcpserver.Backend, error) {
		return backend, nil
	}, Logger: log, Version: version})
	err = srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("mcp: %w", err)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpURL is the MIO server's URL: MIO_URL, else dev.json's public URL.
func mcpURL(getenv env, dev devInfo) (string, error) {
	v, source := getenv("MIO_URL"), "MIO_URL"
	if v == "" {
		v, source = dev.PublicURL, "dev.json public_url"
	}
	if v == "" {
		return "", errors.New("no MIO server: set MIO_URL (e.g. http://127.0.0.1:8080), or run beside a mio dev ($MIO_DATA_DIR/dev.json)")
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("invalid MIO URL (%s) %q: want http://host:port", source, v)
	}
	return strings.TrimRight(v, "/"), nil
}

// mcpToken is the API token: MIO_API_TOKEN, else the file
// MIO_API_TOKEN_FILE names, else dev.json's.
func mcpToken(getenv env, dev devInfo) (string, error) {
	if v := getenv("MIO_API_TOKEN"); v != "" {
		return strings.TrimSpace(v), nil
	}
	if file := getenv("MIO_API_TOKEN_FILE"); file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("API token (MIO_API_TOKEN_FILE): %w", err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return "", fmt.Errorf("API token (MIO_API_TOKEN_FILE): %s is empty", file)
		}
		return token, nil
	}
	if dev.APIToken == "" {
		return "", errors.New("no API token: set MIO_API_TOKEN or MIO_API_TOKEN_FILE (mio admin token create --roles consume,produce,read), or run beside a mio dev ($MIO_DATA_DIR/dev.json)")
	}
	return dev.APIToken, nil
}
