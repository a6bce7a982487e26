// Package acme is a throwaway channel for the dry run.
package acme

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/miohq/mio/channels"
)

type Channel struct{}

func New() *Channel { return &Channel{} }

func (c *Channel) Type() string { return "acme" }

func (c *Channel) Info() channels.Info {
	return channels.Info{DisplayName: "Acme Chat",
		Credentials: []channels.Field{{Name: "token", Type: channels.TypeString, Required: true, Secret: true, Description: "token"}}}
}

func (c *Channel) NewInbound(a channels.Account) (channels.Inbound, error) {
	var cr struct {
		Token string `json:"token"`
	}
	if err := channels.DecodeObject("credentials", a.Credentials, &cr); err != nil {
		return nil, err
	}
	if cr.Token == "" {
		return nil, fmt.Errorf("%w: token", channels.ErrInvalidConfig)
	}
	return inbound{}, nil
}

func (c *Channel) ExampleAccount() channels.Account {
	return channels.Account{Credentials: json.RawMessage(`{"token":"t"}`)}
}

type inbound struct{}

func (inbound) Verify(context.Context, *channels.Request) error { return nil }
func (inbound) Parse(context.Context, *channels.Request) (*channels.Parsed, error) {
	return &channels.Parsed{}, nil
}
