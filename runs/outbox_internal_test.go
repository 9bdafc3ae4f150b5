package runs

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// heldEvents is a store.Events whose AppendEvents waits for release, and
// records each batch.
type heldEvents struct {
	store.Events
	entered chan struct{}
	release chan struct{}
	batches [][]store.NewEvent
}

func (h *heldEvents) AppendEvents(ctx context.Context, evs []store.NewEvent) ([]store.Event, error) {
	h.entered <- struct{}{}
	<-h.release
	h.batches = append(h.batches, evs)
	out := make([]store.Event, len(evs))
	for i, e := range evs {
		out[i] = store.Event{Type: e.Type, Data: e.Data}
	}
	return out, nil
}

// streamedHub is a hub with a subscriber that streams the run's events,
// so its outbox writes each batch as soon as it can.
func streamedHub() *hub {
	h := newHub("run")
	h.add(64, false, false)
	return h
}

// queue puts p on o with its data encoded as JSON, or without (as
// emitAs queues the root agent's chunks) when encoded is false.
func queue(t *testing.T, o *outbox, p events.Payload, encoded bool) {
	t.Helper()
	var data []byte
	if encoded {
		data, _ = json.Marshal(p)
	}
	if err := o.put(store.NewEvent{RunID: "run", Type: p.EventType(), Data: data}, p); err != nil {
		t.Fatal(err)
	}
}

func TestOutboxJoinsChunksThatWaitTogether(t *testing.T) {
	st := &heldEvents{entered: make(chan struct{}), release: make(chan struct{})}
	encode := func(p events.Payload) ([]byte, error) { return json.Marshal(p) }
	o := newOutbox(t.Context(), st, streamedHub(), encode, func(err error) { t.Error(err) })
	// As emitAs queues them: the root agent's chunks unencoded, the rest
	// (and a sub-agent's chunk, whose envelope names it) encoded.
	put := func(p events.Payload, encoded bool) { queue(t, o, p, encoded) }
	put(&events.ResponseChunk{Content: "one"}, false)
	<-st.entered // the first batch is being written: the next wait
	put(&events.ResponseChunk{Content: " two"}, false)
	put(&events.ResponseChunk{Content: " three"}, false)
	put(&events.NodeEnd{Node: "write"}, true)
	put(&events.ResponseChunk{Content: " four"}, false)
	put(&events.ResponseChunk{Content: " sub"}, true)
	put(&events.ResponseChunk{Content: " five"}, false)
	put(&events.ReasoningChunk{Node: "write", Content: "Say"}, false)
	put(&events.ReasoningChunk{Node: "write", Content: " it"}, false)
	put(&events.ReasoningChunk{Node: "reflect", Content: "Other"}, false)
	put(&events.ResponseChunk{Content: " six"}, false)
	st.release <- struct{}{}
	<-st.entered
	st.release <- struct{}{}
	if err := o.drain(); err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, b := range st.batches {
		var row []string
		for _, e := range b {
			row = append(row, e.Type+" "+string(e.Data))
		}
		got = append(got, row)
	}
	want := [][]string{
		{`response.chunk {"content":"one"}`},
		{`response.chunk {"content":" two three"}`, `node.end {"node":"write","duration_ms":0}`, `response.chunk {"content":" four"}`,
			`response.chunk {"content":" sub"}`, `response.chunk {"content":" five"}`,
			`reasoning.chunk {"node":"write","content":"Say it"}`, `reasoning.chunk {"node":"reflect","content":"Other"}`,
			`response.chunk {"content":" six"}`},
	}
	if len(got) != len(want) || len(got[1]) != len(want[1]) || got[0][0] != want[0][0] {
		t.Fatalf("batches %q, want %q", got, want)
	}
	for i := range want[1] {
		if got[1][i] != want[1][i] {
			t.Errorf("batch 2 event %d: %s, want %s", i, got[1][i], want[1][i])
		}
	}
}

func TestOutboxHoldReturnsWhatWaitsBehindTheBatch(t *testing.T) {
	st := &heldEvents{entered: make(chan struct{}), release: make(chan struct{})}
	encode := func(p events.Payload) ([]byte, error) { return json.Marshal(p) }
	o := newOutbox(t.Context(), st, streamedHub(), encode, func(err error) { t.Error(err) })
	put := func(node string) {
		p := &events.NodeStart{Node: node}
		data, _ := encode(p)
		if err := o.put(store.NewEvent{RunID: "run", Type: p.EventType(), Data: data}, p); err != nil {
			t.Fatal(err)
		}
	}
	put("a")
	<-st.entered // a is being written
	put("b")
	put("c")
	type held struct {
		rest []store.NewEvent
		err  error
	}
	done := make(chan held, 1)
	go func() {
		rest, _, err := o.hold()
		done <- held{rest, err}
	}()
	for held := false; !held; { // hold waits for a's batch
		o.mu.Lock()
		held = o.held
		o.mu.Unlock()
		runtime.Gosched()
	}
	st.release <- struct{}{} // a's batch ends; hold takes b and c, unwritten
	h := <-done
	if h.err != nil || len(h.rest) != 2 || string(h.rest[0].Data) != `{"node":"b"}` || len(st.batches) != 1 {
		t.Fatalf("held %+v after %d batches", h, len(st.batches))
	}
	// Released, they are written as put's are.
	o.release(h.rest, []events.Payload{&events.NodeStart{Node: "b"}, &events.NodeStart{Node: "c"}})
	<-st.entered
	st.release <- struct{}{}
	if err := o.drain(); err != nil || len(st.batches) != 2 || len(st.batches[1]) != 2 {
		t.Fatalf("after release: %v, batches %v", err, st.batches)
	}
}

