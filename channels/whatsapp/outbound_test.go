package whatsapp

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/envelope"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/outbound golden files")

const (
	testAccessToken   = "EAAGoutboundTestAccessToken"
	testPhoneNumberID = "106540352242922"
	testWaID          = "4915112345678"
)

// graphCall is one request the fake Graph API received.
type graphCall struct {
	Path string
	Raw  []byte
}

// fakeGraph fakes POST /{phone_number_id}/messages. Like Meta it answers
// 401 with code 190 to a wrong bearer token, and 400 code 100 to another
// path; otherwise respond answers.
type fakeGraph struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []graphCall
}

func newFakeGraph(t *testing.T, respond func(w http.ResponseWriter, r *http.Request)) *fakeGraph {
	t.Helper()
	f := &fakeGraph{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.calls = append(f.calls, graphCall{Path: r.URL.Path, Raw: raw})
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("Authorization") != "Bearer "+testAccessToken:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, graphError401)
		case r.Method != http.MethodPost || r.URL.Path != "/"+testPhoneNumberID+"/messages":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":"Unsupported post request.","type":"GraphMethodException","code":100,"error_subcode":33,"fbtrace_id":"A1"}}`)
		case r.Header.Get("Content-Type") != "application/json" || !json.Valid(raw):
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":"(#100) Invalid parameter","type":"OAuthException","code":100,"fbtrace_id":"A2"}}`)
		default:
			respond(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

const graphError401 = `{"error":{"message":"Error validating access token: Session has expired.","type":"OAuthException","code":190,"error_subcode":463,"fbtrace_id":"Az8or2yhqkZfEZ-_4Qn_Bam"}}`

func (f *fakeGraph) recorded() []graphCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]graphCall(nil), f.calls...)
}

func accepted(wamid string) func(http.ResponseWriter, *http.Request) {
	return channelstest.Answer(200, fmt.Sprintf(`{"messaging_product":"whatsapp","contacts":[{"input":%q,"wa_id":%q}],"messages":[{"id":%q}]}`, testWaID, testWaID, wamid))
}

func graphErr(status, code int, msg string, header ...string) func(http.ResponseWriter, *http.Request) {
	return channelstest.Answer(status, fmt.Sprintf(`{"error":{"message":%q,"type":"OAuthException","code":%d,"error_data":{"messaging_product":"whatsapp","details":"details here"},"fbtrace_id":"AbCd"}}`, msg, code), header...)
}

func newTestOutbound(t *testing.T, apiBase string, client *http.Client) channels.Outbound {
	t.Helper()
	out, err := New(Options{APIBaseURL: apiBase, HTTPClient: client}).NewOutbound(channels.Account{
		ID:          uuid.New(),
		ExternalID:  testPhoneNumberID,
		Credentials: json.RawMessage(`{"access_token":"` + testAccessToken + `"}`),
	})
	require.NoError(t, err)
	return out
}

func textMessage(text string) *channels.OutboundMessage {
	return &channels.OutboundMessage{
		MessageID:      uuid.MustParse("6f1c1f4e-8d2a-4c55-9c0e-2b9a4f1d7e01"),
		Attempt:        1,
		IdempotencyKey: "6f1c1f4e-8d2a-4c55-9c0e-2b9a4f1d7e01:1:1",
		ConversationID: testWaID,
		Text:           text,
	}
}

