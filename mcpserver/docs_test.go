package mcpserver_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/mcpserver"
)

// TestMCPToolsDocumented: the tool table of docs/api.md names exactly the
// tools tools/list answers, in the same order.
func TestMCPToolsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/api.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(doc), "<!-- mcp-tools -->")
	require.True(t, ok, "docs/api.md has no <!-- mcp-tools --> table")
	table, _, ok = strings.Cut(table, "<!-- /mcp-tools -->")
	require.True(t, ok)
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(table, -1) {
		documented = append(documented, m[1])
	}

	srv := mcpserver.New(mcpserver.Options{Backend: func(context.Context, *mcp.RequestExtra) (mcpserver.Backend, error) {
		return nil, mcpserver.Errorf(mcpserver.CodeUnavailable, "no backend in this test")
	}})
	t1, t2 := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, t1, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, t2, nil)
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var listed []string
	for _, tl := range res.Tools {
		listed = append(listed, tl.Name)
	}
	require.ElementsMatch(t, listed, documented, "tools/list (expected) vs docs/api.md's tool table (actual)")
	require.Equal(t, mcpserver.ToolNames, documented, "docs/api.md lists the tools in mcpserver.ToolNames' order")
}
