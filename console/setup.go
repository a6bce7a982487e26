package console

import "github.com/miohq/mio/channels"

// channelSetup is what the account wizard asks for a channel and the
// steps it shows with the webhook URL: the adapter's Info (display name,
// the settings and credentials keys, setup text; docs/channels.md has
// the detail).
type channelSetup struct {
	Name        string
	Settings    []channels.Field
	Credentials []channels.Field
	// Installable: the channel has a one-click install (channels.Installer).
	Installable bool
	channels.Setup
}

// setup returns the wizard's text for a channel slug.
func (c *Console) setup(channelType string) (channelSetup, bool) {
	ch, ok := c.reg.Get(channelType)
	if !ok {
		return channelSetup{}, false
	}
	info := ch.Info()
	_, installable := ch.(channels.Installer)
	return channelSetup{Name: info.DisplayName, Settings: info.Settings, Credentials: info.Credentials,
		Installable: installable, Setup: info.Setup}, true
}

// setupOrZero is setup without the found flag.
func (c *Console) setupOrZero(channelType string) channelSetup {
	s, _ := c.setup(channelType)
	return s
}
