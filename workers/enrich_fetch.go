package workers

import (
	"context"
	"net/netip"
	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/fetch"
)

// FetchOptions shape the per-channel fetch clients of the enrich worker.
// The zero value is the production policy: HTTPS only, each channel's own
// hosts, public addresses only, 25 MiB, 60 s.
type FetchOptions struct {
	// MaxBytes caps one attachment. Default 25 MiB.
	MaxBytes int64
	// MaxBytesByChannel overrides MaxBytes per channel slug.
	MaxBytesByChannel map[string]int64
	// AllowedHosts overrides a channel's hosts (AttachmentFetcher.FetchHosts)
	// per channel slug; an empty list there means any public host.
	AllowedHosts map[string][]string
	// Timeout bounds one download, body included: a body not read to its
	// end by then fails with fetch.ErrIncomplete and is retried. Default
	// 60 s.
	Timeout time.Duration

	// AllowHTTP, AllowPrivate, AllowedNets and Resolve are passed to
	// fetch.Policy: tests use them to reach local fakes.
	AllowHTTP    bool
	AllowPrivate bool
	AllowedNets  []netip.Prefix
	// InternalHosts are host names downloads may reach on private
	// addresses (fetch.Policy.InternalHosts; MIO_FETCH_INTERNAL_HOSTS).
	InternalHosts []string
	Resolve       func(ctx context.Context, host string) ([]netip.Addr, error)
}

// NewFetchClients builds one fetch.Client per channel of reg that
// implements channels.AttachmentFetcher.
func NewFetchClients(reg *channels.Registry, o FetchOptions) map[string]*fetch.Client {
	out := map[string]*fetch.Client{}
	for _, slug := range reg.Types() {
		ch, _ := reg.Get(slug)
		f, ok := ch.(channels.AttachmentFetcher)
		if !ok {
			continue
		}
		hosts, override := o.AllowedHosts[slug]
		if !override {
			hosts = f.FetchHosts()
		}
		maxBytes := o.MaxBytes
		if n, ok := o.MaxBytesByChannel[slug]; ok && n > 0 {
			maxBytes = n
		}
		out[slug] = fetch.NewClient(fetch.Policy{
			AllowedHosts:  hosts,
			AllowedNets:   o.AllowedNets,
			InternalHosts: o.InternalHosts,
			AllowHTTP:     o.AllowHTTP,
			AllowPrivate:  o.AllowPrivate,
			MaxBytes:      maxBytes,
			Resolve:       o.Resolve,
			Timeout:       o.Timeout,
		})
	}
	return out
}
