package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

func testEventsVerbatim(t *testing.T, s Record) {
	ctx := t.Context()
	r := startRun(t, s, newConversation(t, s, alice), "hi")
	for i, tc := range []struct{ in, want string }{
		{`{"type":"run.started","request_id":"r"}`, `{"seq":1,"type":"run.started","request_id":"r"}`},
		{`{}`, `{"seq":2}`},
		{`  {"type":"x" , "nested":{"a":[1,2.50,"\u00e9\n"]},"big":12345678901234567890}  `,
			`{"seq":3,"type":"x" , "nested":{"a":[1,2.50,"\u00e9\n"]},"big":12345678901234567890}`},
		{`{"content":"Ünïcode ✓ 🚀 <b>&amp;</b>"}`, `{"seq":4,"content":"Ünïcode ✓ 🚀 <b>&amp;</b>"}`},
	} {
		e := must(s.AppendEvent(ctx, store.NewEvent{RunID: r.ID, Type: fmt.Sprint("t", i), Data: json.RawMessage(tc.in)}))(t)
		if string(e.Data) != tc.want || e.Seq != int64(i+1) || e.RunID != r.ID || e.Type != fmt.Sprint("t", i) {
			t.Errorf("AppendEvent(%s) = seq %d, data %s; want seq %d, data %s", tc.in, e.Seq, e.Data, i+1, tc.want)
		}
		utc(t, "event", e.CreatedAt)
		stored := must(s.EventsAfter(ctx, alice, r.ID, int64(i), 0))(t)
		if len(stored) != 1 || !reflect.DeepEqual(stored[0], e) {
			t.Errorf("stored %+v\nwant %+v, byte for byte", stored, e)
		}
		// encoding/json compacts what MarshalJSON returns, so compare values.
		var got, want any
		out, err := json.Marshal(e)
		if err == nil {
			err = errors.Join(json.Unmarshal(out, &got), json.Unmarshal([]byte(tc.want), &want))
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("json.Marshal(event) = %s, %v; want the data, %s", out, err, tc.want)
		}
	}
	if got := must(s.GetRun(ctx, alice, r.ID))(t); got.LastSeq != 4 {
		t.Errorf("LastSeq = %d, want 4", got.LastSeq)
	}
}

func testEventsAfter(t *testing.T, s Record) {
	ctx := t.Context()
	r := startRun(t, s, newConversation(t, s, alice), "hi")
	if got := must(s.EventsAfter(ctx, alice, r.ID, 0, 0))(t); got == nil || len(got) != 0 {
		t.Errorf("events of a quiet run = %#v, want empty and non-nil", got)
	}
	var all []store.Event
	for range 6 {
		all = append(all, appendEvent(t, s, r, "node.start"))
	}
	// Another run's events are its own, numbered from 1.
	r2 := startRun(t, s, newConversation(t, s, alice), "other")
	if e := appendEvent(t, s, r2, "run.started"); e.Seq != 1 {
		t.Errorf("first event of another run: seq %d, want 1", e.Seq)
	}
	for _, after := range []int64{0, 1, 4, 6, 7, 100} {
		want := all[min(after, 6):]
		got := must(s.EventsAfter(ctx, alice, r.ID, after, 0))(t)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("EventsAfter(%d) = %d events %v, want %d", after, len(got), seqs(got), len(want))
		}
		// Pages of two: every event once, in order, the last page short.
		if got := allEvents(t, s, alice, r.ID, after, 2); !reflect.DeepEqual(got, want) {
			t.Errorf("EventsAfter(%d) by pages of 2 = %v, want %v", after, seqs(got), seqs(want))
		}
		if got := must(s.EventsAfter(ctx, alice, r.ID, after, 4))(t); len(got) != min(4, len(want)) || (len(got) > 0 && got[0].Seq != after+1) {
			t.Errorf("EventsAfter(%d, limit 4) = %v, want the first 4 of %v", after, seqs(got), seqs(want))
		}
	}
}

