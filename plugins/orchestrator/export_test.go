package orchestrator

// ValuesPeak is the peak of keys the map of values had since it was built
// (a rebuild lowers it).
func ValuesPeak(o *Orchestrator) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.valuesPeak
}
