package top

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// WritePlain writes a snapshot as plain tables (no terminal control):
// consumers by backlog, River queues, per-channel counters (with rates
// when rates holds an earlier reading) and the newest dead letters.
func WritePlain(w io.Writer, url string, s *Snapshot, rates *Rates) error {
	tenant := "all"
	if s.TenantID != "" {
		tenant = s.tenantName(s.TenantID) + " (" + s.TenantID + ")"
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "mio top  %s  tenant %s  %s\n", url, tenant, s.At.UTC().Format(time.RFC3339))

	fmt.Fprintln(tw, "\nCONSUMERS")
	fmt.Fprintln(tw, "TENANT\tCONSUMER\tPENDING\tACK PENDING\tREDELIVERED\tDEAD\tOLDEST PENDING")
	for _, c := range s.Consumers {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", oneLine(s.tenantName(c.TenantID)), oneLine(c.Name), c.Pending, c.AckPending,
			c.Redelivered, c.Dead, age(c.OldestPendingAge))
	}

	fmt.Fprintln(tw, "\nRIVER QUEUES")
	fmt.Fprintln(tw, "QUEUE\tAVAILABLE\tRUNNING\tRETRYABLE\tOLDEST AVAILABLE")
	for _, q := range s.Queues {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", q.Name, q.Available, q.Running, q.Retryable, age(q.OldestAvailableAge))
	}

	fmt.Fprintln(tw, "\nCHANNELS (this process since it started, all tenants)")
	fmt.Fprintln(tw, "CHANNEL\tRECEIVED\tSENT\tRECEIVED/S\tSENT/S")
	for _, ch := range rates.Channels() {
		c := rates.Totals()[ch]
		in, out := "-", "-"
		if r, ok := rates.Latest(ch); ok {
			in, out = rate(r.Received), rate(r.Sent)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ch, count(c.Received), count(c.Sent), in, out)
	}

	fmt.Fprintf(tw, "\nDEAD LETTERS (newest %d)\n", deadLimit)
	fmt.Fprintln(tw, "DEAD AT\tKIND\tTENANT\tCHANNEL\tATTEMPTS\tID\tLAST ERROR")
	for _, d := range s.Dead {
		at := d.CreatedAt
		if d.DeadAt != nil {
			at = *d.DeadAt
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", at.UTC().Format(time.RFC3339), d.Kind, oneLine(s.tenantName(d.TenantID)),
			d.ChannelType, d.Attempts, d.ID, oneLine(d.LastError))
	}
	return tw.Flush()
}

func count(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
