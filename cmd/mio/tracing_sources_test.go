package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/channels/discord"
	"github.com/miohq/mio/channels/discord/discordtest"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/secretbox"
)

// TestSourceMessagesStartTheirTraces runs mio serve with tracing on, a
// Telegram bot in polling mode and a Discord bot on the Gateway (both
// fakes). Each message they receive is a root "process <channel>"
// consumer span, linked to the ingest commit that stored it and back;
// its delivery continues that trace, and the Telegram reply's dispatch
// joins it, as a webhook's turn does. No span carries the tenant id or
// a bot token.
func TestSourceMessagesStartTheirTraces(t *testing.T) {
	ctx := context.Background()
	env := dbtest.New(t)
	key := bytes.Repeat([]byte{9}, 32)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	svc := admin.New(env.Pool, box, "http://mio.test")
	tenant, _, err := svc.TenantCreate(ctx, "traced sources")
	require.NoError(t, err)

	const tgToken, dcToken = "123456:POLL-bot-token", "discord-bot-token-traced"
	tg := channelstest.NewFakeTelegram(t)
	_, err = svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "telegram",
		Settings:    json.RawMessage(`{"mode":"polling","api_base_url":"` + tg.URL + `"}`),
		Credentials: json.RawMessage(`{"bot_token":"` + tgToken + `"}`)})
	require.NoError(t, err)
	gw := discordtest.NewGateway(t, dcToken)
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	_, err = svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "discord",
		WebhookSecret: hex.EncodeToString(pub), Settings: json.RawMessage(fmt.Sprintf(`{"gateway_url": %q}`, gw.URL())),
		Credentials: json.RawMessage(`{"bot_token":"` + dcToken + `"}`)})
	require.NoError(t, err)
	token, _, err := svc.TokenCreate(ctx, tenant.ID, "agent", []db.Role{db.RoleConsume, db.RoleProduce, db.RoleRead})
	require.NoError(t, err)

	recv := newOTLPReceiver(t)
	public, stop := serveTraced(t, env.OwnerURL, key, recv)
	api := client.New(public, token)
	_, err = api.PutConsumer(ctx, "agent", client.ConsumerConfig{})
	require.NoError(t, err)

	tg.AddUpdate(`"message":{"message_id":31,"date":1717171717,"chat":{"id":5151,"type":"private"},` +
		`"from":{"id":5151,"is_bot":false,"first_name":"Ada"},"text":"polled hello"}`)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.True(t, gw.Wait(wctx, func(s discordtest.Stats) bool { return s.Readies == 1 && s.Connected }), "gateway session")
	gw.Dispatch(discord.EventMessageCreate, discordtest.Message("9100", "500", "77", "1", "gateway hello"))

	deliveries := map[string]client.Delivery{}
	require.Eventually(t, func() bool {
		ds, err := api.Pull(ctx, "agent", 10, time.Second)
		require.NoError(t, err)
		for _, d := range ds {
			deliveries[d.Message.ChannelType] = d
		}
		return len(deliveries) == 2
	}, 30*time.Second, 10*time.Millisecond)

	// The agent answers the Telegram message under its handler span.
	agentSpans := tracetest.NewSpanRecorder()
	agentTP := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(agentSpans))
	d := deliveries[envelope.ChannelTelegram]
	hctx, handler := agentTP.Tracer("agent").Start(d.Context(ctx), "handle message", trace.WithSpanKind(trace.SpanKindConsumer))
	_, err = api.Reply(hctx, "agent", d.DeliveryID, envelope.SendCommand{IdempotencyKey: "polled-reply-1", Text: "polled answer"})
	require.NoError(t, err)
	handler.End()
	require.Eventually(t, func() bool { return len(tg.Calls("sendMessage")) == 1 }, 20*time.Second, 20*time.Millisecond)

	stop()
	spans := collectSpans(recv, agentSpans)
	requireNoneTells(t, spans, tenant.ID.String(), tgToken, dcToken, token)

	for _, ct := range []string{envelope.ChannelTelegram, envelope.ChannelDiscord} {
		d := deliveries[ct]
		require.NotEmpty(t, d.Traceparent, "%s delivery", ct)
		traceID, spanID := d.Traceparent[3:35], d.Traceparent[36:52]
		src := spans[spanID]
		require.NotNil(t, src, "%s: the delivery's traceparent names the source's span", ct)
		require.Equal(t, "process "+ct, src.name)
		require.Equal(t, "CONSUMER", src.kind)
		require.Equal(t, traceID, src.traceID)
		require.Empty(t, src.parent, "%s: a message's span is its trace's root", ct)
		require.Equal(t, "mio", src.attrs["messaging.system"])
		require.Equal(t, d.Message.ID.String(), src.attrs["messaging.message.id"])
		linked(t, spans, "ingest commit", src.id)
		var commit *span
		for _, l := range src.links {
			if s := spans[l]; s != nil && s.name == "ingest commit" {
				commit = s
			}
		}
		require.NotNil(t, commit, "%s: the message's span links its commit", ct)
		t.Logf("%s, trace %s:\n%s", ct, traceID, traceTree(spans, traceID))
	}

	// The Telegram turn goes on as a webhook's does.
	turn := deliveries[envelope.ChannelTelegram].Traceparent[3:35]
	var handle, reply, dispatch *span
	for _, s := range spans {
		if s.traceID != turn {
			continue
		}
		switch s.name {
		case "handle message":
			handle = s
		case "POST /v1/consumers/{name}/reply":
			reply = s
		case "river.work/mio.dispatch":
			dispatch = s
		}
	}
	require.NotNil(t, handle)
	require.Equal(t, deliveries[envelope.ChannelTelegram].Traceparent[36:52], handle.parent)
	require.NotNil(t, reply)
	require.Equal(t, handle.id, reply.parent)
	require.NotNil(t, dispatch, "the reply's dispatch is in the message's trace")
	require.Equal(t, reply.id, dispatch.parent)
}
