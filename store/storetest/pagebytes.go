package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// testPagesBoundedByBytes: a page of runs or of events stops early once
// what it holds reaches store.PageBytes, with the next cursor as usual,
// and never holds less than one item; paging through still returns
// everything, in order.
func testPagesBoundedByBytes(t *testing.T, s Record) {
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

// pagedThrough pages through a list with next (a page and the cursor
// after it, from a cursor) and checks that each page holds at most
// store.PageBytes and one item, as size counts an item, that the items
// (by id) came in more than one page, and that together they are want,
// in order: none lost, none twice.
func pagedThrough[T any](t *testing.T, what string, next func(cursor string) ([]T, string), id func(T) string, size func(T) int, want []string) {
	t.Helper()
	var (
		got     []string
		pages   int
		largest int
	)
	for cursor := ""; ; pages++ {
		items, after := next(cursor)
		if len(items) == 0 {
			t.Fatalf("%s: page %d holds nothing", what, pages+1)
		}
		bytes := 0
		for _, it := range items {
			got = append(got, id(it))
			bytes += size(it)
			largest = max(largest, size(it))
		}
		if bytes > store.PageBytes+largest {
			t.Errorf("%s: page %d holds %d bytes, more than the budget %d and one item's %d", what, pages+1, bytes, store.PageBytes, largest)
		}
		if cursor = after; cursor == "" {
			pages++
			break
		}
	}
	if pages < 2 {
		t.Errorf("%s: %d items of up to %d bytes each came in one page", what, len(want), largest)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: paged through %v, want %v", what, got, want)
	}
}

// testPendingBoundedByBytes: a page of pending requests stops at
// store.PageBytes, however many its limit allows, and the next cursor
// goes on without losing or repeating one; a request larger than a
// page comes alone.
func testPendingBoundedByBytes(t *testing.T, s Record) {
	ctx := t.Context()
	c, other := newConversation(t, s, alice), newConversation(t, s, alice)
	r, ro := startRun(t, s, c, "write it all"), startRun(t, s, other, "and more")
	large := func(n int) string { return strings.Repeat("z", n) }
	var approvals, elicitations, ofC []string
	for i := range 5 {
		run := r
		if i%2 == 1 {
			run = ro
		}
		a := must(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: run.ID, Kind: events.PendingApproval, Approval: store.Approval{
			Tool: "write", Args: json.RawMessage(fmt.Sprintf(`{"content":%q}`, large(store.PageBytes*2/5)))}}))(t)
		e := must(s.CreateHumanRequest(ctx, store.NewHumanRequest{RunID: run.ID, Kind: events.PendingElicitation, Elicitation: store.Elicitation{
			Message: large(store.PageBytes / 5), Schema: json.RawMessage(fmt.Sprintf(`{"description":%q}`, large(store.PageBytes/5)))}}))(t)
		approvals, elicitations = append(approvals, a.ID), append(elicitations, e.ID)
		if run.ID == r.ID {
			ofC = append(ofC, a.ID)
		}
	}
	id := func(h store.HumanRequest) string { return h.ID }
	size := func(h store.HumanRequest) int {
		return len(h.Approval.Args) + len(h.Elicitation.Message) + len(h.Elicitation.Schema)
	}
	pages := func(kind events.PendingKind, conversationID string) func(string) ([]store.HumanRequest, string) {
		return func(cursor string) ([]store.HumanRequest, string) {
			p := must(s.PendingHumanRequests(ctx, kind, alice, conversationID, store.Page{Limit: store.MaxLimit, Cursor: cursor}))(t)
			return p.Requests, p.NextCursor
		}
	}
	pagedThrough(t, "pending approvals", pages(events.PendingApproval, ""), id, size, approvals)
	pagedThrough(t, "pending elicitations", pages(events.PendingElicitation, ""), id, size, elicitations)
	pagedThrough(t, "pending approvals of a conversation", pages(events.PendingApproval, c.ID), id, size, ofC)

	// The count still bounds a page of small ones.
	if p := must(s.PendingHumanRequests(ctx, events.PendingApproval, alice, "", store.Page{Limit: 1}))(t); len(p.Requests) != 1 || p.NextCursor == "" {
		t.Errorf("a page of limit 1: %d requests, next %q; want one and a cursor", len(p.Requests), p.NextCursor)
	}
	// One larger than a page comes alone, and then the rest.
	r3 := startRun(t, s, newConversation(t, s, alice), "huge")
	huge := must(s.CreateHumanRequest(ctx, store.NewHumanRequest{ID: "key-huge", RunID: r3.ID, Kind: events.PendingUncertainCall, UncertainCall: store.UncertainCall{Tool: "write", Args: json.RawMessage(fmt.Sprintf(`{"content":%q}`, large(store.PageBytes+10)))}}))(t)
	small := must(s.CreateHumanRequest(ctx, store.NewHumanRequest{ID: "key-small", RunID: r3.ID, Kind: events.PendingUncertainCall, UncertainCall: store.UncertainCall{Tool: "write"}}))(t)
	first := must(s.PendingHumanRequests(ctx, events.PendingUncertainCall, alice, "", store.Page{}))(t)
	if len(first.Requests) != 1 || first.Requests[0].ID != huge.ID || first.NextCursor == "" {
		t.Fatalf("a request larger than a page: %d requests, next %q; want it alone and a cursor", len(first.Requests), first.NextCursor)
	}
	rest := must(s.PendingHumanRequests(ctx, events.PendingUncertainCall, alice, "", store.Page{Cursor: first.NextCursor}))(t)
	if len(rest.Requests) != 1 || rest.Requests[0].ID != small.ID || rest.NextCursor != "" {
		t.Errorf("after it: %+v; want %s, the last", rest, small.ID)
	}

	wantErrs(t, "", map[string]error{
		"PendingHumanRequests with a negative limit": second(s.PendingHumanRequests(ctx, events.PendingApproval, alice, "", store.Page{Limit: -1})),
		"PendingHumanRequests with a bad cursor":     second(s.PendingHumanRequests(ctx, events.PendingApproval, alice, "", store.Page{Cursor: "nonsense"})),
	}, store.ErrInvalid)
}