// testEventsInBatches: events stored by appends of several, and by an
// end with several, read back one by one from any number, a page of any
// size at a time, and as a conversation's first events of any count, as
// if each had been stored alone.
func testEventsInBatches(t *testing.T, s Record) {
	ctx := t.Context()
	r := startRun(t, s, newConversation(t, s, alice), "hi")
	var all []store.Event
	for i, size := range []int{1, 3, 5, 1, 2} {
		batch := make([]store.NewEvent, size)
		for j := range batch {
			batch[j] = store.NewEvent{RunID: r.ID, Type: fmt.Sprint("t", i), Data: json.RawMessage(fmt.Sprintf(`{"batch":%d,"i":%d}`, i, j))}
		}
		all = append(all, must(s.AppendEvents(ctx, batch))(t)...)
	}
	end := []store.NewEvent{
		{RunID: r.ID, Type: events.TypeResponseDone, Data: json.RawMessage(`{"text":"done"}`)},
		{RunID: r.ID, Type: events.TypeRunCompleted, Data: json.RawMessage(`{}`)},
	}
	all = append(all, must(s.EndRun(ctx, r.ID, store.RunEnd{Status: store.RunCompleted}, end))(t).Events...)
	if !slices.Equal(seqs(all), seqRange(int64(len(all)))) {
		t.Fatalf("appended in batches: %v", seqs(all))
	}
	for after := range int64(len(all)) + 2 {
		want := all[min(after, int64(len(all))):]
		for _, limit := range []int{1, 2, 3, store.MaxEventLimit} {
			if got := allEvents(t, s, alice, r.ID, after, limit); !reflect.DeepEqual(got, want) {
				t.Errorf("EventsAfter(%d) by pages of %d = %v, want %v", after, limit, seqs(got), seqs(want))
			}
		}
	}
	for _, limit := range []int{1, 2, 3, 4, 9, 10, 11, 12} {
		p := must(s.ListRuns(ctx, alice, r.ConversationID, store.RunQuery{EventLimit: limit}))(t)
		if len(p.Runs) != 1 {
			t.Fatalf("ListRuns = %d runs, want 1", len(p.Runs))
		}
		want := all[:min(limit, len(all))]
		if got := p.Runs[0]; !reflect.DeepEqual(got.Events, want) || got.EventsTruncated != (limit < len(all)) {
			t.Errorf("ListRuns with %d events a run = %v (truncated %t), want %v", limit, seqs(got.Events), got.EventsTruncated, seqs(want))
		}
	}
}

// testEventsAfterLimits: a limit of 0 means the default, more than the
// most allowed means the most, and a negative one is refused.
func testEventsAfterLimits(t *testing.T, s Record) {
	ctx := t.Context()
	r := startRun(t, s, newConversation(t, s, alice), "long")
	batch := make([]store.NewEvent, store.MaxEventLimit+1)
	for i := range batch {
		batch[i] = store.NewEvent{RunID: r.ID, Type: "tool.progress", Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
	}
	all := must(s.AppendEvents(ctx, batch))(t)
	for _, tc := range []struct {
		after int64
		limit int
		want  []store.Event
	}{
		{0, 0, all[:store.DefaultEventLimit]},
		{0, store.MaxEventLimit * 10, all[:store.MaxEventLimit]},
		{10, 1, all[10:11]},
		{int64(len(all)) - 1, store.MaxEventLimit, all[len(all)-1:]},
		{int64(len(all)), 1, []store.Event{}},
	} {
		if got := must(s.EventsAfter(ctx, alice, r.ID, tc.after, tc.limit))(t); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("EventsAfter(%d, limit %d) = %d events from %v, want %d", tc.after, tc.limit, len(got), seqs(got[:min(len(got), 1)]), len(tc.want))
		}
	}
	_, err := s.EventsAfter(ctx, alice, r.ID, 0, -1)
	wantErr(t, "EventsAfter with a negative limit", err, store.ErrInvalid)
	_, err = s.EventsAfter(ctx, alice, "no-such-run", 0, -1)
	if err == nil {
		t.Error("EventsAfter of an unknown run with a negative limit succeeded")
	}
}

func seqs(es []store.Event) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

