package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOutboundStream: open, append (a retry answered as before, a gap
// naming the seq expected), finish with the final text, an append after
// the finish; every answer is validated against the OpenAPI document.
func TestOutboundStream(t *testing.T) {
	t.Parallel()
	o := newOutAPI(t)
	status, m := o.send(t, o.a, `{"idempotency_key":"s1","account_id":"`+o.a.account.String()+`","conversation_id":"c-1","text":"","stream":true}`)
	require.Equal(t, http.StatusAccepted, status, m)
	id := m["id"].(string)
	url := o.pub.URL + "/v1/outbound/" + id

	status, m = o.do(t, http.MethodPost, url+"/append", o.a.produce, `{"seq":1,"text_delta":"Hel"}`)
	require.Equal(t, http.StatusOK, status, m)
	require.Equal(t, map[string]any{"id": id, "seq": 1.0, "finished": false}, m)
	status, m2 := o.do(t, http.MethodPost, url+"/append", o.a.produce, `{"seq":1,"text_delta":"Hel"}`)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, m, m2, "a repeated seq: the same answer")
	status, m = o.do(t, http.MethodPost, url+"/append", o.a.produce, `{"seq":3,"text_delta":"lo"}`)
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, "seq_conflict", m["error"].(map[string]any)["code"])
	require.Equal(t, 2.0, m["expected_seq"])
	status, _ = o.do(t, http.MethodPost, url+"/append", o.a.produce, `{"seq":2,"text_delta":"lo"}`)
	require.Equal(t, http.StatusOK, status)

	status, m = o.do(t, http.MethodGet, url, o.a.read, "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "Hello", m["text"])
	require.Equal(t, map[string]any{"seq": 2.0, "finished": false}, m["stream"])
	require.Nil(t, m["edit_of"])

	status, m = o.do(t, http.MethodPost, url+"/finish", o.a.produce, `{"seq":2,"text":"Hello, world","rich_content":{"title":"Greeting"}}`)
	require.Equal(t, http.StatusOK, status, m)
	require.Equal(t, true, m["finished"])
	status, _ = o.do(t, http.MethodPost, url+"/finish", o.a.produce, `{"seq":2}`)
	require.Equal(t, http.StatusOK, status, "a retried finish")
	status, m = o.do(t, http.MethodPost, url+"/append", o.a.produce, `{"seq":3,"text_delta":"!"}`)
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, "stream_finished", m["error"].(map[string]any)["code"])
	status, m = o.do(t, http.MethodGet, url, o.a.read, "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "Hello, world", m["text"])
}

// TestOutboundStreamRefusals: roles, another tenant, bad input, a message
// that is not a stream.
func TestOutboundStreamRefusals(t *testing.T) {
	t.Parallel()
	o := newOutAPI(t)
	_, m := o.send(t, o.a, `{"idempotency_key":"s1","account_id":"`+o.a.account.String()+`","conversation_id":"c-1","stream":true}`)
	id := m["id"].(string)
	url := o.pub.URL + "/v1/outbound/" + id
	_, m = o.send(t, o.a, cmd("plain", o.a.account, ""))
	plain := o.pub.URL + "/v1/outbound/" + m["id"].(string)

	for _, c := range []struct {
		name, url, token, body string
		status                 int
		code                   string
	}{
		{"read role", url + "/append", o.a.read, `{"seq":1,"text_delta":"x"}`, http.StatusForbidden, "forbidden"},
		{"no token", url + "/finish", "", `{}`, http.StatusUnauthorized, "unauthorized"},
		{"another tenant", url + "/append", o.b.produce, `{"seq":1,"text_delta":"x"}`, http.StatusNotFound, "not_found"},
		{"another tenant's finish", url + "/finish", o.b.produce, `{}`, http.StatusNotFound, "not_found"},
		{"not a uuid", o.pub.URL + "/v1/outbound/x/append", o.a.produce, `{"seq":1,"text_delta":"x"}`, http.StatusBadRequest, "bad_request"},
		{"no seq", url + "/append", o.a.produce, `{"text_delta":"x"}`, http.StatusBadRequest, "bad_request"},
		{"unknown field", url + "/append", o.a.produce, `{"seq":1,"delta":"x"}`, http.StatusBadRequest, "bad_request"},
		{"bad rich content", url + "/finish", o.a.produce, `{"rich_content":{"blocks":[{"type":"video"}]}}`, http.StatusBadRequest, "bad_request"},
		{"not a stream", plain + "/append", o.a.produce, `{"seq":1,"text_delta":"x"}`, http.StatusConflict, "not_a_stream"},
		{"stream with edit_of", o.pub.URL + "/v1/outbound", o.a.produce,
			`{"idempotency_key":"s2","account_id":"` + o.a.account.String() + `","conversation_id":"c-1","stream":true,"edit_of":"` + id + `"}`,
			http.StatusBadRequest, "bad_request"},
	} {
		status, m := o.do(t, http.MethodPost, c.url, c.token, c.body)
		require.Equal(t, c.status, status, "%s: %v", c.name, m)
		require.Equal(t, c.code, m["error"].(map[string]any)["code"], c.name)
	}
}

