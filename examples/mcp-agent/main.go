// Command mcp-agent is an agent on MIO that speaks only MCP: it reaches
// MIO's tools over `mio mcp` (stdio, the default) or Streamable HTTP
// (MIO_MCP_URL, e.g. http://127.0.0.1:8080/mcp, with MIO_API_TOKEN), and
// loops: pull_messages, show_typing, then reply — the answer sent and the
// delivery acknowledged in one step. The "model" is an offline stub.
// MIO_AGENT_MAX=N stops after N messages.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

// delivery is the part of a pull_messages delivery the agent reads.
type delivery struct {
	DeliveryID string `json:"delivery_id"`
	Message    struct {
		ID           string `json:"id"`
		AccountID    string `json:"account_id"`
		Text         string `json:"text"`
		Conversation struct {
			ID string `json:"id"`
		} `json:"conversation"`
		ThreadID string `json:"thread_id"`
	} `json:"message"`
}

func run(ctx context.Context) error {
	cs, err := connect(ctx)
	if err != nil {
		return err
	}
	defer cs.Close()
	limit, _ := strconv.Atoi(os.Getenv("MIO_AGENT_MAX"))
	consumer := os.Getenv("MIO_CONSUMER")
	if consumer == "" {
		consumer = "mcp-agent"
	}
	for answered := 0; limit == 0 || answered < limit; {
		var pulled struct {
			Deliveries []delivery `json:"deliveries"`
		}
		if err := call(ctx, cs, "pull_messages", map[string]any{"consumer": consumer, "max_messages": 10, "wait": "30s"}, &pulled); err != nil {
			return err
		}
		for _, d := range pulled.Deliveries {
			m := d.Message
			// Best effort: a channel without an indicator answers "unsupported".
			_ = call(ctx, cs, "show_typing", map[string]any{"account_id": m.AccountID, "conversation_id": m.Conversation.ID,
				"thread_id": m.ThreadID}, nil)
			var sent struct {
				OutboundID string `json:"outbound_id"`
			}
			// reply answers in the message's conversation and thread, and acks
			// the delivery in the same transaction; its default idempotency
			// key (reply:<delivery_id>) makes a retry send once.
			err := call(ctx, cs, "reply", map[string]any{"consumer": consumer, "delivery_id": d.DeliveryID, "text": answer(m.Text)}, &sent)
			if err != nil {
				// A lost lease: the message comes back under a new delivery id.
				log.Printf("not answered %s: %v", m.ID, err)
				continue
			}
			fmt.Printf("answered %s with %s\n", m.ID, sent.OutboundID)
			answered++
		}
	}
	return nil
}

// answer is the model: an offline stub.
func answer(text string) string {
	return "You said: " + strings.TrimSpace(text)
}

// connect starts `mio mcp` (MIO_BIN, default "mio") or connects to
// MIO_MCP_URL.
func connect(ctx context.Context) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "mcp-agent", Version: "v0.1.0"}, nil)
	if u := os.Getenv("MIO_MCP_URL"); u != "" {
		hc := &http.Client{Transport: bearer{os.Getenv("MIO_API_TOKEN"), http.DefaultTransport}}
		return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: hc}, nil)
	}
	bin := os.Getenv("MIO_BIN")
	if bin == "" {
		bin = "mio"
	}
	cmd := exec.Command(bin, "mcp")
	cmd.Stderr = os.Stderr
	return c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// call calls a tool and decodes its structured result into out; a tool
// error is returned as an error with the tool's text.
func call(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any, out any) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				b.WriteString(t.Text)
			}
		}
		return fmt.Errorf("%s: %s", name, b.String())
	}
	if out == nil {
		return nil
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}
