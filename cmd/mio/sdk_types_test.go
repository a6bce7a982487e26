package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/httpapi/openapi"
	"github.com/miohq/mio/httpapi/openapi/openapitest"
)

// sdkSchemas maps the types both SDKs model (by the SDKs' name) to the
// schema of the public OpenAPI document they mirror. pythonToo is false
// for request types the Python SDK takes as keyword arguments instead of
// a dataclass.
var sdkSchemas = []struct {
	sdk, schema string
	pythonToo   bool
}{
	{"Message", "Message", true},
	{"Conversation", "Conversation", true},
	{"Sender", "Sender", true},
	{"Attachment", "Attachment", true},
	{"EditRef", "EditRef", true},
	{"Delivery", "Delivery", true},
	{"SettleResult", "SettleResult", true},
	{"ConsumerStats", "ConsumerStats", true},
	{"ConsumerInfo", "Consumer", true},
	{"Sent", "SendAccepted", true},
	{"OutboundStatus", "Outbound", true},
	{"TypingResult", "TypingResult", true},
	{"ConversationItem", "ConversationItem", true},
	{"ConversationPage", "ConversationPage", true},
	{"ConsumerFilter", "ConsumerFilter", false},
	{"ConsumerConfig", "ConsumerConfig", false},
	{"SendAttachment", "SendAttachment", false},
	{"SendCommand", "SendCommand", false},
	{"RichContent", "RichContent", true},
	{"RichBlock", "RichBlock", true},
	{"RichButton", "RichButton", true},
	{"RichSelect", "RichSelect", true},
	{"RichOption", "RichOption", true},
}

// sdkOmits are document properties the SDKs leave out on purpose, with
// the reason; everything else must be named by both SDKs.
var sdkOmits = map[string]string{
	"Attachment.source": "the platform reference the enrich worker fetches from, not for agents",
}

// schemaProperties reads each schema's property names from the public
// OpenAPI document.
func schemaProperties(t *testing.T) map[string][]string {
	t.Helper()
	m := openapitest.Model(t, openapi.Public)
	out := map[string][]string{}
	for name, proxy := range m.Components.Schemas.FromOldest() {
		s := proxy.Schema()
		require.NotNil(t, s, "schema %s", name)
		if s.Properties == nil {
			continue
		}
		for prop := range s.Properties.KeysFromOldest() {
			out[name] = append(out[name], prop)
		}
		sort.Strings(out[name])
	}
	return out
}

// TestSDKTypesCoverOpenAPI: the Python dataclasses and the TypeScript
// interfaces name every property of the OpenAPI schema they mirror
// (httpapi/openapi/v1.yaml, which the API tests hold the server to), so
// an API change fails here until both SDKs follow.
func TestSDKTypesCoverOpenAPI(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	props := schemaProperties(t)
	src, err := os.ReadFile(filepath.Join(root, "sdk", "typescript", "src", "types.ts"))
	require.NoError(t, err)
	var python map[string][]string
	if py, err := exec.LookPath("python3"); err == nil {
		var names []string
		for _, c := range sdkSchemas {
			if c.pythonToo {
				names = append(names, `"`+c.sdk+`"`)
			}
		}
		cmd := exec.Command(py, "-c", `import dataclasses, json, mio.types
print(json.dumps({n: [f.name for f in dataclasses.fields(getattr(mio.types, n))] for n in (`+strings.Join(names, ", ")+`,)}))`)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "sdk", "python", "src"))
		out, err := cmd.Output()
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(out, &python))
	}
	for _, c := range sdkSchemas {
		fields := props[c.schema]
		require.NotEmpty(t, fields, "the document has no properties for schema %s", c.schema)
		block := regexp.MustCompile(`(?s)export interface ` + c.sdk + `\b[^{]*\{(.*?)\n\}`).FindSubmatch(src)
		require.NotNil(t, block, "TypeScript interface %s", c.sdk)
		for _, f := range fields {
			if _, ok := sdkOmits[c.schema+"."+f]; ok {
				continue
			}
			// ConsumerInfo extends Required<ConsumerConfig>: its settings are inherited.
			inherited := c.sdk == "ConsumerInfo" && regexp.MustCompile(`(?m)^\s+`+f+`\??:`).Match(regexpBlock(t, src, "ConsumerConfig"))
			if !inherited {
				assert.Regexp(t, `(?m)^\s+`+f+`\??:`, string(block[1]), "TypeScript %s lacks %s (schema %s)", c.sdk, f, c.schema)
			}
			if python != nil && c.pythonToo {
				assert.Contains(t, python[c.sdk], f, "Python %s lacks %s (schema %s)", c.sdk, f, c.schema)
			}
		}
	}
}

func regexpBlock(t *testing.T, src []byte, name string) []byte {
	t.Helper()
	block := regexp.MustCompile(`(?s)export interface ` + name + `\b[^{]*\{(.*?)\n\}`).FindSubmatch(src)
	require.NotNil(t, block, "TypeScript interface %s", name)
	return block[1]
}