// testEventSeqConcurrent: writers appending to one run at once get every
// number from 1 once, and each event's data carries its own number.
func testEventSeqConcurrent(t *testing.T, s Record) {
	ctx := t.Context()
	const writers, each = 8, 50
	r := startRun(t, s, newConversation(t, s, alice), "busy")
	r2 := startRun(t, s, newConversation(t, s, alice), "also busy")
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got = map[int64]store.Event{}
	)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				run := r
				if i%10 == 9 {
					run = r2 // interleave a second run
				}
				data := fmt.Sprintf(`{"type":"tool.progress","writer":%d,"i":%d}`, w, i)
				e, err := s.AppendEvent(ctx, store.NewEvent{RunID: run.ID, Type: "tool.progress", Data: json.RawMessage(data)})
				if err != nil {
					t.Errorf("writer %d append %d: %v", w, i, err)
					return
				}
				if want := fmt.Sprintf(`{"seq":%d,"type":"tool.progress","writer":%d,"i":%d}`, e.Seq, w, i); string(e.Data) != want {
					t.Errorf("data %s, want %s", e.Data, want)
				}
				if run.ID == r.ID {
					mu.Lock()
					if prev, dup := got[e.Seq]; dup {
						t.Errorf("seq %d given twice: %s and %s", e.Seq, prev.Data, e.Data)
					}
					got[e.Seq] = e
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	const n = writers * each * 9 / 10
	stored := allEvents(t, s, alice, r.ID, 0, store.MaxEventLimit)
	if len(stored) != n || len(got) != n {
		t.Fatalf("%d events stored, %d returned; want %d", len(stored), len(got), n)
	}
	for i, e := range stored {
		if e.Seq != int64(i+1) {
			t.Fatalf("stored seqs %v...: want 1..%d without gaps", seqs(stored[:i+1]), n)
		}
		if !reflect.DeepEqual(e, got[e.Seq]) {
			t.Errorf("stored %+v, want %+v as returned", e, got[e.Seq])
		}
	}
	other := must(s.EventsAfter(ctx, alice, r2.ID, 0, 0))(t)
	if want := int64(writers * each / 10); int64(len(other)) != want || !slices.Equal(seqs(other), seqRange(want)) {
		t.Errorf("second run: seqs %v, want 1..%d", seqs(other), want)
	}
	if got := must(s.GetRun(ctx, alice, r.ID))(t); got.LastSeq != n {
		t.Errorf("LastSeq = %d, want %d", got.LastSeq, n)
	}
}

