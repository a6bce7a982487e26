package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/miohq/mio/channels/webhook"
)

// cmdSendTest sends one signed Standard Webhooks message.created to a
// generic-webhook account: by default the demo account of `mio dev`
// (from $MIO_DATA_DIR/dev.json).
func cmdSendTest(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	var text, conversation, sender, url, secret string
	cfg, rest, err := loadConfigWith("send-test", args, getenv, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&text, "text", "hello from mio send-test", "message text")
		fs.StringVar(&conversation, "conversation", "demo-conversation", "conversation id")
		fs.StringVar(&sender, "sender", "demo-user", "sender id")
		fs.StringVar(&url, "url", "", "webhook URL (default: dev.json's webhook_url)")
		fs.StringVar(&secret, "secret-env", "", "environment variable holding the whsec_ secret (default: dev.json's)")
	})
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", rest[0])}
	}
	var info devInfo
	if b, err := os.ReadFile(filepath.Join(cfg.DataDir, "dev.json")); err == nil {
		_ = json.Unmarshal(b, &info)
	}
	if url == "" {
		url = info.WebhookURL
	}
	whsec := info.WebhookSecret
	if secret != "" {
		whsec = getenv(secret)
	}
	if url == "" || whsec == "" {
		return &usageError{"no webhook URL or secret: run mio dev first, or give --url and --secret-env"}
	}
	body, _ := json.Marshal(map[string]any{
		"type": "message.created", "timestamp": time.Now().UTC().Format(time.RFC3339),
		"data": map[string]any{"conversation": map[string]string{"id": conversation}, "sender": map[string]string{"id": sender}, "text": text},
	})
	idb := make([]byte, 8)
	_, _ = rand.Read(idb)
	id := "msg_" + hex.EncodeToString(idb)
	now := time.Now()
	sig, err := webhook.Sign(whsec, id, now, body)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	fmt.Fprintf(stdout, "%s %s -> %d %s\n", id, url, resp.StatusCode, bytes.TrimSpace(answer))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("webhook answered %d", resp.StatusCode)
	}
	return nil
}