// syncOutbox is the outbox of a run whose only subscriber, a sync chat's
// caller, reads its events at the end: they wait (an hour) to be written
// together.
func syncOutbox(t *testing.T, st store.Events) *outbox {
	h := newHub("run")
	h.add(64, false, true)
	o := newOutbox(t.Context(), st, h, func(p events.Payload) ([]byte, error) { return json.Marshal(p) }, func(err error) { t.Error(err) })
	o.delay = time.Hour
	return o
}

// A sync chat's answer streams word by word while nobody streams the
// run: its chunks wait, joined, and hold takes each run of them as one
// event with the whole text.
func TestOutboxHoldTakesTheChunksJoined(t *testing.T) {
	st := &heldEvents{entered: make(chan struct{}, 4), release: make(chan struct{}, 4)}
	o := syncOutbox(t, st)
	put := func(p events.Payload, encoded bool) { queue(t, o, p, encoded) }
	put(&events.NodeStart{Node: "write"}, true)
	put(&events.ResponseChunk{Content: "It"}, false)
	put(&events.ResponseChunk{Content: " is"}, false)
	put(&events.ReasoningChunk{Node: "write", Content: "Say"}, false)
	put(&events.ReasoningChunk{Node: "write", Content: " it"}, false)
	put(&events.ResponseChunk{Content: " 4"}, false)
	put(&events.ResponseChunk{Content: "."}, false)
	rest, typed, err := o.hold()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"node":"write"}`, `{"content":"It is"}`, `{"node":"write","content":"Say it"}`, `{"content":" 4."}`}
	if len(rest) != len(want) || len(typed) != len(want) {
		t.Fatalf("hold took %d events, want %d", len(rest), len(want))
	}
	for i, w := range want {
		if string(rest[i].Data) != w {
			t.Errorf("event %d: %s, want %s", i, rest[i].Data, w)
		}
		if data, _ := json.Marshal(typed[i]); string(data) != w {
			t.Errorf("payload %d: %s, want %s", i, data, w)
		}
	}
}

// While nobody streams the run, its events wait to be written together:
// with the run's end (hold takes them, unwritten), or, drained, in one
// batch.
func TestOutboxLetsEventsWaitWhileNobodyStreams(t *testing.T) {
	st := &heldEvents{entered: make(chan struct{}, 4), release: make(chan struct{}, 4)}
	o := syncOutbox(t, st)
	put := func(o *outbox, node string) { queue(t, o, &events.NodeStart{Node: node}, true) }
	for _, n := range []string{"a", "b", "c"} {
		put(o, n)
	}
	rest, _, err := o.hold()
	if err != nil || len(rest) != 3 || len(st.batches) != 0 {
		t.Fatalf("hold took %d events (%v) after %d batches; want all 3, none written", len(rest), err, len(st.batches))
	}

	o = syncOutbox(t, st)
	for _, n := range []string{"a", "b", "c"} {
		put(o, n)
	}
	st.release <- struct{}{}
	if err := o.drain(); err != nil || len(st.batches) != 1 || len(st.batches[0]) != 3 {
		t.Fatalf("drain: %v, batches %v; want the 3 events in one", err, st.batches)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.due != nil {
		t.Error("a timer outlives drain")
	}
}

// A subscriber that streams, joining, has what waits written at once;
// so does the end of the delay.
func TestOutboxWritesWhatWaitsWhenAStreamJoins(t *testing.T) {
	st := &heldEvents{entered: make(chan struct{}), release: make(chan struct{})}
	encode := func(p events.Payload) ([]byte, error) { return json.Marshal(p) }
	h := newHub("run")
	o := newOutbox(t.Context(), st, h, encode, func(err error) { t.Error(err) })
	o.delay = time.Hour
	h.setWake(o.wake)
	p := &events.NodeStart{Node: "a"}
	data, _ := encode(p)
	if err := o.put(store.NewEvent{RunID: "run", Type: p.EventType(), Data: data}, p); err != nil {
		t.Fatal(err)
	}
	select {
	case <-st.entered:
		t.Fatal("written while nobody streams the run")
	case <-time.After(20 * time.Millisecond):
	}
	sub := h.add(64, false, false)
	<-st.entered // the stream woke the outbox
	st.release <- struct{}{}
	if e := <-sub.ch; e.Type != "node.start" {
		t.Fatalf("the stream got %s", e.Type)
	}

	h.remove(sub)
	o.mu.Lock()
	o.delay = time.Millisecond
	o.mu.Unlock()
	if err := o.put(store.NewEvent{RunID: "run", Type: p.EventType(), Data: data}, p); err != nil {
		t.Fatal(err)
	}
	<-st.entered // the delay ran out
	st.release <- struct{}{}
	if err := o.drain(); err != nil || len(st.batches) != 2 {
		t.Fatalf("drain: %v, batches %v", err, st.batches)
	}
}