func seqRange(n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// testAppendEvents: a batch takes consecutive numbers after the run's
// events, in its order, each data carrying its own; concurrent batches
// and single appends never interleave inside a batch; a batch that cannot
// be stored whole stores nothing.
func testAppendEvents(t *testing.T, s Record) {
	ctx := t.Context()
	r := startRun(t, s, newConversation(t, s, alice), "batch")
	appendEvent(t, s, r, "run.started")
	batch := func(n int, tag string) []store.NewEvent {
		out := make([]store.NewEvent, n)
		for i := range out {
			out[i] = store.NewEvent{RunID: r.ID, Type: "node.start", Data: json.RawMessage(fmt.Sprintf(`{"tag":%q,"i":%d}`, tag, i))}
		}
		return out
	}
	got := must(s.AppendEvents(ctx, batch(3, "a")))(t)
	for i, e := range got {
		want := fmt.Sprintf(`{"seq":%d,"tag":"a","i":%d}`, i+2, i)
		if e.Seq != int64(i+2) || string(e.Data) != want || e.RunID != r.ID || e.Type != "node.start" {
			t.Errorf("event %d = seq %d data %s, want seq %d data %s", i, e.Seq, e.Data, i+2, want)
		}
	}
	if stored := must(s.EventsAfter(ctx, alice, r.ID, 1, 0))(t); !reflect.DeepEqual(stored, got) {
		t.Errorf("stored %+v\nwant %+v as returned", stored, got)
	}

	// Nothing of a batch that fails is stored.
	bad := batch(3, "bad")
	bad[1].Data = json.RawMessage(`[1]`)
	_, err := s.AppendEvents(ctx, bad)
	wantErr(t, "a batch with an invalid event", err, store.ErrInvalid)
	other := startRun(t, s, newConversation(t, s, alice), "other")
	mixed := batch(2, "mixed")
	mixed[1].RunID = other.ID
	_, err = s.AppendEvents(ctx, mixed)
	wantErr(t, "a batch of two runs", err, store.ErrInvalid)
	_, err = s.AppendEvents(ctx, nil)
	wantErr(t, "an empty batch", err, store.ErrInvalid)
	unknown := batch(2, "unknown")
	for i := range unknown {
		unknown[i].RunID = "no-such-run"
	}
	_, err = s.AppendEvents(ctx, unknown)
	wantErr(t, "a batch of an unknown run", err, store.ErrNotFound)
	if last := must(s.GetRun(ctx, alice, r.ID))(t).LastSeq; last != 4 {
		t.Fatalf("LastSeq after failed batches = %d, want 4", last)
	}

	// Concurrent batches and single appends: each batch stays contiguous
	// and in order.
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for j := range 10 {
				var err error
				if w%2 == 0 {
					_, err = s.AppendEvents(ctx, batch(4, fmt.Sprintf("w%d.%d", w, j)))
				} else {
					_, err = s.AppendEvent(ctx, batch(1, fmt.Sprintf("w%d.%d", w, j))[0])
				}
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	stored := allEvents(t, s, alice, r.ID, 4, store.MaxEventLimit)
	if want := 3*10*4 + 3*10; len(stored) != want {
		t.Fatalf("%d events, want %d", len(stored), want)
	}
	var cur struct {
		Tag string `json:"tag"`
		I   int    `json:"i"`
	}
	for k, e := range stored {
		if e.Seq != int64(k+5) {
			t.Fatalf("seq %d at %d, want %d: gap or duplicate", e.Seq, k, k+5)
		}
		prev := cur
		if err := json.Unmarshal(e.Data, &cur); err != nil {
			t.Fatal(err)
		}
		if cur.I > 0 && (prev.Tag != cur.Tag || prev.I != cur.I-1) {
			t.Fatalf("event %s follows %+v: a batch was split", e.Data, prev)
		}
	}
}

// testFencing: appends and ends fenced with an owner succeed for the
// run's owner only; another owner gets ErrNotOwner and changes nothing.
func testFencing(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	r := must(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "go", Owner: "p1"}))(t)
	ev := func(owner string) store.NewEvent {
		return store.NewEvent{RunID: r.ID, Type: "node.start", Data: json.RawMessage(`{"node":"x"}`), Owner: owner}
	}
	must(s.AppendEvents(ctx, []store.NewEvent{ev("p1"), ev("p1")}))(t)
	must(s.AppendEvent(ctx, ev("")))(t) // unfenced
	_, err := s.AppendEvents(ctx, []store.NewEvent{ev("p2")})
	wantErr(t, "an append fenced by another owner", err, store.ErrNotOwner)
	_, err = s.AppendEvents(ctx, []store.NewEvent{ev("p1"), ev("p2")})
	wantErr(t, "a batch of two owners", err, store.ErrInvalid)
	unknown := ev("p1")
	unknown.RunID = "no-such-run"
	_, err = s.AppendEvent(ctx, unknown)
	wantErr(t, "a fenced append to an unknown run", err, store.ErrNotFound)
	if got := must(s.GetRun(ctx, alice, r.ID))(t); got.LastSeq != 3 {
		t.Fatalf("LastSeq = %d, want 3: a refused append stored something", got.LastSeq)
	}
	_, err = s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunCompleted, Owner: "p2"})
	wantErr(t, "an end fenced by another owner", err, store.ErrNotOwner)
	if got := must(s.GetRun(ctx, alice, r.ID))(t); got.Status != store.RunRunning {
		t.Fatalf("status %s after a refused end", got.Status)
	}
	if got := must(s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunCompleted, Owner: "p1"}))(t); got.Status != store.RunCompleted {
		t.Errorf("status %s, want completed", got.Status)
	}
	_, err = s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunFailed, Owner: "p1"})
	wantErr(t, "a fenced end of an ended run", err, store.ErrConflict)
}

