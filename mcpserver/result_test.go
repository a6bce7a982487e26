package mcpserver

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// TestWireResultMatchesSDK: a result written by wireResult is the JSON
// the SDK writes for it, member for member, whatever it holds.
func TestWireResultMatchesSDK(t *testing.T) {
	t.Parallel()
	out := json.RawMessage(`{"deliveries":[{"delivery_id":"d1","message":{"text":"<b>\"hi\" & \\ bye</b>\n\u2028é"}}]}`)
	failed := &mcp.CallToolResult{}
	failed.SetError(errors.New(`reply: delivery "x" is no longer leased to you`))
	for name, r := range map[string]*mcp.CallToolResult{
		"output":   {StructuredContent: out, Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}},
		"error":    failed,
		"empty":    {Content: []mcp.Content{}},
		"no text":  {Content: nil, StructuredContent: out},
		"map":      {StructuredContent: map[string]any{"a": []any{1.0, "<x>"}}, Content: []mcp.Content{&mcp.TextContent{Text: "a"}}},
		"meta":     {Meta: mcp.Meta{"k": "v", "content": []any{}}, StructuredContent: out, Content: []mcp.Content{&mcp.TextContent{Text: "x"}}},
		"bad utf8": {Content: []mcp.Content{&mcp.TextContent{Text: "a\xffb"}}},
		"blocks": {Content: []mcp.Content{
			&mcp.TextContent{Text: "t", Annotations: &mcp.Annotations{Priority: 0.5}},
			&mcp.TextContent{Text: "u", Meta: mcp.Meta{"m": 1.0}},
			&mcp.ImageContent{Data: []byte("png"), MIMEType: "image/png"},
			&mcp.TextContent{Text: ""},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			want, err := r.MarshalJSON()
			require.NoError(t, err)
			got, err := wireResult{r}.MarshalJSON()
			require.NoError(t, err)
			require.True(t, json.Valid(got), "%s", got)
			var w, g any
			require.NoError(t, json.Unmarshal(want, &w))
			require.NoError(t, json.Unmarshal(got, &g))
			require.Equal(t, w, g, "SDK (expected) vs wireResult (actual):\n%s\n%s", want, got)
		})
	}
}