func TestSend(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		respond   func(http.ResponseWriter, *http.Request)
		msg       func(m *channels.OutboundMessage)
		wantKind  string
		wantRetry time.Duration
		wantID    string
		wantBody  string
		wantInErr string
	}{
		{
			name:     "success",
			respond:  accepted("wamid.HBgLNDkxNTExMjM0NTY3OBUCABEYEjQ1"),
			wantKind: "none", wantID: "wamid.HBgLNDkxNTExMjM0NTY3OBUCABEYEjQ1",
			wantBody: `{"messaging_product":"whatsapp","to":"4915112345678","type":"text","text":{"body":"hello"}}`,
		},
		{
			name:     "reply",
			respond:  accepted("wamid.2"),
			msg:      func(m *channels.OutboundMessage) { m.ReplyToProviderID = "wamid.quoted"; m.ThreadID = "ignored" },
			wantKind: "none", wantID: "wamid.2",
			wantBody: `{"messaging_product":"whatsapp","to":"4915112345678","type":"text","text":{"body":"hello"},"context":{"message_id":"wamid.quoted"}}`,
		},
		{
			name:     "edit request is a new message",
			respond:  accepted("wamid.3"),
			msg:      func(m *channels.OutboundMessage) { m.EditProviderMessageID = "wamid.old" },
			wantKind: "none", wantID: "wamid.3",
			wantBody: `{"messaging_product":"whatsapp","to":"4915112345678","type":"text","text":{"body":"hello"}}`,
		},
		{name: "130429 throughput", respond: graphErr(429, 130429, "Rate limit hit"), wantKind: "rate_limited", wantRetry: time.Second, wantInErr: "130429"},
		{name: "130429 with Retry-After", respond: graphErr(429, 130429, "Rate limit hit", "Retry-After", "9"), wantKind: "rate_limited", wantRetry: 9 * time.Second},
		{name: "131056 pair rate limit", respond: graphErr(400, 131056, "(Business Account, Consumer Account) pair rate limit hit"), wantKind: "rate_limited", wantRetry: 6 * time.Second},
		{name: "HTTP 429 unknown code", respond: channelstest.Answer(429, `{}`, "Retry-After", "2"), wantKind: "rate_limited", wantRetry: 2 * time.Second},
		{name: "code 4 app throttling", respond: graphErr(400, 4, "Application request limit reached"), wantKind: "rate_limited", wantRetry: time.Minute},
		{name: "131000 something went wrong", respond: graphErr(500, 131000, "Something went wrong"), wantKind: "transient"},
		{name: "code 2 service", respond: graphErr(503, 2, "Service temporarily unavailable"), wantKind: "transient"},
		{name: "code 1 unknown", respond: graphErr(400, 1, "An unknown error occurred"), wantKind: "transient"},
		{name: "HTTP 502 HTML", respond: channelstest.Answer(502, `<html>bad gateway</html>`), wantKind: "transient"},
		{name: "100 invalid parameter", respond: graphErr(400, 100, "Invalid parameter"), wantKind: "permanent", wantInErr: "Invalid parameter"},
		{name: "131008 missing parameter", respond: graphErr(400, 131008, "Required parameter is missing"), wantKind: "permanent"},
		{name: "131026 undeliverable", respond: graphErr(400, 131026, "Message Undeliverable"), wantKind: "permanent"},
		{name: "190 token expired", respond: channelstest.Answer(401, graphError401), wantKind: "permanent", wantInErr: "190"},
		{name: "131047 outside 24h window", respond: graphErr(400, 131047, "Re-engagement message"), wantKind: "permanent"},
		{name: "200 not JSON", respond: channelstest.Answer(200, `ok`), wantKind: "transient"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeGraph(t, tt.respond)
			msg := textMessage("hello")
			if tt.msg != nil {
				tt.msg(msg)
			}
			res, err := newTestOutbound(t, fake.srv.URL, nil).Send(context.Background(), msg)
			require.Equal(t, tt.wantKind, channelstest.ErrorKind(err), "error: %v", err)
			calls := fake.recorded()
			require.Len(t, calls, 1)
			require.Equal(t, "/"+testPhoneNumberID+"/messages", calls[0].Path)
			if tt.wantBody != "" {
				require.JSONEq(t, tt.wantBody, string(calls[0].Raw))
			}
			if err != nil {
				require.NotContains(t, err.Error(), testAccessToken)
				if tt.wantInErr != "" {
					require.ErrorContains(t, err, tt.wantInErr)
				}
				if tt.wantKind == "rate_limited" {
					var rl *channels.RateLimitedError
					require.ErrorAs(t, err, &rl)
					require.Equal(t, tt.wantRetry, rl.RetryAfter)
				}
				return
			}
			require.Equal(t, &channels.SendResult{ProviderMessageID: tt.wantID}, res)
		})
	}
}

func TestNoEditor(t *testing.T) {
	t.Parallel()
	_, ok := newTestOutbound(t, "http://graph.test", nil).(channels.Editor)
	require.False(t, ok, "the Cloud API cannot edit: the dispatcher sends edits as new messages")
}

func TestSendInvalidMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msg  *channels.OutboundMessage
	}{
		{name: "nil", msg: nil},
		{name: "no conversation", msg: &channels.OutboundMessage{Text: "hi"}},
		{name: "empty", msg: textMessage(" ")},
		{name: "over 4096 characters", msg: textMessage(strings.Repeat("ß", maxTextBody+1))},
		{name: "button without label", msg: func() *channels.OutboundMessage {
			m := textMessage("hi")
			m.RichContent = &envelope.RichContent{Buttons: []envelope.RichButton{{Value: "x"}}}
			return m
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeGraph(t, accepted("wamid.1"))
			_, err := newTestOutbound(t, fake.srv.URL, nil).Send(context.Background(), tt.msg)
			require.Equal(t, "permanent", channelstest.ErrorKind(err), "error: %v", err)
			require.Empty(t, fake.recorded())
		})
	}
}

