package graph

import (
	"context"
	"time"
)

// emit and the methods below are what nodes reach through their context.
func (t *task[S]) emit(mode Mode, data any) error {
	r := t.r
	if r.modes&mode == 0 {
		return nil
	}
	return t.send(&Event[S]{Mode: mode, Namespace: r.ns, Node: t.node.spec.name, Step: r.step, Data: data})
}

func (t *task[S]) send(ev *Event[S]) error {
	if !t.spawned {
		return t.r.deliver(ev)
	}
	rl := relay[S]{mode: ev.Mode, ns: ev.Namespace, node: ev.Node, step: ev.Step, data: ev.Data}
	if ev.Mode&(ModeValues|ModeUpdates) != 0 {
		// A copy, not &ev.State: the event is the caller's, and keeping a
		// pointer into it would move every event to the heap, custom ones
		// too.
		st := ev.State
		rl.state = &st
	}
	select {
	case t.r.events <- rl:
		return nil
	case <-t.r.ctx.Done():
		return context.Cause(t.r.ctx)
	}
}

func (t *task[S]) forwardChild(fe foreignEvent) error {
	if ev, ok := fe.(Event[S]); ok {
		return t.send(&ev)
	}
	mode, ns, node, step, data := fe.parts()
	return t.send(&Event[S]{Mode: mode, Namespace: ns, Node: node, Step: step, Data: data})
}

// relay is an event on its way from a task's goroutine to the run's. The
// state travels by pointer, and only in the events that carry one, so the
// buffer costs the same whatever the size of S.
type relay[S any] struct {
	mode  Mode
	ns    []string
	node  string
	step  int
	data  any
	state *S
}

func (rl relay[S]) event() Event[S] {
	ev := Event[S]{Mode: rl.mode, Namespace: rl.ns, Node: rl.node, Step: rl.step, Data: rl.data}
	if rl.state != nil {
		ev.State = *rl.state
	}
	return ev
}

func (r *run[S]) drainEvents() {
	for {
		select {
		case rl := <-r.events:
			ev := rl.event()
			_ = r.deliver(&ev)
		default:
			return
		}
	}
}

// epoch is what debug events time tasks from: a duration since it keeps
// the clock's monotonic reading in a word, where a time.Time takes three.
var epoch = time.Now()

func (r *run[S]) debugStart(t *task[S]) {
	if r.modes&ModeDebug != 0 {
		t.more().started = time.Since(epoch)
		_ = r.deliver(&Event[S]{Mode: ModeDebug, Namespace: r.ns, Node: t.node.spec.name, Step: r.step, Data: DebugEvent{Kind: DebugTaskStart, TaskID: t.id}})
	}
}

func (r *run[S]) debugEnd(t *task[S]) {
	if r.modes&ModeDebug != 0 {
		d := DebugEvent{Kind: DebugTaskEnd, TaskID: t.id, Duration: time.Since(epoch) - t.more().started}
		if t.err != nil {
			d.Err = t.err.Error()
		}
		_ = r.deliver(&Event[S]{Mode: ModeDebug, Namespace: r.ns, Node: t.node.spec.name, Step: r.step, Data: d})
	}
}
