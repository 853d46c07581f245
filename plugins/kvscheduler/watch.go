package kvscheduler

import (
	"sync"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// watchers fan status updates out to WatchValueStatus channels. Each watcher
// has a goroutine and a buffer coalesced by key, so a slow receiver delays
// only itself and always receives the latest status of every key.
type watchers struct {
	mu   sync.Mutex
	list map[*watcher]struct{}
}

type watcher struct {
	ch       chan<- *api.BaseValueStatus
	selector api.KeySelector

	mu      sync.Mutex
	pending map[string]*api.BaseValueStatus
	order   []string
	signal  chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

func newWatchers() *watchers { return &watchers{list: map[*watcher]struct{}{}} }

func (ws *watchers) add(ch chan<- *api.BaseValueStatus, selector api.KeySelector) func() {
	w := &watcher{
		ch:       ch,
		selector: selector,
		pending:  map[string]*api.BaseValueStatus{},
		signal:   make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	ws.mu.Lock()
	ws.list[w] = struct{}{}
	ws.mu.Unlock()
	go w.run()
	return func() {
		ws.mu.Lock()
		delete(ws.list, w)
		ws.mu.Unlock()
		w.close()
	}
}

func (ws *watchers) closeAll() {
	ws.mu.Lock()
	list := ws.list
	ws.list = map[*watcher]struct{}{}
	ws.mu.Unlock()
	for w := range list {
		w.close()
	}
}

// publish hands statuses to every interested watcher; it never blocks on a
// receiver.
func (ws *watchers) publish(statuses []*api.BaseValueStatus) {
	if len(statuses) == 0 {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.list {
		w.offer(statuses)
	}
}

func (ws *watchers) empty() bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.list) == 0
}

func (w *watcher) offer(statuses []*api.BaseValueStatus) {
	w.mu.Lock()
	added := false
	for _, st := range statuses {
		key := st.GetValue().GetKey()
		if w.selector != nil && !w.selector(key) {
			continue
		}
		if _, queued := w.pending[key]; !queued {
			w.order = append(w.order, key)
		}
		w.pending[key] = st
		added = true
	}
	w.mu.Unlock()
	if added {
		select {
		case w.signal <- struct{}{}:
		default:
		}
	}
}

func (w *watcher) run() {
	defer close(w.done)
	for {
		select {
		case <-w.stop:
			return
		case <-w.signal:
		}
		for {
			w.mu.Lock()
			if len(w.order) == 0 {
				w.mu.Unlock()
				break
			}
			key := w.order[0]
			w.order = w.order[1:]
			st := w.pending[key]
			delete(w.pending, key)
			w.mu.Unlock()
			select {
			case w.ch <- st:
			case <-w.stop:
				return
			}
		}
	}
}

func (w *watcher) close() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}
