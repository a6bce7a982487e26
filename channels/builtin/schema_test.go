package builtin

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
)

// wrongValues are JSON values of another type than the field's.
var wrongValues = map[string]string{
	channels.TypeString: `12`, channels.TypeBoolean: `"yes"`, channels.TypeInteger: `"12"`,
	channels.TypeArray: `{}`, channels.TypeObject: `[]`,
}

// TestSchemasMatchDecoders holds each channel's settings and credentials
// schema (Info.Settings, Info.Credentials) to its Config decoders
// (NewInbound, NewOutbound), starting from the adapter's ExampleAccount: a field given a value of another type is
// refused with ErrInvalidConfig (the decoder reads that key with that
// type), a required field left out is refused, an account without an
// optional one is still accepted (NewInbound: sending may need one of
// several, as Zoho Cliq's access_token or grant), every key of a valid account is named, and every
// credentials field is secret.
func TestSchemasMatchDecoders(t *testing.T) {
	t.Parallel()
	r := Registry(Options{})
	for _, slug := range r.Types() {
		ch, _ := r.Get(slug)
		ex, ok := ch.(channels.Exampler)
		require.True(t, ok, "the %s adapter has no ExampleAccount (channels.Exampler)", slug)
		base := ex.ExampleAccount()
		t.Run(slug, func(t *testing.T) {
			t.Parallel()
			decoders := decodersOf(ch)
			for name, dec := range decoders {
				require.NoError(t, dec(base), "%s refuses the valid account", name)
			}
			info := ch.Info()
			for _, part := range []struct {
				what   string
				fields []channels.Field
			}{{"settings", info.Settings}, {"credentials", info.Credentials}} {
				named := map[string]bool{}
				for _, f := range part.fields {
					named[f.Name] = true
					where := part.what + " " + f.Name
					require.Contains(t, wrongValues, f.Type, where)
					require.NotEmpty(t, f.Description, where)
					require.Equal(t, part.what == "credentials", f.Secret, "%s: exactly the credentials fields are secret", where)
					wrong := edit(t, base, part.what, func(m map[string]json.RawMessage) { m[f.Name] = json.RawMessage(wrongValues[f.Type]) })
					require.True(t, refused(decoders, wrong), "%s: a value that is not %s is accepted: no decoder reads it as one", where, f.Type)
					without := edit(t, base, part.what, func(m map[string]json.RawMessage) { delete(m, f.Name) })
					if f.Required {
						require.True(t, refused(decoders, without), "%s is required but an account without it is accepted", where)
					} else {
						require.NoError(t, decoders["NewInbound"](without), "%s is optional but an account without it is refused", where)
					}
				}
				for k := range object(t, base, part.what) {
					require.True(t, named[k], "%s %s: the valid account holds a key its schema does not name", part.what, k)
				}
			}
		})
	}
}

// decodersOf are the configuration decoders of ch, by name.
func decodersOf(ch channels.Channel) map[string]func(channels.Account) error {
	out := map[string]func(channels.Account) error{
		"NewInbound": func(a channels.Account) error { _, err := ch.NewInbound(a); return err },
	}
	if oc, ok := ch.(channels.OutboundChannel); ok {
		out["NewOutbound"] = func(a channels.Account) error { _, err := oc.NewOutbound(a); return err }
	}
	return out
}

// refused reports whether a decoder refuses acct as an invalid
// configuration.
func refused(decoders map[string]func(channels.Account) error, acct channels.Account) bool {
	for _, name := range slices.Sorted(maps.Keys(decoders)) {
		if err := decoders[name](acct); errors.Is(err, channels.ErrInvalidConfig) {
			return true
		}
	}
	return false
}

func object(t *testing.T, acct channels.Account, what string) map[string]json.RawMessage {
	t.Helper()
	raw := acct.Settings
	if what == "credentials" {
		raw = acct.Credentials
	}
	m := map[string]json.RawMessage{}
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &m))
	}
	return m
}

// edit returns acct with its settings or credentials object changed by f.
func edit(t *testing.T, acct channels.Account, what string, f func(map[string]json.RawMessage)) channels.Account {
	t.Helper()
	m := object(t, acct, what)
	f(m)
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	if what == "credentials" {
		acct.Credentials = raw
	} else {
		acct.Settings = raw
	}
	return acct
}
