package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/envelope"
)

// jsonFields lists the JSON field names of a struct type.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// envelopeTypes are the mio.v1 wire types both SDKs model, by the name
// the SDKs give them.
var envelopeTypes = map[string]reflect.Type{
	"Message":      reflect.TypeOf(envelope.Message{}),
	"Conversation": reflect.TypeOf(envelope.Conversation{}),
	"Sender":       reflect.TypeOf(envelope.Sender{}),
	"Attachment":   reflect.TypeOf(envelope.Attachment{}),
}

// sdkOmits are envelope fields the SDKs leave out on purpose: an
// attachment's source is the platform reference the enrich worker
// fetches from, not something an agent reads.
var sdkOmits = map[string]bool{"Attachment.source": true}

// TestSDKTypesCoverEnvelope: the Python dataclasses and the TypeScript
// interfaces of mio.v1 messages name every field of the Go envelope, so
// an envelope change fails here until both SDKs follow.
func TestSDKTypesCoverEnvelope(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	src, err := os.ReadFile(filepath.Join(root, "sdk", "typescript", "src", "types.ts"))
	require.NoError(t, err)
	var python map[string][]string
	if py, err := exec.LookPath("python3"); err == nil {
		cmd := exec.Command(py, "-c", `import dataclasses, json, mio
print(json.dumps({n: [f.name for f in dataclasses.fields(getattr(mio, n))] for n in ("Message", "Conversation", "Sender", "Attachment")}))`)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "sdk", "python", "src"))
		out, err := cmd.Output()
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(out, &python))
	}
	for name, typ := range envelopeTypes {
		block := regexp.MustCompile(`(?s)export interface ` + name + ` \{(.*?)\n\}`).FindSubmatch(src)
		require.NotNil(t, block, "TypeScript interface %s", name)
		for _, f := range jsonFields(typ) {
			if sdkOmits[name+"."+f] {
				continue
			}
			require.Regexp(t, `(?m)^\s+`+f+`\??:`, string(block[1]), "TypeScript %s lacks %s", name, f)
			if python != nil {
				require.Contains(t, python[name], f, "Python %s lacks %s", name, f)
			}
		}
	}
}
