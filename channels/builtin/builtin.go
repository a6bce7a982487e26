// Package builtin builds MIO's channel registry: the one place where every
// adapter is listed. No adapter registers itself.
package builtin

import (
	"log/slog"
	"net/http"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/discord"
	"github.com/miohq/mio/channels/googlechat"
	"github.com/miohq/mio/channels/slack"
	"github.com/miohq/mio/channels/teams"
	"github.com/miohq/mio/channels/telegram"
	"github.com/miohq/mio/channels/webhook"
	"github.com/miohq/mio/channels/whatsapp"
	"github.com/miohq/mio/channels/zohocliq"
)

// Options are shared by the adapters. Zero values give production
// defaults (the platforms' public API hosts).
type Options struct {
	HTTPClient *http.Client
	Logger     *slog.Logger
	// APIBase overrides a platform's API base URL, keyed by channel slug
	// (tests and benchmarks point adapters at local fakes).
	APIBase map[string]string
	// APIBasePolicy validates the accounts' api_base_url settings on
	// every channel. Default: https only.
	APIBasePolicy channels.APIBasePolicy
}

// Registry returns the registry of all seven channels.
func Registry(opts Options) *channels.Registry {
	base := func(slug string) string { return opts.APIBase[slug] }
	pol := opts.APIBasePolicy
	return channels.NewRegistry(
		slack.New(slack.Options{APIBaseURL: base("slack"), APIBasePolicy: pol, HTTPClient: opts.HTTPClient, Logger: opts.Logger}),
		telegram.New(telegram.Options{APIBaseURL: base("telegram"), APIBasePolicy: pol, HTTPClient: opts.HTTPClient}),
		discord.New(discord.Options{APIBaseURL: base("discord"), APIBasePolicy: pol, HTTPClient: opts.HTTPClient}),
		zohocliq.New(zohocliq.Options{APIBaseURL: base("zoho_cliq"), APIBasePolicy: pol, HTTPClient: opts.HTTPClient}),
		whatsapp.New(whatsapp.Options{APIBaseURL: base("whatsapp"), APIBasePolicy: pol, HTTPClient: opts.HTTPClient}),
		webhook.New(webhook.Options{HTTPClient: opts.HTTPClient}),
		teams.New(teams.Options{APIBaseURL: base("teams"), APIBasePolicy: pol, HTTPClient: opts.HTTPClient}),
		googlechat.New(googlechat.Options{APIBaseURL: base("google_chat"), APIBasePolicy: pol, HTTPClient: opts.HTTPClient}),
	)
}
