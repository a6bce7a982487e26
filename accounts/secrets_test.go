package accounts_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/secretbox"
)

// TestOldSealedSecretsOpen: rows sealed by earlier versions (admin sealed
// with the additional data "<account id>/credentials" and
// "<account id>/webhook_secret") keep opening.
func TestOldSealedSecretsOpen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	id := uuid.New()
	cred, err := b.box.Seal([]byte(tgCreds), []byte(id.String()+"/credentials"))
	require.NoError(t, err)
	secret, err := b.box.Seal([]byte("tg-secret"), []byte(id.String()+"/webhook_secret"))
	require.NoError(t, err)
	b.insert(t, &db.AccountInsertParams{TenantID: b.tenant, ID: id, ChannelType: "telegram", DisplayName: "old",
		CredentialsEnc: cred, WebhookSecretEnc: secret})

	a, err := b.resolver.Secrets(ctx, b.tenant, id)
	require.NoError(t, err)
	require.JSONEq(t, tgCreds, string(a.Credentials))
	require.Equal(t, "tg-secret", a.WebhookSecret)

	// Bound to its account: the same sealed value on another row does not open.
	copied := uuid.New()
	b.insert(t, &db.AccountInsertParams{TenantID: b.tenant, ID: copied, ChannelType: "telegram", DisplayName: "copy",
		CredentialsEnc: cred, WebhookSecretEnc: secret})
	_, err = b.resolver.Secrets(ctx, b.tenant, copied)
	require.ErrorIs(t, err, secretbox.ErrOpen)
}

func TestSpecSeal(t *testing.T) {
	t.Parallel()
	spec := &accounts.Spec{TenantID: uuid.New(), ID: uuid.New(), ChannelType: "webhook", WebhookSecret: whsec}
	_, err := spec.Seal(nil)
	require.ErrorContains(t, err, "MIO_MASTER_KEY", "secrets need the master key")

	plain := &accounts.Spec{TenantID: uuid.New(), ID: uuid.New(), ChannelType: "webhook"}
	row, err := plain.Seal(nil)
	require.NoError(t, err, "an account without secrets needs no key")
	require.Nil(t, row.CredentialsEnc)
	require.Nil(t, row.WebhookSecretEnc)

	_, err = (&accounts.Spec{TenantID: uuid.New(), ChannelType: "webhook"}).Seal(nil)
	require.Error(t, err, "sealed values are bound to the id: it must be chosen first")
}
