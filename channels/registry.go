package channels

import (
	"fmt"
	"sort"

	"github.com/miohq/mio/envelope"
)

// Registry maps channel slugs to adapters. It is built explicitly, once, by
// the caller (see channels/builtin); there is no global registration.
type Registry struct {
	byType map[string]Channel
}

// NewRegistry returns a registry of the given channels. Two channels with
// the same slug, or a slug not of the form envelope.ValidChannelType
// accepts, is a programming error and panics.
func NewRegistry(chs ...Channel) *Registry {
	r := &Registry{byType: make(map[string]Channel, len(chs))}
	for _, ch := range chs {
		if !envelope.ValidChannelType(ch.Type()) {
			panic(fmt.Sprintf("channels: channel type %q is not a slug (lower-case letters, digits, _)", ch.Type()))
		}
		if _, dup := r.byType[ch.Type()]; dup {
			panic(fmt.Sprintf("channels: duplicate channel type %q", ch.Type()))
		}
		r.byType[ch.Type()] = ch
	}
	return r
}

// Get returns the channel for a slug.
func (r *Registry) Get(channelType string) (Channel, bool) {
	ch, ok := r.byType[channelType]
	return ch, ok
}

// Types returns the registered slugs, sorted (none for a nil registry).
func (r *Registry) Types() []string {
	if r == nil {
		return nil
	}
	out := make([]string, 0, len(r.byType))
	for t := range r.byType {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Describe returns every registered channel's description, by slug.
func (r *Registry) Describe() []Description {
	out := make([]Description, 0, len(r.byType))
	for _, t := range r.Types() {
		out = append(out, Describe(r.byType[t]))
	}
	return out
}
