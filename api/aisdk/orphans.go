package aisdk

import (
	"context"
	"sync"
)

// orphans are the runs whose client went away, each waiting, for
// ResumeGrace, for a client to resume its stream before it is
// cancelled (see Handler.left).
type orphans struct {
	mu sync.Mutex
	m  map[string]*orphan // by conversation
}

type orphan struct {
	runID   string
	stop    context.CancelFunc // ends the wait
	resumed bool
}

func (o *orphans) add(conv, runID string, stop context.CancelFunc) *orphan {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]*orphan{}
	}
	x := &orphan{runID: runID, stop: stop}
	o.m[conv] = x
	return x
}

// claim ends the wait of the conversation's orphan, if any: resumed, it
// lives on; otherwise it is cancelled now.
func (o *orphans) claim(conv string, resumed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if x := o.m[conv]; x != nil {
		x.resumed = resumed
		x.stop()
		delete(o.m, conv)
	}
}

// done takes x off the orphans and reports whether a client resumed it.
func (o *orphans) done(conv string, x *orphan) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m[conv] == x {
		delete(o.m, conv)
	}
	return x.resumed
}
