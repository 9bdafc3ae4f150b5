package ingest

import (
	"sync"

	"github.com/trellis-ai/trellis/store"
)

// watchBuffer is how many status changes a Watcher holds untaken; past
// it the oldest are dropped (a watcher reads the record too).
const watchBuffer = 64

// watchers are the Watchers of this process's status changes, by
// conversation.
type watchers struct {
	mu sync.Mutex
	m  map[string]map[*Watcher]struct{}
}

// Watcher holds the status changes of one conversation's documents that
// this process stores, in order, until taken. C has a value whenever
// some wait; Take them. Close it when done.
type Watcher struct {
	C    <-chan struct{}
	c    chan struct{}
	s    *Service
	conv string
	mu   sync.Mutex
	got  []store.Document
}

// Watch returns a Watcher of the status changes of the conversation's
// documents made by this process (uploading, chunking, summarizing,
// ready, error), each as it is stored. Only this process's: a job run by
// another process sharing the database is seen by reading the record.
func (s *Service) Watch(conversationID string) *Watcher {
	c := make(chan struct{}, 1)
	w := &Watcher{C: c, c: c, s: s, conv: conversationID}
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	if s.watch.m == nil {
		s.watch.m = map[string]map[*Watcher]struct{}{}
	}
	if s.watch.m[conversationID] == nil {
		s.watch.m[conversationID] = map[*Watcher]struct{}{}
	}
	s.watch.m[conversationID][w] = struct{}{}
	return w
}

// Take returns the changes stored since the last Take, oldest first.
func (w *Watcher) Take() []store.Document {
	w.mu.Lock()
	defer w.mu.Unlock()
	got := w.got
	w.got = nil
	return got
}

// Close ends the watch.
func (w *Watcher) Close() {
	w.s.watch.mu.Lock()
	defer w.s.watch.mu.Unlock()
	delete(w.s.watch.m[w.conv], w)
	if len(w.s.watch.m[w.conv]) == 0 {
		delete(w.s.watch.m, w.conv)
	}
}

// published hands a stored status change to the conversation's
// Watchers, never blocking.
func (s *Service) published(d store.Document) {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	for w := range s.watch.m[d.ConversationID] {
		w.mu.Lock()
		if len(w.got) == watchBuffer {
			w.got = w.got[1:]
		}
		w.got = append(w.got, d)
		w.mu.Unlock()
		select {
		case w.c <- struct{}{}:
		default:
		}
	}
}
