package top

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// model is the terminal view's state machine (bubbletea): snapshots
// every interval, tail events as they come, keys.
type model struct {
	screen
	// ctx is the program's lifetime: bubbletea's commands take no
	// context, so the model carries the one Run was given.
	ctx      context.Context
	client   *Client
	tails    *tailer
	fetching bool
	// again is a refresh asked for while one was running.
	again bool
	// first is the snapshot Run read before starting the view, of the
	// tenant shown first.
	first *Snapshot
	// tick numbers the scheduled refresh: a refresh asked for by a key
	// schedules its own, and only the newest counts.
	tick int
}

// Messages of the model besides bubbletea's own.
type (
	snapMsg struct {
		snap *Snapshot
		err  error
	}
	tickMsg  struct{ n int }
	tailMsg  []tailEvent
	quitting struct{}
)

func newModel(ctx context.Context, c *Client, opts Options, first *Snapshot) *model {
	return &model{
		screen: screen{url: opts.AdminURL, interval: opts.Interval, width: defaultWidth, height: defaultHeight,
			tenant: first.TenantID, rates: NewRates(RateWindow), tailState: map[string]string{}},
		ctx: ctx, client: c, tails: newTailer(c), first: first,
	}
}

func (m *model) Init() tea.Cmd {
	m.fetching = true
	first := m.first
	return tea.Batch(func() tea.Msg { return snapMsg{snap: first} }, m.waitTail())
}

// refresh reads a snapshot for the tenant shown now, unless one is being
// read (then it reads again when that one is in).
func (m *model) refresh() tea.Cmd {
	if m.fetching {
		m.again = true
		return nil
	}
	m.fetching = true
	ctx, c, tenant := m.ctx, m.client, m.tenant
	return func() tea.Msg {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		s, err := c.Snapshot(rctx, tenant)
		return snapMsg{snap: s, err: err}
	}
}

// waitTail waits for the tail's next events: those already waiting come
// together (up to maxTailBatch), so a busy tail redraws once per batch,
// not once per message.
func (m *model) waitTail() tea.Cmd {
	ctx, events := m.ctx, m.tails.events
	return func() tea.Msg {
		var batch tailMsg
		select {
		case e := <-events:
			batch = append(batch, e)
		case <-ctx.Done():
			return quitting{}
		}
		for len(batch) < maxTailBatch {
			select {
			case e := <-events:
				batch = append(batch, e)
			default:
				return batch
			}
		}
		return batch
	}
}

// maxTailBatch bounds the tail events taken in one update.
const maxTailBatch = 200

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyMsg:
		return m, m.key(msg)
	case snapMsg:
		return m, m.snapshot(msg)
	case tickMsg:
		if msg.n != m.tick {
			return m, nil
		}
		return m, m.refresh()
	case tailMsg:
		for _, e := range msg {
			m.tailEvent(e)
		}
		return m, m.waitTail()
	case quitting:
		return m, tea.Quit
	}
	return m, nil
}

// snapshot takes a refresh's result and schedules the next.
func (m *model) snapshot(msg snapMsg) tea.Cmd {
	m.fetching = false
	if m.again || (msg.snap != nil && msg.snap.TenantID != m.tenant) {
		// Asked again, or the tenant changed while it was read.
		m.again = false
		return m.refresh()
	}
	m.tick++
	n := m.tick
	next := tea.Tick(m.interval, func(time.Time) tea.Msg { return tickMsg{n: n} })
	m.err = msg.err
	if msg.err != nil {
		return next
	}
	m.snap = msg.snap
	m.rates.Add(msg.snap.At, msg.snap.Counters)
	m.clampScroll()
	m.followTail()
	return next
}

// followTail points the tail at the tenant shown, or at the first
// maxTailTenants tenants when every tenant is shown. It starts the
// streams at once: they only start goroutines.
func (m *model) followTail() {
	ids := []string{m.tenant}
	if m.tenant == "" {
		ids = nil
		if m.snap != nil {
			for _, t := range m.snap.Tenants {
				if len(ids) < maxTailTenants {
					ids = append(ids, t.ID)
				}
			}
		}
	}
	if !m.tails.differs(ids) {
		return
	}
	m.tails.follow(m.ctx, ids)
	m.tailState = map[string]string{}
	for _, id := range ids {
		m.tailState[id] = "connecting"
	}
}

func (m *model) tailEvent(e tailEvent) {
	if e.gen != m.tails.generation() {
		return
	}
	if e.state != "" {
		m.tailState[e.tenantID] = e.state
		return
	}
	m.tail = slices.Insert(m.tail, 0, e.msg)
	if len(m.tail) > maxTail {
		m.tail = m.tail[:maxTail]
	}
	if m.scroll[viewTail] > 0 {
		m.scroll[viewTail]++ // keep the rows being read in place
	}
}

