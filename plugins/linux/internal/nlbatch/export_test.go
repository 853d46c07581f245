package nlbatch

// Answers is the number of the kernel's answers (acks and errors) read on
// the socket so far.
func (c *Conn) Answers() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answers
}
