package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/migrations"
)

func cmdMigrate(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return &usageError{"mio migrate needs up, down or status"}
	}
	sub := args[0]
	if sub != "up" && sub != "down" && sub != "status" {
		return &usageError{fmt.Sprintf("mio migrate: unknown subcommand %q: want up, down or status", sub)}
	}
	cfg, rest, err := loadConfig("migrate "+sub, args[1:], getenv, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", rest[0])}
	}
	if cfg.DatabaseURL == "" {
		return &usageError{"MIO_DATABASE_URL (or DATABASE_URL) is required for mio migrate"}
	}
	pool, err := db.Open(ctx, cfg.DatabaseURL, db.PoolOptions{MaxConns: 2, StatementTimeout: -1, ApplicationName: "mio-migrate"})
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer pool.Close()
	m := migrations.New(pool).WithChannelTypes(channelTypes(builtin.Registry(builtin.Options{})))
	switch sub {
	case "up":
		applied, err := m.Up(ctx)
		for _, a := range applied {
			if a.Version == 0 {
				fmt.Fprintf(stdout, "applied %s %s\n", a.Source, a.Name)
				continue
			}
			fmt.Fprintf(stdout, "applied %s %d %s\n", a.Source, a.Version, a.Name)
		}
		if err != nil {
			return err
		}
		if len(applied) == 0 {
			fmt.Fprintln(stdout, "schema is up to date")
		}
	case "down":
		v, err := m.Down(ctx)
		if err != nil {
			return err
		}
		if v == nil {
			fmt.Fprintln(stdout, "no MIO migration to roll back")
		} else {
			fmt.Fprintf(stdout, "rolled back %s %d %s\n", v.Source, v.Version, v.Name)
		}
	case "status":
		st, err := m.Status(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SOURCE\tVERSION\tNAME\tSTATE")
		for _, s := range st {
			state := "pending"
			if s.Applied {
				state = "applied"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", s.Source, s.Version, s.Name, state)
		}
		return tw.Flush()
	}
	return nil
}

// channelTypes are the registry's channels as mio.channel_types holds
// them.
func channelTypes(r *channels.Registry) []migrations.ChannelType {
	var out []migrations.ChannelType
	for _, d := range r.Describe() {
		out = append(out, migrations.ChannelType{Slug: d.Slug, DisplayName: d.DisplayName})
	}
	return out
}
