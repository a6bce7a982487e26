package channels

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/envelope"
)

func TestCardText(t *testing.T) {
	t.Parallel()
	rc := &envelope.RichContent{
		Title: " Deploy ",
		Blocks: []envelope.RichBlock{
			{Type: envelope.BlockText, Text: "All up."},
			{Type: envelope.BlockList, Items: []string{"api", "worker"}},
			{Type: envelope.BlockTable, Rows: [][]string{{"a", "b"}, {"1", "2"}}},
			{Type: envelope.BlockLabel, Text: "took 4m"},
			{Type: envelope.BlockImage, URL: "https://img.test/g.png", Alt: "graph"},
			{Type: envelope.BlockText, Text: "  "},
			{Type: "future", Text: "kept"},
		},
		Buttons: []envelope.RichButton{{Label: "left to the adapter"}},
	}
	require.Equal(t, "Deploy\n\nAll up.\n\n• api\n• worker\n\na | b\n1 | 2\n\ntook 4m\n\ngraph https://img.test/g.png\n\nkept", CardText(rc))
	require.Equal(t, "All up.", BlocksText(rc.Blocks[:1]))
	require.Empty(t, CardText(&envelope.RichContent{Buttons: rc.Buttons}))
}

func TestAttachmentLines(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"report.pdf: https://f.test/r.pdf", "https://f.test/x"}, AttachmentLines([]envelope.SendAttachment{
		{URL: "https://f.test/r.pdf", Name: "report.pdf"},
		{Name: "no url"},
		{URL: "https://f.test/x"},
	}))
	require.Empty(t, AttachmentLines(nil))
}

func TestAlignedTable(t *testing.T) {
	t.Parallel()
	require.Equal(t, "service | version\n--------+--------\napi     | 1.4.2\nwörker  | 1.4.10\nx       |", AlignedTable([][]string{
		{"service", "version"}, {"api", "1.4.2"}, {"wörker", "1.4.10"}, {"x"},
	}))
	require.Equal(t, "a | b", AlignedTable([][]string{{"a", "b"}}))
	require.Empty(t, AlignedTable(nil))
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	require.Equal(t, "héllo", Truncate("héllo", 5))
	require.Equal(t, "hél…", Truncate("héllo", 4))
	require.Equal(t, "…", Truncate("héllo", 1))
}
