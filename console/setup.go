package console

import "github.com/miohq/mio/channels"

// channelSetup is what the account wizard asks for a channel and the
// steps it shows with the webhook URL: the adapter's Info (display name
// and setup text, docs/channels.md has the detail).
type channelSetup struct {
	Name string
	channels.Setup
}

// setup returns the wizard's text for a channel slug.
func (c *Console) setup(channelType string) (channelSetup, bool) {
	ch, ok := c.reg.Get(channelType)
	if !ok {
		return channelSetup{}, false
	}
	info := ch.Info()
	return channelSetup{Name: info.DisplayName, Setup: info.Setup}, true
}

// setupOrZero is setup without the found flag.
func (c *Console) setupOrZero(channelType string) channelSetup {
	s, _ := c.setup(channelType)
	return s
}