// testEndRun: the end and the last events commit together; a refused
// end stores neither.
func testEndRun(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	r := must(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "go", Owner: "p1"}))(t)
	ev := func(typ, owner string) store.NewEvent {
		return store.NewEvent{RunID: r.ID, Type: typ, Data: json.RawMessage(`{"x":1}`), Owner: owner}
	}
	must(s.AppendEvent(ctx, ev("node.start", "p1")))(t)
	a := newApproval(t, s, r, "calc")
	for _, bad := range []struct {
		what string
		end  store.RunEnd
		evs  []store.NewEvent
		want error
	}{
		{"another owner", store.RunEnd{Status: store.RunCompleted, Owner: "p2"}, []store.NewEvent{ev("run.completed", "p2")}, store.ErrNotOwner},
		{"events of another owner", store.RunEnd{Status: store.RunCompleted, Owner: "p1"}, []store.NewEvent{ev("run.completed", "p2")}, store.ErrInvalid},
		{"no events", store.RunEnd{Status: store.RunCompleted, Owner: "p1"}, nil, store.ErrInvalid},
		{"a running end", store.RunEnd{Status: store.RunRunning, Owner: "p1"}, []store.NewEvent{ev("run.completed", "p1")}, store.ErrInvalid},
	} {
		_, err := s.EndRun(ctx, r.ID, bad.end, bad.evs)
		wantErr(t, "an end with "+bad.what, err, bad.want)
	}
	_, err := s.EndRun(ctx, "no-such-run", store.RunEnd{Status: store.RunCompleted, Owner: "p1"},
		[]store.NewEvent{{RunID: "no-such-run", Type: "run.completed", Data: json.RawMessage(`{}`), Owner: "p1"}})
	wantErr(t, "an end of an unknown run", err, store.ErrNotFound)
	_, err = s.FinishRun(ctx, "no-such-run", store.RunEnd{Status: store.RunCompleted})
	wantErr(t, "a finish of an unknown run", err, store.ErrNotFound)
	if got := must(s.GetRun(ctx, alice, r.ID))(t); got.Status != store.RunRunning || got.LastSeq != 1 {
		t.Fatalf("after refused ends: status %s, last seq %d", got.Status, got.LastSeq)
	}
	got := must(s.EndRun(ctx, r.ID, store.RunEnd{Status: store.RunCompleted, Usage: events.Usage{TotalTokens: 7}, Owner: "p1"},
		[]store.NewEvent{ev("response.done", "p1"), ev("run.completed", "p1")}))(t).Events
	if len(got) != 2 || got[0].Seq != 2 || got[1].Seq != 3 || got[1].Type != "run.completed" {
		t.Fatalf("stored %+v", got)
	}
	stored := allEvents(t, s, alice, r.ID, 0, 10)
	if len(stored) != 3 || string(stored[2].Data) != string(got[1].Data) {
		t.Fatalf("events %+v", stored)
	}
	run := must(s.GetRun(ctx, alice, r.ID))(t)
	if run.Status != store.RunCompleted || run.Usage.TotalTokens != 7 || run.CompletedAt == nil {
		t.Errorf("run %+v", run)
	}
	if h := must(s.GetHumanRequest(ctx, events.PendingApproval, alice, a.ID))(t); h.Status != store.HumanExpired {
		t.Errorf("approval %s after a final end", h.Status)
	}
	_, err = s.EndRun(ctx, r.ID, store.RunEnd{Status: store.RunFailed, Owner: "p1"}, []store.NewEvent{ev("run.failed", "p1")})
	wantErr(t, "an end of an ended run", err, store.ErrConflict)
	if got := must(s.GetRun(ctx, alice, r.ID))(t); got.LastSeq != 3 {
		t.Errorf("last seq %d after a refused end", got.LastSeq)
	}
}

