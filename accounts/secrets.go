package accounts

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/secretbox"
)

// credentialsAD and webhookSecretAD are the additional data binding a
// sealed value to its account and column, so a value copied to another
// row does not open. They are part of the stored format: changing a byte
// makes every sealed row unopenable.
func credentialsAD(accountID uuid.UUID) []byte {
	return []byte(accountID.String() + "/credentials")
}

func webhookSecretAD(accountID uuid.UUID) []byte {
	return []byte(accountID.String() + "/webhook_secret")
}

// open opens an account's sealed columns into what adapters read.
func open(box *secretbox.Box, row *db.Account) (channels.Account, error) {
	acct := channels.Account{ID: row.ID, TenantID: row.TenantID, ExternalID: row.ExternalID, Settings: row.Settings}
	if row.CredentialsEnc == nil && row.WebhookSecretEnc == nil {
		return acct, nil
	}
	if box == nil {
		return acct, errors.New("account has encrypted secrets but MIO_MASTER_KEY is not set")
	}
	cred, err := box.Open(row.CredentialsEnc, credentialsAD(row.ID))
	if err != nil {
		return acct, fmt.Errorf("account %s credentials: %w", row.ID, err)
	}
	secret, err := box.Open(row.WebhookSecretEnc, webhookSecretAD(row.ID))
	if err != nil {
		return acct, fmt.Errorf("account %s webhook secret: %w", row.ID, err)
	}
	acct.Credentials, acct.WebhookSecret = cred, string(secret)
	return acct, nil
}

// seal seals an account's credentials and webhook secret for its row;
// empty ones stay nil (not stored).
func seal(box *secretbox.Box, accountID uuid.UUID, credentials json.RawMessage, webhookSecret string) (credEnc, secretEnc []byte, err error) {
	if len(credentials) == 0 && webhookSecret == "" {
		return nil, nil, nil
	}
	if box == nil {
		return nil, nil, errors.New("MIO_MASTER_KEY is not set: it is needed to store credentials encrypted")
	}
	if len(credentials) > 0 {
		if credEnc, err = box.Seal(credentials, credentialsAD(accountID)); err != nil {
			return nil, nil, fmt.Errorf("seal credentials: %w", err)
		}
	}
	if webhookSecret != "" {
		if secretEnc, err = box.Seal([]byte(webhookSecret), webhookSecretAD(accountID)); err != nil {
			return nil, nil, fmt.Errorf("seal webhook secret: %w", err)
		}
	}
	return credEnc, secretEnc, nil
}