// testDocumentsBoundedByBytes: a page of documents stops at
// store.PageBytes, and the next cursor goes on without losing or
// repeating one.
func testDocumentsBoundedByBytes(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	var want []string
	for i := range 5 {
		d := newDocument(t, s, c, fmt.Sprint("part-", i, ".md"))
		must(s.FinishDocument(ctx, d.ID, strings.Repeat("s", store.PageBytes*2/5)))(t)
		want = append(want, d.ID)
	}
	pagedThrough(t, "documents", func(cursor string) ([]store.Document, string) {
		p := must(s.ListDocuments(ctx, alice, c.ID, store.Page{Limit: store.MaxLimit, Cursor: cursor}))(t)
		return p.Documents, p.NextCursor
	}, func(d store.Document) string { return d.ID }, func(d store.Document) int { return len(d.Summary) }, want)
	if p := must(s.ListDocuments(ctx, alice, c.ID, store.Page{Limit: 1}))(t); len(p.Documents) != 1 || p.Documents[0].ID != want[0] || p.NextCursor == "" {
		t.Errorf("a page of limit 1: %d documents, next %q; want the first and a cursor", len(p.Documents), p.NextCursor)
	}
	wantErrs(t, "", map[string]error{
		"ListDocuments with a negative limit": second(s.ListDocuments(ctx, alice, c.ID, store.Page{Limit: -1})),
		"ListDocuments with a bad cursor":     second(s.ListDocuments(ctx, alice, c.ID, store.Page{Cursor: "nonsense"})),
	}, store.ErrInvalid)
}
