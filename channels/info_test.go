package channels

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

type plainSender struct{}

func (*plainSender) Send(context.Context, *OutboundMessage) (*SendResult, error) { return nil, nil }

type editingSender struct{ plainSender }

func (*editingSender) Edit(context.Context, *OutboundMessage) (*SendResult, error) { return nil, nil }
func (*editingSender) Typing(context.Context, *TypingSignal) error                 { return nil }

type streamingSender struct{ editingSender }

func (*streamingSender) Streams(*OutboundMessage) bool { return true }
func (*streamingSender) StreamStart(context.Context, *OutboundMessage) (*SendResult, error) {
	return nil, nil
}
func (*streamingSender) StreamAppend(context.Context, *OutboundMessage, StreamShown) error {
	return nil
}
func (*streamingSender) StreamStop(context.Context, *OutboundMessage, StreamShown) (*SendResult, error) {
	return nil, nil
}

type deletingSender struct{ plainSender }

func (*deletingSender) Delete(context.Context, string, string) error { return nil }

type reactingSender struct{ plainSender }

func (*reactingSender) React(context.Context, *OutboundMessage) (*SendResult, error) { return nil, nil }

type infoChannel struct{ info Info }

func (c infoChannel) Type() string                        { return "test" }
func (c infoChannel) Info() Info                          { return c.info }
func (c infoChannel) NewInbound(Account) (Inbound, error) { return nil, nil }

type sourceChannel struct{ infoChannel }

func (sourceChannel) RunSource(context.Context, SourceDeps) error { return nil }

// TestDescribeDerivesCapabilities: edit, delete, typing and reactions
// come from the interfaces the adapter's sender implements (streaming from
// Editor: a streamed reply grows by edits; native_streaming from
// Streamer) and source from the
// adapter's, not from a declaration; declared ones are listed as
// declared.
func TestDescribeDerivesCapabilities(t *testing.T) {
	t.Parallel()
	plain := Describe(infoChannel{Info{DisplayName: "Plain", Outbound: (*plainSender)(nil), Receipts: true}})
	require.Equal(t, []string{CapReceipts}, plain.Capabilities)
	require.Empty(t, plain.RateLimits)
	require.Equal(t, []Field{}, plain.Settings, "no schema is an empty list")
	require.Equal(t, []Field{}, plain.Credentials)
	require.False(t, CapabilitiesOf(infoChannel{Info{Outbound: (*plainSender)(nil)}}).Edit)

	rich := Describe(sourceChannel{infoChannel{Info{DisplayName: "Rich", Outbound: (*editingSender)(nil), Threads: true,
		RateLimits: []RateLimit{{Scope: ScopeAccount, PerSec: 2, Burst: 4}}}}})
	require.Equal(t, []string{CapEdit, CapTyping, CapThreads, CapStreaming, CapSource}, rich.Capabilities)
	require.Equal(t, "Rich", rich.DisplayName)
	require.True(t, CapabilitiesOf(infoChannel{Info{Outbound: (*editingSender)(nil)}}).Edit)

	// native_streaming from Streamer.
	native := Describe(infoChannel{Info{Outbound: (*streamingSender)(nil)}})
	require.Equal(t, []string{CapEdit, CapTyping, CapStreaming, CapNativeStreaming}, native.Capabilities)

	deleting := Describe(infoChannel{Info{Outbound: (*deletingSender)(nil)}})
	require.Equal(t, []string{CapDelete}, deleting.Capabilities)

	// reactions from Reactor; interactions are declared (an inbound
	// ability no interface marks).
	reacting := Describe(infoChannel{Info{Outbound: (*reactingSender)(nil), Interactions: true}})
	require.Equal(t, []string{CapInteractions, CapReactions}, reacting.Capabilities)
	require.Equal(t, Capabilities{Interactions: true, Reactions: true}, CapabilitiesOf(infoChannel{Info{Outbound: (*reactingSender)(nil), Interactions: true}}))
}
