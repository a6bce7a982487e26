package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels/webhook"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/config"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/mcpserver"
	"github.com/miohq/mio/secretbox"
)

// mcpServer is `mio serve` (in process, dispatch workers running) with a
// generic-webhook account whose replies reach a fake endpoint, and an
// agent token.
type mcpServer struct {
	public  string
	token   string
	account uuid.UUID
	secret  string
	fakes   *fakePlatforms
	api     *client.Client
}

func newMCPServer(t *testing.T) *mcpServer {
	t.Helper()
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	svc := admin.New(env.Pool, box, "http://mio.test")
	tenant, _, err := svc.TenantCreate(ctx, "mcp")
	require.NoError(t, err)
	s := &mcpServer{fakes: newFakePlatforms(t), secret: "whsec_" + base64.StdEncoding.EncodeToString(key)}
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "webhook",
		Settings: json.RawMessage(`{"endpoint_url":"` + s.fakes.srv.URL + `/webhook"}`), WebhookSecret: s.secret})
	require.NoError(t, err)
	s.account = acct.ID
	s.token, _, err = svc.TokenCreate(ctx, tenant.ID, "agent", []db.Role{db.RoleConsume, db.RoleProduce, db.RoleRead})
	require.NoError(t, err)

	vars := map[string]string{
		"MIO_DATABASE_URL": env.OwnerURL, "MIO_HTTP_ADDR": "127.0.0.1:0", "MIO_ADMIN_ADDR": "127.0.0.1:0",
		"MIO_MASTER_KEY": base64.StdEncoding.EncodeToString(key), "MIO_ENV": "dev",
		"MIO_BLOB_URL": "file://" + t.TempDir(), "MIO_LOG_LEVEL": "error",
	}
	cfg, _, err := config.Load("mio serve", nil, func(k string) string { return vars[k] }, io.Discard)
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(ctx)
	listening := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(sctx, cfg, slog.New(slog.DiscardHandler), nil, nil, func(public, _ string) { listening <- public })
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	select {
	case addr := <-listening:
		s.public = "http://" + addr
	case err := <-done:
		t.Fatalf("mio serve stopped: %v", err)
	}
	s.api = client.New(s.public, s.token)
	return s
}

// consumer creates a consumer of conversation conv's messages, those
// posted before the agent's first pull included.
func (s *mcpServer) consumer(t *testing.T, name, conv string) {
	t.Helper()
	_, err := s.api.PutConsumer(context.Background(), name, client.ConsumerConfig{Filter: client.ConsumerFilter{ConversationIDs: []string{conv}}})
	require.NoError(t, err)
}

// inbound posts a signed webhook message in conversation conv.
func (s *mcpServer) inbound(t *testing.T, conv, text string) {
	t.Helper()
	body := []byte(fmt.Sprintf(`{"type":"message.created","timestamp":%q,"data":{"conversation":{"id":%q},"sender":{"id":"u1"},"text":%q}}`,
		time.Now().UTC().Format(time.RFC3339), conv, text))
	id, now := "msg_"+uuid.NewString(), time.Now()
	sig, err := webhook.Sign(s.secret, id, now, body)
	require.NoError(t, err)
	req, _ := http.NewRequest(http.MethodPost, s.public+"/webhooks/webhook/"+s.account.String(), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// sendsTo waits until the fake endpoint received a send to conv, then
// a little longer, and returns the texts it received for conv.
func (s *mcpServer) sendsTo(t *testing.T, conv string) []string {
	t.Helper()
	texts := func() []string {
		var out []string
		for _, c := range s.fakes.received("webhook") {
			if c.Conversation == conv {
				out = append(out, c.Text)
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(texts()) > 0 }, 20*time.Second, 50*time.Millisecond, "no send reached the platform")
	time.Sleep(500 * time.Millisecond) // a second send would come now
	return texts()
}

// TestMCPStdioCommand runs `mio mcp` as a desktop agent would (the Go
// SDK's command transport: stdout must carry protocol frames only)
// against a running MIO: a message that arrived by webhook is pulled and
// answered, and exactly one send reaches the platform.
func TestMCPStdioCommand(t *testing.T) {
	t.Parallel()
	s := newMCPServer(t)
	s.consumer(t, "desktop", "conv-stdio")
	s.inbound(t, "conv-stdio", "hello over stdio")

	cmd := exec.Command(mioBin, "mcp")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cmd.Env = append(baseEnv(), "MIO_URL="+s.public, "MIO_API_TOKEN="+s.token, "MIO_DATA_DIR="+t.TempDir())
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, len(mcpserver.ToolNames))

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pull_messages", Arguments: map[string]any{"consumer": "desktop", "wait": "10s"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	var pulled struct {
		Deliveries []struct {
			DeliveryID string `json:"delivery_id"`
			Message    struct{ Text string }
		}
	}
	b, _ := json.Marshal(res.StructuredContent)
	require.NoError(t, json.Unmarshal(b, &pulled))
	require.Len(t, pulled.Deliveries, 1)
	require.Equal(t, "hello over stdio", pulled.Deliveries[0].Message.Text)
	for range 2 {
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "reply", Arguments: map[string]any{"consumer": "desktop",
			"delivery_id": pulled.Deliveries[0].DeliveryID, "text": "hi from stdio"}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
	}
	require.Equal(t, []string{"hi from stdio"}, s.sendsTo(t, "conv-stdio"))
	require.NoError(t, cs.Close())
	require.NotContains(t, stderr.String(), s.token, "the token never reaches the logs")
}

// TestMCPConfig: mio mcp finds the server and token in the environment,
// a token file, or mio dev's dev.json, and says what is missing.
func TestMCPConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("mio_file-token\n"), 0o600))
	dev := devInfo{PublicURL: "http://127.0.0.1:8080", APIToken: "mio_dev-token"}
	for _, c := range []struct {
		name       string
		env        map[string]string
		dev        devInfo
		url, token string
		err        string
	}{
		{name: "env", env: map[string]string{"MIO_URL": "https://mio.example.com/", "MIO_API_TOKEN": "mio_env"}, dev: dev,
			url: "https://mio.example.com", token: "mio_env"},
		{name: "token file", env: map[string]string{"MIO_URL": "http://x:1", "MIO_API_TOKEN_FILE": tokenFile},
			url: "http://x:1", token: "mio_file-token"},
		{name: "dev.json", dev: dev, url: "http://127.0.0.1:8080", token: "mio_dev-token"},
		{name: "nothing", err: "no MIO server: set MIO_URL"},
		{name: "no token", env: map[string]string{"MIO_URL": "http://x:1"}, err: "no API token: set MIO_API_TOKEN"},
		{name: "bad url", env: map[string]string{"MIO_URL": "ftp://x"}, err: "invalid MIO URL (MIO_URL)"},
		{name: "missing file", env: map[string]string{"MIO_URL": "http://x:1", "MIO_API_TOKEN_FILE": filepath.Join(dir, "nope")},
			err: "MIO_API_TOKEN_FILE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			getenv := func(k string) string { return c.env[k] }
			u, err := mcpURL(getenv, c.dev)
			if err == nil {
				var tok string
				tok, err = mcpToken(getenv, c.dev)
				if err == nil {
					require.Empty(t, c.err)
					require.Equal(t, c.url, u)
					require.Equal(t, c.token, tok)
					return
				}
			}
			require.NotEmpty(t, c.err, "unexpected error %v", err)
			require.ErrorContains(t, err, c.err)
		})
	}
	// The binary: nothing configured is an error on stderr, nothing on stdout.
	r := runMio(t, []string{"MIO_DATA_DIR=" + dir}, "mcp")
	require.Equal(t, 1, r.code)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "no MIO server")
}

