package accounts_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
)

func TestSpecValidate(t *testing.T) {
	t.Parallel()
	registry := builtin.Registry(builtin.Options{})
	tests := []struct {
		name     string
		spec     accounts.Spec
		registry *channels.Registry
		want     string // "" = valid
	}{
		{name: "Valid", spec: accounts.Spec{ChannelType: "webhook", WebhookSecret: whsec}, registry: registry},
		{name: "UnknownChannelType", spec: accounts.Spec{ChannelType: "icq"}, registry: registry, want: `channel type "icq": want one of`},
		{name: "SettingsNotObject", spec: accounts.Spec{ChannelType: "webhook", Settings: json.RawMessage(`[1]`)}, want: "settings must be a JSON object"},
		{name: "CredentialsNotJSON", spec: accounts.Spec{ChannelType: "slack", Credentials: json.RawMessage(`xoxb`)}, want: "credentials must be a JSON object"},
		{name: "AdapterRefuses", spec: accounts.Spec{ChannelType: "telegram", WebhookSecret: "not a token!"}, registry: registry, want: "telegram"},
		{name: "AdapterNeedsSecret", spec: accounts.Spec{ChannelType: "webhook"}, registry: registry, want: "whsec_"},
		{name: "DiscordGatewayOnlyNoPublicKey", spec: accounts.Spec{ChannelType: "discord",
			Credentials: json.RawMessage(`{"bot_token":"MTIz.abc.def"}`)}, registry: registry},
		{name: "DiscordInteractionsNeedPublicKey", spec: accounts.Spec{ChannelType: "discord",
			Credentials: json.RawMessage(`{"bot_token":"MTIz.abc.def"}`), Settings: json.RawMessage(`{"gateway":false}`)},
			registry: registry, want: "application public key"},
		{name: "WithoutRegistryShapeOnly", spec: accounts.Spec{ChannelType: "webhook"}},
		{name: "NotInRegistry", spec: accounts.Spec{ChannelType: "webhook", WebhookSecret: whsec}, registry: channels.NewRegistry(), want: `channel type "webhook": want one of`},
		{name: "NotASlug", spec: accounts.Spec{ChannelType: "Slack"}, want: `channel type "Slack": want a slug`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.spec.TenantID, tc.spec.ID = uuid.New(), uuid.New()
			err := tc.spec.Validate(tc.registry)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
			var ie *accounts.InvalidError
			require.True(t, errors.As(err, &ie), "every failure is an *InvalidError: %T", err)
		})
	}
}

// TestSpecValidateAdapterError: the adapter's typed error stays visible.
func TestSpecValidateAdapterError(t *testing.T) {
	t.Parallel()
	spec := accounts.Spec{TenantID: uuid.New(), ID: uuid.New(), ChannelType: "webhook"}
	err := spec.Validate(builtin.Registry(builtin.Options{}))
	require.ErrorIs(t, err, channels.ErrInvalidConfig)
}
