package vppconn

// BatchBuffer is the request buffer the connection's last batch left for
// the next one (nil: none kept, or not connected).
func (m *Manager) BatchBuffer() []byte {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.sess == nil {
		return nil
	}
	m.sess.client.runSlot <- struct{}{} // no batch runs meanwhile
	defer func() { <-m.sess.client.runSlot }()
	return m.sess.client.out
}