// TestMCPTypeScriptClient checks MIO's MCP server with a client nobody at
// MIO wrote, the official TypeScript SDK's (testdata/mcp-client, npm ci
// from its committed package-lock.json), over `mio mcp` and over /mcp:
// it lists the tools, pulls a message that arrived by webhook and
// replies to it twice; exactly one send reaches the platform.
func TestMCPTypeScriptClient(t *testing.T) {
	t.Parallel()
	node, npm := nodeTools(t)
	dir := filepath.Join(repoRoot(t), "cmd", "mio", "testdata", "mcp-client")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "npm ci:\n%s", out)
	}
	s := newMCPServer(t)
	for _, mode := range []string{"stdio", "http"} {
		conv := "conv-ts-" + mode
		s.consumer(t, "ts-"+mode, conv)
		s.inbound(t, conv, "hello "+mode)
		target := mioBin
		if mode == "http" {
			target = s.public + "/mcp"
		}
		cmd := exec.Command(node, "check.mjs", mode, target)
		cmd.Dir = dir
		cmd.Env = append(baseEnv(), "MIO_URL="+s.public, "MIO_API_TOKEN="+s.token, "MIO_CONSUMER=ts-"+mode,
			"MIO_DATA_DIR="+t.TempDir())
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "%s: node check.mjs:\n%s%s", mode, stdout.String(), stderr.String())
		var got struct {
			Tools       []string `json:"tools"`
			Text        string   `json:"text"`
			OutboundIDs []string `json:"outbound_ids"`
		}
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), stdout.String())
		require.ElementsMatch(t, mcpserver.ToolNames, got.Tools, mode)
		require.Equal(t, "hello "+mode, got.Text)
		require.Len(t, got.OutboundIDs, 2)
		require.Equal(t, got.OutboundIDs[0], got.OutboundIDs[1], "%s: the second reply is the first", mode)
		require.Equal(t, []string{"answer to hello " + mode}, s.sendsTo(t, conv), mode)
		require.NotContains(t, stderr.String(), s.token)
	}
}

// nodeTools finds node and npm, or skips with the reason (never in CI:
// there the client nobody here wrote must run).
func nodeTools(t *testing.T) (string, string) {
	t.Helper()
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node and npm are required in CI (deploy/scripts/ensure-sdk-tools.sh installs them)")
		}
		t.Skip("node and npm are not installed (make test installs them: deploy/scripts/ensure-sdk-tools.sh); " +
			"the official TypeScript MCP client cannot run")
	}
	return node, npm
}

// TestMCPExampleAgent runs examples/mcp-agent over `mio mcp`: it answers
// one message end to end.
func TestMCPExampleAgent(t *testing.T) {
	t.Parallel()
	s := newMCPServer(t)
	s.consumer(t, "example", "conv-example")
	s.inbound(t, "conv-example", "hello example")
	bin := filepath.Join(t.TempDir(), "mcp-agent")
	build := exec.Command("go", "build", "-o", bin, "./examples/mcp-agent")
	build.Dir = repoRoot(t)
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	agent := exec.CommandContext(ctx, bin)
	agent.Env = append(baseEnv(), "MIO_BIN="+mioBin, "MIO_URL="+s.public, "MIO_API_TOKEN="+s.token,
		"MIO_CONSUMER=example", "MIO_AGENT_MAX=1", "MIO_DATA_DIR="+t.TempDir())
	out, err = agent.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "answered ")
	require.Equal(t, []string{"You said: hello example"}, s.sendsTo(t, "conv-example"))
}
