package top

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/stretchr/testify/require"
)

// TestRefreshSchedule: a refresh asked for by a key schedules the next
// one itself, and the tick scheduled before it no longer counts (else
// each r would add a refresh every interval).
func TestRefreshSchedule(t *testing.T) {
	t.Parallel()
	s := fixture()
	m := newModel(t.Context(), NewClient("http://127.0.0.1:1", "mioadm_x"), Options{Interval: time.Second}, s)
	m.Init()
	m.Update(snapMsg{snap: s})
	require.Equal(t, 1, m.tick)
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("r")})
	require.NotNil(t, cmd, "r reads a snapshot")
	_, cmd = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("r")})
	require.Nil(t, cmd, "one read at a time")
	m.Update(snapMsg{snap: s}) // the first r's read; the second r asks again
	require.True(t, m.fetching)
	m.Update(snapMsg{snap: s})
	require.False(t, m.fetching)
	_, cmd = m.Update(tickMsg{n: 1})
	require.Nil(t, cmd, "the tick scheduled before r")
	_, cmd = m.Update(tickMsg{n: m.tick})
	require.NotNil(t, cmd)
}

// TestKeys: views by number, tab and several keys read at once; t cycles
// every tenant, each tenant, every tenant; / types a tenant.
func TestKeys(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // tails hang until the model lets go
	}))
	t.Cleanup(api.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := fixture()
	m := newModel(ctx, NewClient(api.URL, "mioadm_x"), Options{AdminURL: api.URL, Interval: time.Second}, s)
	m.Init()
	m.Update(snapMsg{snap: s})
	press := func(keys string) {
		t.Helper()
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(keys)})
	}

	press("4")
	require.Equal(t, viewDead, m.view)
	m.Update(tea.KeyMsg{Type: tea.KeyTab})
	require.Equal(t, viewTail, m.view)
	press("2t") // two keys in one read
	require.Equal(t, viewQueues, m.view)
	require.Equal(t, s.Tenants[0].ID, m.tenant)
	require.Contains(t, m.View(), "tenant acme ·")
	press("t")
	require.Equal(t, s.Tenants[1].ID, m.tenant)
	press("t")
	require.Empty(t, m.tenant, "after the last tenant: every tenant")

	press("/acm")
	require.Contains(t, m.View(), "tenant (name or id; empty: all): acm█")
	m.Update(tea.KeyMsg{Type: tea.KeyBackspace})
	press("me")
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	require.Nil(t, m.prompt)
	require.Equal(t, s.Tenants[0].ID, m.tenant)
	press("/0190bb")
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	require.Equal(t, s.Tenants[1].ID, m.tenant, "an id's start")

	press("1")
	for range 100 {
		m.Update(tea.KeyMsg{Type: tea.KeyDown})
	}
	require.Equal(t, 40-20, m.scroll[viewConsumers], "scrolls no further than the last row")
	press("/nobody")
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	require.Contains(t, m.View(), `! no tenant named "nobody"`)

	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	require.NotNil(t, cmd)
	require.Equal(t, tea.QuitMsg{}, cmd())
}

// TestTailEvents: the tail shows messages newest first, drops events of
// streams it no longer follows, and keeps the rows being read in place
// when scrolled.
func TestTailEvents(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	t.Cleanup(api.Close)
	s := fixture()
	m := newModel(t.Context(), NewClient(api.URL, "mioadm_x"), Options{Interval: time.Second}, s)
	m.Init()
	m.Update(snapMsg{snap: s})
	gen := m.tails.generation()
	require.Equal(t, map[string]string{s.Tenants[0].ID: "connecting", s.Tenants[1].ID: "connecting"}, m.tailState)

	msg := func(text string) tailEvent {
		return tailEvent{gen: gen, tenantID: s.Tenants[0].ID, msg: TailMessage{TenantID: s.Tenants[0].ID, ConversationID: "C1", Text: text}}
	}
	m.Update(tailMsg{{gen: gen, tenantID: s.Tenants[0].ID, state: "live"}, {gen: gen, tenantID: s.Tenants[1].ID, state: "live"},
		msg("first"), msg("second")})
	require.Equal(t, "live", m.tailSummary())
	require.Equal(t, []string{"second", "first"}, tailTexts(m))

	m.scroll[viewTail] = 1
	m.Update(tailMsg{msg("third")})
	require.Equal(t, 2, m.scroll[viewTail], "the rows being read stay in place")

	press := func(keys string) { m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(keys)}) }
	press("t")
	require.Empty(t, m.tail, "another tenant: another tail")
	require.Equal(t, gen+1, m.tails.generation())
	m.Update(tailMsg{msg("late, from the stream before")})
	require.Empty(t, m.tail)
	require.Equal(t, map[string]string{s.Tenants[0].ID: "connecting"}, m.tailState)
}

func tailTexts(m *model) []string {
	var out []string
	for _, t := range m.tail {
		out = append(out, t.Text)
	}
	return out
}
