package bridge

import (
	"strings"

	"github.com/google/uuid"
)

// Subject roots, one per kind of event (docs/nats.md).
const (
	SubjectInbound         = "mio.inbound"
	SubjectInboundEnriched = "mio.inbound_enriched"
	SubjectOutbound        = "mio.outbound"
	SubjectOutboundStatus  = "mio.outbound_status"
	SubjectOutboundCmd     = "mio.outbound_cmd"
)

// Token escapes s into one subject token, so that no value can change a
// subject's shape: bytes other than ASCII letters, digits, '-', '_', '~',
// ':', '@', '+', '=' and ',' (in particular '.', '*', '>', whitespace,
// '%', control and non-ASCII bytes) become "%XX" (upper-case hex of the
// byte, as in URLs), and the empty string becomes "%". Escaping is
// one-to-one, so a consumer filters on an escaped value exactly
// (mio.inbound.*.*.<Token(conversation id)>.>).
func Token(s string) string {
	if s == "" {
		return "%"
	}
	clean := true
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plainByte(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func plainByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-_~:@+=,", c) >= 0
}

// Subject joins a root and escaped tokens.
func Subject(root string, tokens ...string) string {
	var b strings.Builder
	b.WriteString(root)
	for _, t := range tokens {
		b.WriteByte('.')
		b.WriteString(Token(t))
	}
	return b.String()
}

// InboundSubject is mio.inbound[_enriched].<channel_type>.<account_id>.<conversation_id>.<message_id>.
func InboundSubject(root, channelType string, accountID uuid.UUID, conversationID string, messageID uuid.UUID) string {
	return Subject(root, channelType, accountID.String(), conversationID, messageID.String())
}
