package httpapi_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miohq/mio/channels/whatsapp"
)

// FuzzWebhook drives arbitrary bodies, correctly signed, through the whole
// webhook path of every channel against a real database: whatever the
// body, the answer is never a 5xx and the process never panics.
func FuzzWebhook(f *testing.F) {
	seeds := map[string][]string{
		"slack":     {"file_share.json", "message.json", "message_changed.json", "url_verification.json"},
		"telegram":  {"photo.json", "callback_query.json", "edited_message.json"},
		"whatsapp":  {"batch.json", "statuses.json", "location.json"},
		"discord":   {"command_guild.json", "ping.json", "component_button.json"},
		"zoho_cliq": {"message_handler_dm.json", "message_handler_file.json"},
		"webhook":   {"message_created.json", "message_deleted.json"},
	}
	idx := map[string]uint8{"slack": 0, "telegram": 1, "whatsapp": 2, "discord": 3, "zoho_cliq": 4, "webhook": 5}
	for ch, files := range seeds {
		for _, name := range files {
			// An adapter's directory is its slug without underscores.
			b, err := os.ReadFile(filepath.Join("..", "channels", strings.ReplaceAll(ch, "_", ""), "testdata", name))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(idx[ch], b)
		}
	}
	f.Add(uint8(5), []byte(`{"type":"message.created","timestamp":"2024-01-01T00:00:00Z","data":{"conversation":{"id":"\u0000"},"sender":{"id":"\u0000"},"text":"\u0000\xff"}}`))
	f.Add(uint8(0), []byte("\x00\x01"))
	f.Add(uint8(2), []byte(`{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"messages":[{"from":"1","id":"`+string(bytes.Repeat([]byte("w"), 5000))+`","timestamp":"1","type":"text","text":{"body":"x"}}]}}]}]}`))

	fb := setup(f)
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		chans := []string{"slack", "telegram", "whatsapp", "discord", "zoho_cliq", "webhook"}
		ch := chans[int(which)%len(chans)]
		var hdr map[string]string
		switch ch {
		case "slack":
			hdr = fb.slackHeaders(body)
		case "telegram":
			hdr = map[string]string{"X-Telegram-Bot-Api-Secret-Token": fb.tgSecret}
		case "whatsapp":
			hdr = map[string]string{"X-Hub-Signature-256": whatsapp.Sign(fb.waSecret, body)}
		case "discord":
			hdr = fb.discordHeaders(body)
		case "zoho_cliq":
			hdr = map[string]string{"X-Mio-Token": "cliq-shared-token"}
		case "webhook":
			hdr = fb.signWebhook(t, "fz_"+string(rune('a'+which%26)), body)
		}
		resp, out := post(t, fb.url(ch), body, hdr)
		if resp.StatusCode >= 500 {
			t.Fatalf("%s: status %d for body %q: %s", ch, resp.StatusCode, body, out)
		}
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadRequest &&
			resp.StatusCode != http.StatusUnsupportedMediaType && resp.StatusCode != http.StatusRequestEntityTooLarge &&
			resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s: unexpected status %d: %s", ch, resp.StatusCode, out)
		}
	})
}
