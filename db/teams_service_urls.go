package db

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// TeamsServiceURLGet returns the service URL of a Teams conversation's
// latest activity; "" when none is stored.
func TeamsServiceURLGet(ctx context.Context, tx DBTX, tenantID, accountID uuid.UUID, conversationID string) (string, error) {
	u, err := queries().TeamsServiceURLGet(ctx, tx, &dbsqlc.TeamsServiceURLGetParams{
		TenantID: tenantID, AccountID: accountID, ConversationID: conversationID})
	if err = translate(err); errors.Is(err, ErrNotFound) {
		return "", nil
	}
	return u, err
}

// TeamsServiceURLPut stores the service URL of a Teams conversation's
// latest activity.
func TeamsServiceURLPut(ctx context.Context, tx DBTX, tenantID, accountID uuid.UUID, conversationID, serviceURL string) error {
	return translate(queries().TeamsServiceURLPut(ctx, tx, &dbsqlc.TeamsServiceURLPutParams{
		TenantID: tenantID, AccountID: accountID, ConversationID: conversationID, ServiceUrl: serviceURL}))
}
