package httpapi_test

import (
	"net/http"
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
