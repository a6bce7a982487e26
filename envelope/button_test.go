package envelope

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRichButtonTextIsLabel: a button written as the contract's
// {"type": "button", "action_id", "text", ...} decodes with Label set;
// "label" wins when both are given.
func TestRichButtonTextIsLabel(t *testing.T) {
	var b RichButton
	require.NoError(t, json.Unmarshal([]byte(`{"type":"button","action_id":"approve","text":"Approve","value":"42","style":"primary"}`), &b))
	require.Equal(t, RichButton{Type: "button", Label: "Approve", ActionID: "approve", Value: "42", Style: ButtonPrimary}, b)
	require.NoError(t, json.Unmarshal([]byte(`{"label":"L","text":"T"}`), &b))
	require.Equal(t, "L", b.Label)
}

// TestCallbackData: action id and value travel in one callback string and
// come back apart; a button without an action id sends its value (else
// its label) as it is.
func TestCallbackData(t *testing.T) {
	for _, tc := range []struct {
		name          string
		b             RichButton
		data          string
		action, value string
	}{
		{"action and value", RichButton{Label: "Yes", ActionID: "approve", Value: "run:42"}, "approve:run:42", "approve", "run:42"},
		{"action only", RichButton{Label: "Yes", ActionID: "approve"}, "approve", "approve", ""},
		{"value only", RichButton{Label: "Yes", Value: "yes"}, "yes", "yes", ""},
		{"label only", RichButton{Label: "Yes"}, "Yes", "Yes", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.data, tc.b.CallbackData())
			action, value := SplitCallbackData(tc.data)
			require.Equal(t, tc.action, action)
			require.Equal(t, tc.value, value)
		})
	}
}
