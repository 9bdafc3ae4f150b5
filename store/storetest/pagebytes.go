package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/store"
)

// testPagesBoundedByBytes: a page of runs or of events stops early once
// what it holds reaches store.PageBytes, with the next cursor as usual,
// and never holds less than one item; paging through still returns
// everything, in order.
func testPagesBoundedByBytes(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	const runs, eventsPerRun = 4, 3
	answer := store.PageBytes * 2 / 5 // a run's answer: 40% of a page
	eventSize := store.PageBytes * 2 / 5
	var (
		wantRuns []string
		wantMsgs []string
		wantEvs  = map[string][]int64{}
	)
	for i := range runs {
		r := startRun(t, s, c, fmt.Sprint("turn ", i))
		for range eventsPerRun {
			data := fmt.Sprintf(`{"type":"response.chunk","content":%q}`, strings.Repeat("x", eventSize))
			e := must(s.AppendEvent(ctx, store.NewEvent{RunID: r.ID, Type: "response.chunk", Data: json.RawMessage(data)}))(t)
			wantEvs[r.ID] = append(wantEvs[r.ID], e.Seq)
		}
		m := must(s.AddMessage(ctx, store.NewMessage{RunID: r.ID, Role: store.RoleAssistant, Content: strings.Repeat("a", answer)}))(t)
		finish(t, s, r.ID, store.RunCompleted, "")
		wantRuns = append(wantRuns, r.ID)
		wantMsgs = append(wantMsgs, m.ID)
	}
	// The biggest single item a page may hold beyond its budget: one
	// run's messages (its transcript is never split).
	largest := answer + len("turn 0")
	var (
		gotRuns, gotMsgs []string
		gotEvs           = map[string][]int64{}
		pages            int
	)
	for q := (store.RunQuery{}); ; {
		pages++
		p := must(s.ListRuns(ctx, alice, c.ID, q))(t)
		if len(p.Runs) == 0 {
			t.Fatalf("page %d holds no run", pages)
		}
		size := 0
		for _, r := range p.Runs {
			gotRuns = append(gotRuns, r.ID)
			size += len(r.UserMessage)
			for _, e := range r.Events {
				size += len(e.Data)
				gotEvs[r.ID] = append(gotEvs[r.ID], e.Seq)
			}
			if r.EventsTruncated {
				var after int64
				if len(r.Events) > 0 {
					after = r.Events[len(r.Events)-1].Seq
				}
				for _, e := range allEvents(t, s, alice, r.ID, after, store.MaxEventLimit) {
					gotEvs[r.ID] = append(gotEvs[r.ID], e.Seq)
				}
			}
		}
		for _, m := range p.Messages {
			if m.Role == store.RoleAssistant {
				gotMsgs = append(gotMsgs, m.ID)
			}
			size += len(m.Content)
		}
		if size > store.PageBytes+largest {
			t.Errorf("page %d holds %d bytes, more than the budget %d and one run's %d", pages, size, store.PageBytes, largest)
		}
		if p.NextCursor == "" {
			break
		}
		q.Cursor = p.NextCursor
	}
	if pages < 2 {
		t.Errorf("the %d runs of %d bytes each came in one page", runs, answer+eventsPerRun*eventSize)
	}
	if !reflect.DeepEqual(gotRuns, wantRuns) || !reflect.DeepEqual(gotMsgs, wantMsgs) || !reflect.DeepEqual(gotEvs, wantEvs) {
		t.Errorf("paged through: runs %v, answers %v, events %v; want %v, %v, %v", gotRuns, gotMsgs, gotEvs, wantRuns, wantMsgs, wantEvs)
	}

	// A page of events stops at the budget too, and never holds none.
	r := wantRuns[0]
	first := must(s.EventsAfter(ctx, alice, r, 0, 0))(t)
	if len(first) == 0 || len(first) == eventsPerRun {
		t.Errorf("EventsAfter: %d of %d events of %d bytes each, want some but not all", len(first), eventsPerRun, eventSize)
	}
	big := strings.Repeat("y", store.PageBytes+10)
	rn := startRun(t, s, c, "one big event")
	e := must(s.AppendEvent(ctx, store.NewEvent{RunID: rn.ID, Type: "response.done",
		Data: json.RawMessage(fmt.Sprintf(`{"type":"response.done","content":%q}`, big))}))(t)
	appendEvent(t, s, rn, "run.completed")
	if got := must(s.EventsAfter(ctx, alice, rn.ID, 0, 0))(t); len(got) != 1 || got[0].Seq != e.Seq {
		t.Errorf("EventsAfter of an event larger than a page: %d events, want it alone", len(got))
	}
}
