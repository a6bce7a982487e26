package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db"
)

// cmdAdminDead runs `mio admin dead list|show`: the operators' view of
// mio.dead_letters (requeue and discard go through package admin, which
// audits them: admin_ops.go). tenant (--tenant) narrows to
// one tenant; without it every tenant is searched. channel (--channel)
// filters the list; list takes an optional kind (outbound, consumer,
// attachment).
func cmdAdminDead(ctx context.Context, pool *pgxpool.Pool, verb, tenant, channel string, args []string, stdout io.Writer) error {
	var tenantID uuid.UUID
	if tenant != "" {
		id, err := uuid.Parse(tenant)
		if err != nil {
			return &usageError{"--tenant must be a tenant id (uuid)"}
		}
		tenantID = id
	}
	out := json.NewEncoder(stdout)
	out.SetIndent("", "  ")
	if verb == "list" {
		p := db.DeadLetterListParams{ChannelType: channel, Limit: 1000}
		switch len(args) {
		case 0:
		case 1:
			p.Kind = args[0]
		default:
			return &usageError{"mio admin dead list takes at most one kind: outbound, consumer or attachment"}
		}
		items, err := db.DeadLettersList(ctx, pool, tenantID, p)
		if err != nil {
			return fmt.Errorf("list dead letters: %w", err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KIND\tID\tTENANT\tCHANNEL\tATTEMPTS\tDEAD AT\tLAST ERROR")
		for _, d := range items {
			deadAt := ""
			if d.DeadAt != nil {
				deadAt = d.DeadAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.Kind, d.ID, d.TenantID, d.ChannelType, d.Attempts, deadAt, shorten(d.LastError, 80))
		}
		return tw.Flush()
	}

	if len(args) != 1 {
		return &usageError{"give one dead letter id"}
	}
	id, err := uuid.Parse(args[0])
	if err != nil {
		return &usageError{"the dead letter id must be a uuid"}
	}
	switch verb {
	case "show":
		items, err := db.DeadLettersFind(ctx, pool, tenantID, id)
		if errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("no dead letter %s", id)
		}
		if err != nil {
			return err
		}
		type shown struct {
			*db.DeadLetter
			Events []db.OutboxEvent `json:"events,omitempty"`
		}
		var res []shown
		for _, d := range items {
			s := shown{DeadLetter: d}
			if d.Kind == db.DeadLetterOutbound {
				err := db.InTenantTx(ctx, pool, d.TenantID, func(tx pgx.Tx) error {
					var err error
					s.Events, err = db.OutboxEventList(ctx, tx, d.TenantID, d.ID)
					return err
				})
				if err != nil {
					return err
				}
			}
			res = append(res, s)
		}
		return out.Encode(res)
	}
	return &usageError{fmt.Sprintf("mio admin dead: unknown verb %q: want list, show, requeue or discard", verb)}
}

// shorten makes s one line of at most n runes for a table.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
