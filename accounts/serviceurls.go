package accounts

import (
	"context"
	"log/slog"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/channels/teams"
	"github.com/miohq/mio/db"
)

// TeamsServiceURLs keeps Teams conversations' service URLs in
// mio.teams_service_urls (teams.ServiceURLStore), so that any replica,
// and a restarted one, replies at the conversation's service URL.
type TeamsServiceURLs struct {
	Pool *pgxpool.Pool
	// Logger receives failed writes. Default: discarded.
	Logger *slog.Logger
}

var _ teams.ServiceURLStore = (*TeamsServiceURLs)(nil)

// ServiceURL implements teams.ServiceURLStore.
func (s *TeamsServiceURLs) ServiceURL(ctx context.Context, tenantID, accountID uuid.UUID, conversation string) (string, error) {
	var u string
	err := db.InTenantTx(ctx, s.Pool, tenantID, func(tx pgx.Tx) error {
		var err error
		u, err = db.TeamsServiceURLGet(ctx, tx, tenantID, accountID, conversation)
		return err
	})
	return u, err
}

// PutServiceURL implements teams.ServiceURLStore: a failure is logged,
// and the adapter goes on with the URL in memory.
func (s *TeamsServiceURLs) PutServiceURL(ctx context.Context, tenantID, accountID uuid.UUID, conversation, serviceURL string) {
	err := db.InTenantTx(ctx, s.Pool, tenantID, func(tx pgx.Tx) error {
		return db.TeamsServiceURLPut(ctx, tx, tenantID, accountID, conversation, serviceURL)
	})
	if err != nil && s.Logger != nil {
		s.Logger.Warn("teams: conversation service URL not stored", "tenant_id", tenantID, "account_id", accountID, "err", err)
	}
}