func TestSendTransportFailures(t *testing.T) {
	t.Parallel()

	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		fake := newFakeGraph(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		out := newTestOutbound(t, fake.srv.URL, &http.Client{Timeout: 50 * time.Millisecond})
		_, err := out.Send(context.Background(), textMessage("hello"))
		require.Equal(t, "transient", channelstest.ErrorKind(err), "error: %v", err)
	})

	t.Run("cancelled by the caller", func(t *testing.T) {
		t.Parallel()
		fake := newFakeGraph(t, accepted("wamid.1"))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := newTestOutbound(t, fake.srv.URL, nil).Send(ctx, textMessage("hello"))
		require.Equal(t, "transient", channelstest.ErrorKind(err))
		require.ErrorIs(t, err, context.Canceled)
	})

	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		base := srv.URL
		srv.Close()
		_, err := newTestOutbound(t, base, nil).Send(context.Background(), textMessage("hello"))
		require.Equal(t, "transient", channelstest.ErrorKind(err))
		require.NotContains(t, err.Error(), testAccessToken)
	})
}

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	card := envelope.RichContent{
		Title: "Deploy finished",
		Blocks: []envelope.RichBlock{
			{Type: envelope.BlockText, Text: "All 3 services are up."},
			{Type: envelope.BlockList, Items: []string{"api", "worker"}},
			{Type: envelope.BlockTable, Rows: [][]string{{"service", "version"}, {"api", "1.4.2"}}},
			{Type: envelope.BlockLabel, Text: "took 4m12s"},
			{Type: envelope.BlockImage, URL: "https://img.test/graph.png", Alt: "latency graph"},
		},
	}
	replyButtons := card
	replyButtons.Buttons = []envelope.RichButton{{Label: "Roll back", Value: "rollback:42"}, {Label: "Ack"}, {Label: "Approve", ActionID: "approve", Value: "run-42"}}
	urlButtons := card
	urlButtons.Buttons = []envelope.RichButton{{Label: "Open dashboard", URL: "https://dash.test/deploys/42"}, {Label: "Ack"}}
	tooMany := card
	tooMany.Buttons = []envelope.RichButton{{Label: "A"}, {Label: "B"}, {Label: "C"}, {Label: "D"}}
	region := envelope.RichSelect{ActionID: "region", Placeholder: "Pick a region",
		Options: []envelope.RichOption{{Label: "Europe (west)", Value: "eu-west"}, {Label: "US (east)", Value: "us-east"}}}
	listSelect := card
	listSelect.Selects = []envelope.RichSelect{region}
	selectAndButton := card
	selectAndButton.Buttons = []envelope.RichButton{{Label: "Ack"}}
	selectAndButton.Selects = []envelope.RichSelect{region}
	tests := []struct {
		name   string
		golden string
		rc     *envelope.RichContent
	}{
		{name: "reply buttons are interactive", golden: "interactive_buttons.json", rc: &replyButtons},
		{name: "a URL button falls back to text", golden: "text_fallback_url_button.json", rc: &urlButtons},
		{name: "four buttons fall back to text", golden: "text_fallback_four_buttons.json", rc: &tooMany},
		{name: "a select is an interactive list", golden: "interactive_list.json", rc: &listSelect},
		{name: "a select with a button falls back to text", golden: "text_fallback_select.json", rc: &selectAndButton},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeGraph(t, accepted("wamid.1"))
			msg := textMessage("Deployment report")
			msg.Attachments = []envelope.SendAttachment{{URL: "https://files.test/report.pdf", Name: "report.pdf"}}
			msg.RichContent = tt.rc
			_, err := newTestOutbound(t, fake.srv.URL, nil).Send(context.Background(), msg)
			require.NoError(t, err)
			calls := fake.recorded()
			require.Len(t, calls, 1)
			channelstest.RequireGoldenJSON(t, filepath.Join("testdata", "outbound", tt.golden), calls[0].Raw, *updateGolden)
		})
	}
}

func TestParseOutboundConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		externalID string
		settings   string
		creds      string
		wantPhone  string
		wantErr    bool
	}{
		{name: "external id", externalID: "111", creds: `{"access_token":"EAAG"}`, wantPhone: "111"},
		{name: "settings win", externalID: "111", settings: `{"phone_number_id":"222"}`, creds: `{"access_token":"EAAG"}`, wantPhone: "222"},
		{name: "no app secret needed", settings: `{"phone_number_id":"222"}`, creds: `{"access_token":"EAAG"}`, wantPhone: "222"},
		{name: "no phone number id", creds: `{"access_token":"EAAG"}`, wantErr: true},
		{name: "phone number id not numeric", externalID: "../me", creds: `{"access_token":"EAAG"}`, wantErr: true},
		{name: "no access token", externalID: "111", creds: `{"verify_token":"v"}`, wantErr: true},
		{name: "access token with a newline", externalID: "111", creds: `{"access_token":"EA\nAG"}`, wantErr: true},
		{name: "settings not an object", externalID: "111", settings: `[]`, creds: `{"access_token":"EAAG"}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			acct := channels.Account{ExternalID: tt.externalID}
			if tt.settings != "" {
				acct.Settings = json.RawMessage(tt.settings)
			}
			if tt.creds != "" {
				acct.Credentials = json.RawMessage(tt.creds)
			}
			cfg, err := ParseOutboundConfig(acct)
			_, outErr := New(Options{}).NewOutbound(acct)
			if tt.wantErr {
				require.ErrorIs(t, err, channels.ErrInvalidConfig)
				require.ErrorIs(t, outErr, channels.ErrInvalidConfig)
				return
			}
			require.NoError(t, err)
			require.NoError(t, outErr)
			require.Equal(t, tt.wantPhone, cfg.PhoneNumberID)
		})
	}
}
