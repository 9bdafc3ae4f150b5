package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/trellis-ai/trellis/api/store"
)

func testEventsVerbatim(t *testing.T, s store.Store) {
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
		stored := must(s.EventsAfter(ctx, alice, r.ID, int64(i)))(t)
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

func testEventsAfter(t *testing.T, s store.Store) {
	ctx := t.Context()
	r := startRun(t, s, newConversation(t, s, alice), "hi")
	if got := must(s.EventsAfter(ctx, alice, r.ID, 0))(t); got == nil || len(got) != 0 {
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
		got := must(s.EventsAfter(ctx, alice, r.ID, after))(t)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("EventsAfter(%d) = %d events %v, want %d", after, len(got), seqs(got), len(want))
		}
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
func testEventSeqConcurrent(t *testing.T, s store.Store) {
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
	stored := must(s.EventsAfter(ctx, alice, r.ID, 0))(t)
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
	other := must(s.EventsAfter(ctx, alice, r2.ID, 0))(t)
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