// compactableRun is a run of a new conversation of alice's with the
// events a turn has, its last (the end, when end is set) stored with its
// end: run.started, node.start, tool.start, response.chunk,
// response.done, then run.completed.
func compactableRun(t *testing.T, s store.Store, end bool) store.Run {
	t.Helper()
	ctx := t.Context()
	c := newConversation(t, s, alice)
	r := must(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "go"}))(t)
	var evs []store.NewEvent
	for _, typ := range []string{events.TypeRunStarted, "node.start", "tool.start", "response.chunk", events.TypeResponseDone, events.TypeRunCompleted} {
		evs = append(evs, store.NewEvent{RunID: r.ID, Type: typ, Data: json.RawMessage(`{"type":"` + typ + `"}`)})
	}
	if end {
		must(s.EndRun(ctx, r.ID, store.RunEnd{Status: store.RunCompleted}, evs))(t)
	} else {
		must(s.AppendEvents(ctx, evs[:len(evs)-1]))(t)
	}
	return r
}

// eventTypes returns the run's events as "seq:type" strings.
func eventTypes(t *testing.T, s store.Store, runID string) []string {
	t.Helper()
	var out []string
	for _, e := range allEvents(t, s, alice, runID, 0, 100) {
		out = append(out, fmt.Sprintf("%d:%s", e.Seq, e.Type))
	}
	return out
}

// testCompactEvents: compaction keeps of a run that ended before the
// cut its start, its answer and its end, under their numbers; it leaves
// runs going on, waiting, or ended after the cut alone, does each run
// once, and a limit bounds each call.
func testCompactEvents(t *testing.T, s Record) {
	ctx := t.Context()
	done := compactableRun(t, s, true)
	going := compactableRun(t, s, false)
	waiting := compactableRun(t, s, false)
	must(s.FinishRun(ctx, waiting.ID, store.RunEnd{Status: store.RunInterrupted, Reason: events.PendingApproval}))(t)
	whole := eventTypes(t, s, going.ID)
	compact := func(before time.Time, limit int) (int, int) {
		t.Helper()
		runs, n, err := s.CompactEvents(ctx, before, limit)
		if err != nil {
			t.Fatal(err)
		}
		return runs, n
	}

	_, _, err := s.CompactEvents(ctx, time.Now().Add(time.Second), 0)
	wantErr(t, "CompactEvents with no limit", err, store.ErrInvalid)
	if runs, n := compact(time.Now().Add(-time.Hour), 10); runs != 0 || n != 0 {
		t.Errorf("compacting runs that ended an hour ago: %d runs, %d events, want none", runs, n)
	}
	if runs, n := compact(time.Now().Add(time.Second), 10); runs != 1 || n != 3 {
		t.Errorf("CompactEvents = %d runs, %d events, want 1 run, 3 events", runs, n)
	}
	if got, want := eventTypes(t, s, done.ID), []string{"1:run.started", "5:response.done", "6:run.completed"}; !slices.Equal(got, want) {
		t.Errorf("a compacted run's events = %v, want %v", got, want)
	}
	if p := must(s.ListRuns(ctx, alice, done.ConversationID, store.RunQuery{}))(t); len(p.Runs) != 1 || len(p.Runs[0].Events) != 3 || p.Runs[0].EventsTruncated {
		t.Errorf("ListRuns of the compacted run: %+v", p.Runs)
	}
	// A page that falls in the gap compaction left still reads on.
	for _, limit := range []int{1, 2} {
		if got := seqs(allEvents(t, s, alice, done.ID, 0, limit)); !slices.Equal(got, []int64{1, 5, 6}) {
			t.Errorf("the compacted run by pages of %d = %v, want [1 5 6]", limit, got)
		}
	}
	for _, r := range []store.Run{going, waiting} {
		if got := eventTypes(t, s, r.ID); !slices.Equal(got, whole) {
			t.Errorf("the events of a %s run = %v, want them all", must(s.GetRun(ctx, alice, r.ID))(t).Status, got)
		}
	}
	if runs, n := compact(time.Now().Add(time.Second), 10); runs != 0 || n != 0 {
		t.Errorf("compacting again: %d runs, %d events, want none", runs, n)
	}

	compactableRun(t, s, true)
	compactableRun(t, s, true)
	for i, want := range []int{1, 1, 0} {
		if runs, _ := compact(time.Now().Add(time.Second), 1); runs != want {
			t.Errorf("compaction %d with limit 1: %d runs, want %d", i+1, runs, want)
		}
	}
}

