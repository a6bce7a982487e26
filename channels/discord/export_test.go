package discord

// SetAbandon makes m leave its leases to expire when it stops, like a
// process that died.
func (m *Manager) SetAbandon(abandon bool) {
	m.mu.Lock()
	m.abandon = abandon
	m.mu.Unlock()
}

// Scans returns the account scans m completed.
func (m *Manager) Scans() int64 { return m.scans.Load() }