func (m *model) key(k tea.KeyMsg) tea.Cmd {
	if k.Type == tea.KeyRunes && len(k.Runes) > 1 {
		// Keys typed faster than they are read come in one message.
		var cmds []tea.Cmd
		for _, r := range k.Runes {
			cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}}))
		}
		return tea.Batch(cmds...)
	}
	if m.prompt != nil {
		return m.promptKey(k)
	}
	switch s := k.String(); s {
	case "q", "ctrl+c":
		m.tails.stop()
		return tea.Quit
	case "1", "2", "3", "4", "5":
		m.view = int(s[0] - '1')
	case "tab", "right", "l":
		m.view = (m.view + 1) % numViews
	case "shift+tab", "left", "h":
		m.view = (m.view + numViews - 1) % numViews
	case "up", "k":
		m.scroll[m.view]--
	case "down", "j":
		m.scroll[m.view]++
	case "pgup":
		m.scroll[m.view] -= m.height / 2
	case "pgdown", " ":
		m.scroll[m.view] += m.height / 2
	case "home", "g":
		m.scroll[m.view] = 0
	case "r":
		return m.refresh()
	case "t":
		return m.setTenant(m.nextTenant())
	case "/", "T":
		p := ""
		m.prompt = &p
	}
	m.clampScroll()
	return nil
}

func (m *model) promptKey(k tea.KeyMsg) tea.Cmd {
	switch k.Type {
	case tea.KeyEsc, tea.KeyCtrlC:
		m.prompt = nil
	case tea.KeyEnter:
		want := strings.TrimSpace(*m.prompt)
		m.prompt = nil
		if want == "" {
			return m.setTenant("")
		}
		if id, ok := matchTenant(m.snap, want); ok {
			return m.setTenant(id)
		}
		m.err = errors.New("no tenant named " + strconv.Quote(want) + ", and none whose id starts with it")
	case tea.KeyBackspace:
		if r := []rune(*m.prompt); len(r) > 0 {
			*m.prompt = string(r[:len(r)-1])
		}
	case tea.KeyRunes, tea.KeySpace:
		*m.prompt += string(k.Runes)
	}
	return nil
}

// nextTenant is the tenant after the one shown: every tenant, then each
// one in turn, then every tenant again.
func (m *model) nextTenant() string {
	if m.snap == nil || len(m.snap.Tenants) == 0 {
		return ""
	}
	if m.tenant == "" {
		return m.snap.Tenants[0].ID
	}
	i := slices.IndexFunc(m.snap.Tenants, func(t Tenant) bool { return t.ID == m.tenant })
	if i < 0 || i == len(m.snap.Tenants)-1 {
		return ""
	}
	return m.snap.Tenants[i+1].ID
}

// matchTenant finds the tenant named want (any case), else the one whose
// id starts with it.
func matchTenant(s *Snapshot, want string) (string, bool) {
	if s == nil {
		return "", false
	}
	for _, t := range s.Tenants {
		if strings.EqualFold(t.Name, want) {
			return t.ID, true
		}
	}
	for _, t := range s.Tenants {
		if strings.HasPrefix(t.ID, strings.ToLower(want)) {
			return t.ID, true
		}
	}
	return "", false
}

// setTenant shows tenant id ("" every tenant): a new snapshot and tail.
func (m *model) setTenant(id string) tea.Cmd {
	if id == m.tenant {
		return nil
	}
	m.tenant = id
	m.tail = nil
	m.scroll = [numViews]int{}
	m.followTail()
	return m.refresh()
}

func (m *model) clampScroll() {
	_, rows := m.viewRows(m.width)
	room := max(m.height-4, 1)
	m.scroll[m.view] = max(min(m.scroll[m.view], len(rows)-room), 0)
}

func (m *model) View() string { return m.render() }

// maxTailTenants bounds the streams tailed when every tenant is shown.
const maxTailTenants = 10

// tailer follows the admin API's live tail of some tenants, one stream
// each, reconnecting when a stream ends, and sends what it sees on
// events. follow replaces the tenants followed; events of an earlier
// set carry an older generation.
type tailer struct {
	client *Client
	events chan tailEvent

	mu     sync.Mutex
	gen    int
	ids    []string
	cancel context.CancelFunc
}

// tailEvent is a tailed message, or (state set) a stream's new state.
type tailEvent struct {
	gen      int
	tenantID string
	state    string
	msg      TailMessage
}

func newTailer(c *Client) *tailer {
	return &tailer{client: c, events: make(chan tailEvent, 256)}
}

func (t *tailer) generation() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gen
}

// differs reports whether ids are not the tenants followed.
func (t *tailer) differs(ids []string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cancel == nil || !slices.Equal(t.ids, ids)
}

// follow stops the streams followed and follows ids until ctx ends or
// the next follow or stop.
func (t *tailer) follow(ctx context.Context, ids []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cancel != nil {
		t.cancel()
	}
	t.gen++
	t.ids = ids
	ctx, t.cancel = context.WithCancel(ctx)
	for _, id := range ids {
		go t.run(ctx, t.gen, id)
	}
}

func (t *tailer) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cancel != nil {
		t.cancel()
	}
}

// tailRetry is the pause before reconnecting a tail stream that ended.
const tailRetry = 2 * time.Second

func (t *tailer) run(ctx context.Context, gen int, tenantID string) {
	send := func(e tailEvent) {
		e.gen, e.tenantID = gen, tenantID
		select {
		case t.events <- e:
		case <-ctx.Done():
		}
	}
	for {
		err := t.client.Tail(ctx, tenantID, func() { send(tailEvent{state: "live"}) },
			func(m TailMessage) { send(tailEvent{msg: m}) })
		if ctx.Err() != nil {
			return
		}
		send(tailEvent{state: oneLine(err.Error())})
		select {
		case <-ctx.Done():
			return
		case <-time.After(tailRetry):
		}
		send(tailEvent{state: "connecting"})
	}
}