// testEventMessages: a message an event holds (NewEvent.Message, the
// answer response.done shows) is stored with the event, by AppendEvents
// and by EndRun, and nothing of a write that fails is stored.
func testEventMessages(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	r := must(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "go", Owner: "p1"}))(t)
	other := startRun(t, s, newConversation(t, s, alice), "other")
	answer := func(runID, content string) *store.NewMessage {
		return &store.NewMessage{RunID: runID, Role: store.RoleAssistant, Content: content, Citations: json.RawMessage(`[{"n":1}]`)}
	}
	done := func(owner string, m *store.NewMessage) store.NewEvent {
		return store.NewEvent{RunID: r.ID, Type: events.TypeResponseDone, Data: json.RawMessage(`{"content":"x"}`), Owner: owner, Message: m}
	}
	answers := func() []string {
		t.Helper()
		var out []string
		for _, m := range must(s.RunMessages(ctx, alice, r.ID))(t) {
			if m.Role == store.RoleAssistant {
				out = append(out, m.Content)
			}
		}
		return out
	}

	_, err := s.AppendEvents(ctx, []store.NewEvent{done("p1", answer(other.ID, "elsewhere"))})
	wantErr(t, "an event holding another run's message", err, store.ErrInvalid)
	_, err = s.AppendEvents(ctx, []store.NewEvent{done("p1", &store.NewMessage{RunID: r.ID, Role: "system"})})
	wantErr(t, "an event holding a message of no role", err, store.ErrInvalid)
	_, err = s.AppendEvents(ctx, []store.NewEvent{done("p2", answer(r.ID, "not mine"))})
	wantErr(t, "an event of another owner holding a message", err, store.ErrNotOwner)
	if got := answers(); len(got) != 0 {
		t.Fatalf("refused appends stored %q", got)
	}

	stored := must(s.AppendEvents(ctx, []store.NewEvent{{RunID: r.ID, Type: "node.start", Data: json.RawMessage(`{}`), Owner: "p1"},
		done("p1", answer(r.ID, "first"))}))(t)
	if len(stored) != 2 || stored[1].Type != events.TypeResponseDone {
		t.Fatalf("stored %+v", stored)
	}
	msgs := must(s.RunMessages(ctx, alice, r.ID))(t)
	if last := msgs[len(msgs)-1]; last.Content != "first" || last.ConversationID != c.ID || string(last.Citations) != `[{"n":1}]` {
		t.Fatalf("the message stored with its event: %+v", last)
	}

	end := store.RunEnd{Status: store.RunCompleted, Owner: "p1"}
	ended := must(s.EndRun(ctx, r.ID, end, []store.NewEvent{done("p1", answer(r.ID, "second")),
		{RunID: r.ID, Type: events.TypeRunCompleted, Data: json.RawMessage(`{}`), Owner: "p1"}}))(t)
	if len(ended.Events) != 2 || ended.Events[0].Seq != 3 {
		t.Fatalf("ended with %+v", ended.Events)
	}
	_, err = s.EndRun(ctx, r.ID, end, []store.NewEvent{done("p1", answer(r.ID, "third"))})
	wantErr(t, "an end of an ended run holding a message", err, store.ErrConflict)
	if got := answers(); !slices.Equal(got, []string{"first", "second"}) {
		t.Errorf("answers %q, want first and second", got)
	}
	// StartRun and EndRun store their messages by the run they hold,
	// AppendEvents by the run it looks up: each in the run's
	// conversation, as it was given.
	msgs = must(s.RunMessages(ctx, alice, r.ID))(t)
	if first := msgs[0]; first.Role != store.RoleUser || first.Content != "go" || first.ConversationID != c.ID {
		t.Errorf("the run's message stored by StartRun: %+v", first)
	}
	if last := msgs[len(msgs)-1]; last.Content != "second" || last.ConversationID != c.ID || string(last.Citations) != `[{"n":1}]` {
		t.Errorf("the message stored by EndRun: %+v", last)
	}
}