// TestOutboundStreamTooLarge: a text_delta over the message limit, or one
// that would take the stream's text over it, is 413 body_too_large and
// writes nothing (the stream takes the same seq next); so are a finish's
// text over the limit and a body over the request limit.
func TestOutboundStreamTooLarge(t *testing.T) {
	t.Parallel()
	o := newOutAPI(t)
	_, m := o.send(t, o.a, `{"idempotency_key":"s1","account_id":"`+o.a.account.String()+`","conversation_id":"c-1","stream":true}`)
	id := m["id"].(string)
	url := o.pub.URL + "/v1/outbound/" + id
	const limit = 64 << 10
	appendOf := func(seq, n int) string {
		return fmt.Sprintf(`{"seq":%d,"text_delta":"%s"}`, seq, strings.Repeat("a", n))
	}
	for _, c := range []struct {
		name, path, body string
	}{
		{"a delta over the limit", "/append", appendOf(1, limit+1)},
		{"a body over the request limit", "/append", appendOf(1, 2<<20)},
		{"a final text over the limit", "/finish", `{"text":"` + strings.Repeat("a", limit+1) + `"}`},
	} {
		status, m := o.do(t, http.MethodPost, url+c.path, o.a.produce, c.body)
		require.Equal(t, http.StatusRequestEntityTooLarge, status, "%s: %v", c.name, m)
		require.Equal(t, "body_too_large", m["error"].(map[string]any)["code"], c.name)
	}
	status, m := o.do(t, http.MethodPost, url+"/append", o.a.produce, appendOf(1, limit-10))
	require.Equal(t, http.StatusOK, status, m)
	status, m = o.do(t, http.MethodPost, url+"/append", o.a.produce, appendOf(2, 11))
	require.Equal(t, http.StatusRequestEntityTooLarge, status, "the stream's text would be over the limit: %v", m)
	require.Contains(t, m["error"].(map[string]any)["message"], "text_delta")
	status, m = o.do(t, http.MethodGet, url, o.a.read, "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, map[string]any{"seq": 1.0, "finished": false}, m["stream"], "nothing written")
	require.Len(t, m["text"], limit-10)
	status, m = o.do(t, http.MethodPost, url+"/append", o.a.produce, appendOf(2, 10))
	require.Equal(t, http.StatusOK, status, "the same seq, within the limit: %v", m)
}

// TestOutboundStreamEmptyFinish: a finish that would leave the message
// nothing to show (nothing appended, no text, no rich content) is 422
// stream_empty naming text, and the stream stays open; a finish with text
// then ends it.
func TestOutboundStreamEmptyFinish(t *testing.T) {
	t.Parallel()
	o := newOutAPI(t)
	_, m := o.send(t, o.a, `{"idempotency_key":"s1","account_id":"`+o.a.account.String()+`","conversation_id":"c-1","stream":true}`)
	id := m["id"].(string)
	url := o.pub.URL + "/v1/outbound/" + id
	for _, body := range []string{`{}`, `{"seq":0}`, `{"text":" \n"}`} {
		status, m := o.do(t, http.MethodPost, url+"/finish", o.a.produce, body)
		require.Equal(t, http.StatusUnprocessableEntity, status, "%s: %v", body, m)
		require.Equal(t, "stream_empty", m["error"].(map[string]any)["code"], body)
		require.Contains(t, m["error"].(map[string]any)["message"], "text", body)
	}
	status, m := o.do(t, http.MethodGet, url, o.a.read, "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, map[string]any{"seq": 0.0, "finished": false}, m["stream"], "still open")
	status, m = o.do(t, http.MethodPost, url+"/finish", o.a.produce, `{"seq":1}`)
	require.Equal(t, http.StatusConflict, status, "a seq never taken is still a conflict: %v", m)
	status, m = o.do(t, http.MethodPost, url+"/finish", o.a.produce, `{"rich_content":{"title":"Done"}}`)
	require.Equal(t, http.StatusOK, status, "rich content alone is something to show: %v", m)

	_, m = o.send(t, o.a, `{"idempotency_key":"s2","account_id":"`+o.a.account.String()+`","conversation_id":"c-2","stream":true}`)
	url = o.pub.URL + "/v1/outbound/" + m["id"].(string)
	status, m = o.do(t, http.MethodPost, url+"/finish", o.a.produce, `{"text":"The answer"}`)
	require.Equal(t, http.StatusOK, status, m)
	status, m = o.do(t, http.MethodGet, url, o.a.read, "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "The answer", m["text"])
}
