package workers

import (
	"math"

	"github.com/google/uuid"

	"github.com/miohq/mio/envelope"
)

// Bucket scopes: one bucket per account, or one per (account,
// conversation) where the platform limits each channel or chat.
const (
	scopeAccount      = "account"
	scopeConversation = "conversation"
)

// bucketSpec is one token bucket a send must take a token from.
type bucketSpec struct {
	Scope string
	Rate  float64 // tokens per second
	Burst float64
}

// defaultBuckets are the rate limits of a channel when the account sets
// none (reference/channels.md): Slack 1 msg/s per channel, Telegram 30
// msg/s per bot and 1 msg/s per chat, Discord 5 msg per 5 s per channel,
// Zoho Cliq 10 msg/s per bot, WhatsApp 80 msg/s per phone number, and no
// limit for the generic webhook channel.
func defaultBuckets(channelType string) []bucketSpec {
	switch channelType {
	case envelope.ChannelSlack:
		return []bucketSpec{{Scope: scopeConversation, Rate: 1, Burst: 3}}
	case envelope.ChannelTelegram:
		return []bucketSpec{{Scope: scopeAccount, Rate: 30, Burst: 30}, {Scope: scopeConversation, Rate: 1, Burst: 3}}
	case envelope.ChannelDiscord:
		return []bucketSpec{{Scope: scopeConversation, Rate: 1, Burst: 5}}
	case envelope.ChannelZohoCliq:
		return []bucketSpec{{Scope: scopeAccount, Rate: 10, Burst: 10}}
	case envelope.ChannelWhatsApp:
		return []bucketSpec{{Scope: scopeAccount, Rate: 80, Burst: 80}}
	}
	return nil
}

// bucketsFor returns the buckets of an account's sends: the channel
// defaults, with the account's rate_limit_per_sec / rate_limit_burst
// replacing (or adding) the account-wide bucket. A burst without a rate
// only resizes the default account bucket.
func bucketsFor(channelType string, ratePerSec *float64, burst *int32) []bucketSpec {
	specs := defaultBuckets(channelType)
	if ratePerSec == nil && burst == nil {
		return specs
	}
	out := make([]bucketSpec, 0, len(specs)+1)
	var acct *bucketSpec
	for _, s := range specs {
		if s.Scope == scopeAccount {
			s := s
			acct = &s
			continue
		}
		out = append(out, s)
	}
	if ratePerSec != nil {
		b := math.Max(1, math.Ceil(*ratePerSec))
		if acct != nil && acct.Rate == *ratePerSec {
			b = acct.Burst
		}
		acct = &bucketSpec{Scope: scopeAccount, Rate: *ratePerSec, Burst: b}
	}
	if acct == nil {
		return out // a burst alone on a channel without an account bucket
	}
	if burst != nil {
		acct.Burst = float64(*burst)
	}
	return append([]bucketSpec{*acct}, out...)
}

// bucketKey names a bucket in mio.rate_buckets.
func bucketKey(scope string, accountID uuid.UUID, conversationID string) string {
	if scope == scopeConversation {
		return "c:" + accountID.String() + ":" + conversationID
	}
	return "a:" + accountID.String()
}
