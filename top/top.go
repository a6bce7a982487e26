// Package top is `mio top`: a read-only terminal view of a running MIO
// over its admin listener — consumers by backlog, River queues, ingest and
// send rates per channel, the newest dead letters and a live tail of
// inbound messages — refreshed every few seconds. It speaks HTTP only
// (the admin API and /metrics) and imports nothing of the server;
// nothing of the server imports it.
package top

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/term"
)

// Options configure Run.
type Options struct {
	// AdminURL is the admin listener's base URL, e.g.
	// http://127.0.0.1:9090. Required.
	AdminURL string
	// Interval is the refresh period. Default 2 s.
	Interval time.Duration
	// Once writes one snapshot as plain tables and returns.
	Once bool
	// Tenant shows one tenant (a name, an id or the start of an id); ""
	// every tenant.
	Tenant string
	// Token is an admin token (the viewer role is enough). Required.
	Token string
}

// Run shows the view until ctx ends or the user quits: full screen when
// out is a terminal, else (and with Once) plain tables, one snapshot per
// interval. A first snapshot is read before anything is drawn, so a
// wrong URL or token fails at once with its error.
func Run(ctx context.Context, opts Options, in io.Reader, out io.Writer) error {
	if opts.Interval <= 0 {
		opts.Interval = 2 * time.Second
	}
	c := NewClient(opts.AdminURL, opts.Token)
	first, err := c.Snapshot(ctx, "")
	if err != nil {
		return err
	}
	if opts.Tenant != "" {
		id, ok := matchTenant(first, opts.Tenant)
		if !ok {
			return fmt.Errorf("no tenant named %q, and none whose id starts with it", opts.Tenant)
		}
		if first, err = c.Snapshot(ctx, id); err != nil {
			return err
		}
	}
	if f, ok := out.(*os.File); ok && !opts.Once && term.IsTerminal(f.Fd()) {
		return runTerminal(ctx, c, opts, first, in, out)
	}
	return runPlain(ctx, c, opts, first, out)
}

// runPlain writes a snapshot, then (unless Once) one every interval.
func runPlain(ctx context.Context, c *Client, opts Options, s *Snapshot, out io.Writer) error {
	rates := NewRates(RateWindow)
	t := time.NewTicker(opts.Interval)
	defer t.Stop()
	for {
		rates.Add(s.At, s.Counters)
		if err := WritePlain(out, opts.AdminURL, s, rates); err != nil || opts.Once {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		next, err := c.Snapshot(ctx, s.TenantID)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(out)
		s = next
	}
}

// runTerminal runs the full-screen view (bubbletea) in the alternate
// screen.
func runTerminal(ctx context.Context, c *Client, opts Options, first *Snapshot, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newModel(ctx, c, opts, first)
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithAltScreen())
	_, err := p.Run()
	m.tails.stop()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}
