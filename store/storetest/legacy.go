package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// Legacy is what a fixture of a record written one row per event holds
// (see RunLegacy): its user's three runs, and each run's events as the
// code that wrote it read them.
type Legacy struct {
	User        string `json:"user"`
	Completed   string `json:"completed"`   // run.started … run.completed, 7 events
	Interrupted string `json:"interrupted"` // waits on an approval, 4 events
	Compactable string `json:"compactable"` // another conversation's, 6 events
	Events      map[string][]struct {
		Seq  int64  `json:"seq"`
		Type string `json:"type"`
		Data string `json:"data"` // as stored, byte for byte
	} `json:"events"`
}

// RunLegacy checks a store opened on a record that older code wrote one
// row per event, described by golden (a Legacy): every run reads as it
// did from any Last-Event-ID, a page of any size at a time; the
// interrupted run resumes, its new events numbered on from the old and
// read with them; and compaction keeps of the old rows and the new what
// it always kept.
func RunLegacy(t *testing.T, s store.Store, golden []byte) {
	ctx := t.Context()
	var l Legacy
	if err := json.Unmarshal(golden, &l); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for id, evs := range l.Events {
		for _, e := range evs {
			want[id] = append(want[id], fmt.Sprintf("%d %s %s", e.Seq, e.Type, e.Data))
		}
	}
	replays := func(id string) {
		t.Helper()
		for after := range int64(len(want[id])) + 1 {
			for _, limit := range []int{1, 2, store.MaxEventLimit} {
				var got []string
				for _, e := range allEvents(t, s, l.User, id, after, limit) {
					got = append(got, fmt.Sprintf("%d %s %s", e.Seq, e.Type, e.Data))
				}
				if w := want[id][after:]; !slices.Equal(got, w) {
					t.Errorf("run %s after %d by pages of %d:\n got %q\nwant %q", id, after, limit, got, w)
				}
			}
		}
	}
	for _, id := range []string{l.Completed, l.Interrupted, l.Compactable} {
		if len(want[id]) == 0 {
			t.Fatalf("the fixture has no events of run %s", id)
		}
		replays(id)
	}

	r, err := s.ResumeRun(ctx, l.Interrupted, "")
	if err != nil {
		t.Fatal(err)
	}
	ev := func(typ string) store.NewEvent {
		return store.NewEvent{RunID: r.ID, Type: typ, Data: json.RawMessage(`{"type":"` + typ + `"}`)}
	}
	stored := must(s.AppendEvents(ctx, []store.NewEvent{ev(events.TypeApprovalResolved), ev("node.start"), ev("response.chunk")}))(t)
	ended := must(s.EndRun(ctx, r.ID, store.RunEnd{Status: store.RunCompleted}, []store.NewEvent{ev(events.TypeResponseDone), ev(events.TypeRunCompleted)}))(t)
	for i, e := range append(stored, ended.Events...) {
		if e.Seq != int64(len(l.Events[r.ID])+i+1) {
			t.Errorf("event %d of the resumed run numbered %d, after %d old ones", i, e.Seq, len(l.Events[r.ID]))
		}
		want[r.ID] = append(want[r.ID], fmt.Sprintf("%d %s %s", e.Seq, e.Type, e.Data))
	}
	replays(r.ID)
	p := must(s.ListRuns(ctx, l.User, r.ConversationID, store.RunQuery{EventLimit: 5}))(t)
	for _, run := range p.Runs {
		var got []string
		for _, e := range run.Events {
			got = append(got, fmt.Sprintf("%d %s %s", e.Seq, e.Type, e.Data))
		}
		if w := want[run.ID][:min(5, len(want[run.ID]))]; !slices.Equal(got, w) {
			t.Errorf("ListRuns, run %s's first 5 events: %q, want %q", run.ID, got, w)
		}
	}

	runs, n, err := s.CompactEvents(ctx, time.Now().Add(time.Hour), 10)
	if err != nil || runs != 3 || n != 4+3+6 {
		t.Errorf("CompactEvents = %d runs, %d events, %v; want 3 runs, 13 events", runs, n, err)
	}
	for id, keep := range map[string][]string{
		l.Completed:   {"1:run.started", "6:response.done", "7:run.completed"},
		l.Compactable: {"1:run.started", "5:response.done", "6:run.completed"},
		r.ID:          {"1:run.started", "8:response.done", "9:run.completed"},
	} {
		var got []string
		for _, e := range allEvents(t, s, l.User, id, 0, 2) {
			got = append(got, fmt.Sprintf("%d:%s", e.Seq, e.Type))
		}
		if !slices.Equal(got, keep) {
			t.Errorf("run %s compacted: %v, want %v", id, got, keep)
		}
	}
}
