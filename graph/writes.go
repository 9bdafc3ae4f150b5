package graph

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Write indexes of the reserved channels; state fields use 0 and up.
const (
	idxDone      = -1
	idxOverwrite = -3
	idxGoto      = -4
	idxSend      = -5
	idxInterrupt = -100  // minus the interrupt's order in its task
	idxResume    = -1000 // minus the answer's order in its task
)

// ChannelOverwrite holds a task's Overwrite result: a JSON object from
// field name to value.
const ChannelOverwrite = "__overwrite__"

// finishedWrites encodes what a task that finished or paused leaves for
// the next attempt at its step.
func (r *run[S]) finishedWrites(t *task[S]) ([]Write, error) {
	if len(t.pending()) == 0 {
		return r.taskWrites(t)
	}
	var ws []Write
	for k, in := range t.pending() {
		raw, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("graph: encode interrupt of %s: %w", t.label(), err)
		}
		ws = append(ws, Write{TaskID: t.id, Index: idxInterrupt - k, Channel: ChannelInterrupt, Value: raw})
	}
	return ws, nil
}

// taskWrites encodes a finished task's result as pending writes.
func (r *run[S]) taskWrites(t *task[S]) ([]Write, error) {
	sc := r.g.schema
	ws := []Write{{TaskID: t.id, Index: idxDone, Channel: ChannelDone, Value: []byte("null")}}
	for i, f := range sc.fields {
		if t.set.has(i) {
			data, err := sc.encodeField(&t.upd, i, 0)
			if err != nil {
				return nil, err
			}
			ws = append(ws, Write{TaskID: t.id, Index: len(ws) - 1, Channel: f.name, Value: data})
		}
	}
	add := func(idx int, channel string, v any) error {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("graph: encode %s of %s: %w", channel, t.label(), err)
		}
		ws = append(ws, Write{TaskID: t.id, Index: idx, Channel: channel, Value: raw})
		return nil
	}
	if t.ovrMask != 0 {
		obj := map[string]json.RawMessage{}
		for i, f := range sc.fields {
			if t.ovrMask.has(i) {
				data, err := sc.encodeField(t.overwrote(), i, 0)
				if err != nil {
					return nil, err
				}
				obj[f.name] = data
			}
		}
		if err := add(idxOverwrite, ChannelOverwrite, obj); err != nil {
			return nil, err
		}
	}
	gotos, sends := t.routes()
	if len(gotos) > 0 {
		if err := add(idxGoto, ChannelGoto, gotos); err != nil {
			return nil, err
		}
	}
	if len(sends) > 0 {
		if err := add(idxSend, ChannelSend, sends); err != nil {
			return nil, err
		}
	}
	return ws, nil
}

type resumeWrite struct {
	ID    string `json:"id"`
	Value any    `json:"value"`
}

type resumeValue struct {
	ID    string          `json:"id"`
	Value json.RawMessage `json:"value"`
}

// applyWrites restores the results of tasks that finished before the run
// stopped, and returns the interrupts still waiting for an answer.
func (r *run[S]) applyWrites(ws []Write) ([]PendingInterrupt, error) {
	sc := r.g.schema
	var raised []PendingInterrupt
	for _, w := range ws {
		k := slices.IndexFunc(r.tasks, func(t *task[S]) bool { return t.id == w.TaskID })
		if k < 0 {
			continue
		}
		t := r.tasks[k]
		bad := func(err error) error {
			return fmt.Errorf("graph: thread %s: saved %s write of task %s: %w", r.thread, w.Channel, t.label(), err)
		}
		switch w.Channel {
		case ChannelDone:
			t.restored = true
		case ChannelInterrupt:
			var in PendingInterrupt
			if err := json.Unmarshal(w.Value, &in); err != nil {
				return nil, bad(err)
			}
			raised = append(raised, in)
		case ChannelResume:
			var rv resumeValue
			if err := json.Unmarshal(w.Value, &rv); err != nil {
				return nil, bad(err)
			}
			r.resume[rv.ID] = rv.Value
			t.resumes++
		case ChannelGoto:
			if err := json.Unmarshal(w.Value, &t.more().gotos); err != nil {
				return nil, bad(err)
			}
		case ChannelSend:
			if err := json.Unmarshal(w.Value, &t.more().sends); err != nil {
				return nil, bad(err)
			}
		case ChannelOverwrite:
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(w.Value, &obj); err != nil {
				return nil, bad(err)
			}
			ovr := r.state
			t.more().ovr = &ovr
			for name, data := range obj {
				if i, ok := sc.byName[name]; ok {
					if err := sc.decodeField(&ovr, i, data, false); err != nil {
						return nil, bad(err)
					}
					t.ovrMask |= 1 << uint(i)
				}
			}
		default:
			if i, ok := sc.byName[w.Channel]; ok {
				if err := sc.decodeField(&t.upd, i, w.Value, false); err != nil {
					return nil, bad(err)
				}
				t.set |= 1 << uint(i)
			}
		}
	}
	var pending []PendingInterrupt
	for _, in := range raised {
		if _, answered := r.resume[in.ID]; !answered {
			pending = append(pending, in)
		}
	}
	return pending, nil
}
