package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

var testRoutes = []store.WebhookRoute{
	{Endpoint: "ops", Types: []string{events.TypeRunFailed, events.TypeApprovalRequired}},
	{Endpoint: "pager", Types: []string{events.TypeRunFailed}},
}

// deliveriesOf returns every delivery of the store, newest first.
func deliveriesOf(t *testing.T, s Record) []store.WebhookDelivery {
	t.Helper()
	var all []store.WebhookDelivery
	for page := (store.Page{}); ; {
		p := must(s.ListWebhookDeliveries(t.Context(), page))(t)
		all = append(all, p.Deliveries...)
		if p.NextCursor == "" {
			return all
		}
		page.Cursor = p.NextCursor
	}
}

func setRoutes(t *testing.T, s Record, routes []store.WebhookRoute) {
	t.Helper()
	if err := s.SetWebhookRoutes(t.Context(), routes); err != nil {
		t.Fatal(err)
	}
}

// failRun ends the run failed, with its run.failed event, and returns
// the events as stored.
func failRun(t *testing.T, s Record, r store.Run) []store.Event {
	t.Helper()
	return must(s.EndRun(t.Context(), r.ID, store.RunEnd{Status: store.RunFailed}, []store.NewEvent{
		{RunID: r.ID, Type: events.TypeRunFailed, Data: eventData(r, events.TypeRunFailed)},
	}))(t).Events
}

func eventData(r store.Run, typ string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":%q,"run_id":%q,"conversation_id":%q,"ts":"2026-11-03T14:05:06Z"}`, typ, r.ID, r.ConversationID))
}

// Each event of a routed type is recorded for each of its endpoints, by
// AppendEvent, AppendEvents and EndRun alike; other events for none.
func testWebhookDeliveriesRecorded(t *testing.T, s Record) {
	ctx := t.Context()
	setRoutes(t, s, testRoutes)
	c := newConversation(t, s, alice)
	r := startRun(t, s, c, "hi")
	appendEvent(t, s, r, events.TypeRunStarted)
	appendEvent(t, s, r, events.TypeApprovalRequired) // seq 2: ops
	must(s.AppendEvents(ctx, []store.NewEvent{
		{RunID: r.ID, Type: events.TypeToolUncertain, Data: eventData(r, events.TypeToolUncertain)},       // 3: nobody's
		{RunID: r.ID, Type: events.TypeApprovalRequired, Data: eventData(r, events.TypeApprovalRequired)}, // 4: ops
	}))(t)
	failRun(t, s, r) // 5: ops, pager

	got := deliveriesOf(t, s)
	type key struct {
		endpoint string
		seq      int64
	}
	var keys []key
	for _, d := range got {
		keys = append(keys, key{d.Endpoint, d.Seq})
		if d.Status != store.WebhookPending || d.Attempts != 0 || d.UserID != alice || d.ConversationID != c.ID || d.RunID != r.ID ||
			d.EventID != store.WebhookEventID(r.ID, d.Seq) || d.DeliveredAt != nil {
			t.Errorf("delivery %+v", d)
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.seq != b.seq {
			return int(a.seq - b.seq)
		}
		return strings.Compare(a.endpoint, b.endpoint)
	})
	want := []key{{"ops", 2}, {"ops", 4}, {"ops", 5}, {"pager", 5}}
	if !slices.Equal(keys, want) {
		t.Errorf("deliveries %v, want %v", keys, want)
	}
	if un := must(s.UnqueuedWebhookDeliveries(ctx, 0))(t); len(un) != 4 || un[0].Seq != 2 {
		t.Errorf("unqueued %+v, want the 4 oldest first", un)
	}

	// Routes replaced: what was recorded stays, new events follow the
	// new routes.
	setRoutes(t, s, nil)
	r2 := startRun(t, s, c, "again")
	failRun(t, s, r2)
	if n := len(deliveriesOf(t, s)); n != 4 {
		t.Errorf("%d deliveries after the routes were removed, want the 4 recorded before", n)
	}
}

func testWebhookRoutesInvalid(t *testing.T, s Record) {
	ctx := t.Context()
	setRoutes(t, s, testRoutes)
	for name, routes := range map[string][]store.WebhookRoute{
		"no endpoint":  {{Types: []string{events.TypeRunFailed}}},
		"unknown type": {{Endpoint: "ops", Types: []string{events.TypeResponseChunk}}},
		"NUL":          {{Endpoint: "o\x00ps", Types: []string{events.TypeRunFailed}}},
	} {
		wantErr(t, name, s.SetWebhookRoutes(ctx, routes), store.ErrInvalid)
	}
	// The routes set before still hold.
	c := newConversation(t, s, alice)
	r := startRun(t, s, c, "hi")
	failRun(t, s, r)
	if n := len(deliveriesOf(t, s)); n != 2 {
		t.Errorf("%d deliveries, want 2: an invalid call changed the routes", n)
	}
}

// A delivery's attempts are counted until one ends it; it can then be
// redelivered, keeping its id and its count.
func testWebhookAttempts(t *testing.T, s Record) {
	ctx := t.Context()
	setRoutes(t, s, testRoutes[1:])
	c := newConversation(t, s, bob)
	r := startRun(t, s, c, "hi")
	evs := failRun(t, s, r)
	un := must(s.UnqueuedWebhookDeliveries(ctx, 10))(t)
	if len(un) != 1 {
		t.Fatalf("unqueued %+v", un)
	}
	id := un[0].ID
	if err := s.MarkWebhookQueued(ctx, []string{id}); err != nil {
		t.Fatal(err)
	}
	if un := must(s.UnqueuedWebhookDeliveries(ctx, 10))(t); len(un) != 0 {
		t.Errorf("unqueued after MarkWebhookQueued: %+v", un)
	}
	d := must(s.GetWebhookDelivery(ctx, id))(t)
	if string(d.Event) != string(evs[0].Data) || d.EventType != events.TypeRunFailed {
		t.Errorf("delivery's event %s %s, want %s", d.EventType, d.Event, evs[0].Data)
	}
	d = must(s.RecordWebhookAttempt(ctx, id, store.WebhookAttempt{Status: 500, Error: "HTTP 500", Outcome: store.WebhookPending}))(t)
	if d.Attempts != 1 || d.LastStatus != 500 || d.LastError != "HTTP 500" || d.Status != store.WebhookPending {
		t.Errorf("after a failed attempt: %+v", d)
	}
	d = must(s.RecordWebhookAttempt(ctx, id, store.WebhookAttempt{Status: 204, Outcome: store.WebhookDelivered}))(t)
	if d.Attempts != 2 || d.LastStatus != 204 || d.LastError != "" || d.Status != store.WebhookDelivered || d.DeliveredAt == nil {
		t.Errorf("after a delivery: %+v", d)
	}
	_, err := s.RecordWebhookAttempt(ctx, id, store.WebhookAttempt{Status: 204, Outcome: store.WebhookDelivered})
	wantErr(t, "an attempt at a delivered delivery", err, store.ErrConflict)
	_, err = s.RecordWebhookAttempt(ctx, id, store.WebhookAttempt{Outcome: "lost"})
	wantErr(t, "an unknown outcome", err, store.ErrInvalid)
	_, err = s.RecordWebhookAttempt(ctx, "nope", store.WebhookAttempt{Outcome: store.WebhookFailed})
	wantErr(t, "an attempt at an unknown delivery", err, store.ErrNotFound)

	d = must(s.RedeliverWebhook(ctx, id))(t)
	if d.ID != id || d.Status != store.WebhookPending || d.Attempts != 2 || d.DeliveredAt != nil {
		t.Errorf("redelivered: %+v", d)
	}
	if un := must(s.UnqueuedWebhookDeliveries(ctx, 10))(t); len(un) != 1 || un[0].ID != id {
		t.Errorf("unqueued after a redelivery: %+v", un)
	}
	_, err = s.RedeliverWebhook(ctx, id)
	wantErr(t, "redelivering a pending delivery", err, store.ErrConflict)
	_, err = s.RedeliverWebhook(ctx, "nope")
	wantErr(t, "redelivering an unknown delivery", err, store.ErrNotFound)
	_, err = s.GetWebhookDelivery(ctx, "nope")
	wantErr(t, "an unknown delivery", err, store.ErrNotFound)
	d = must(s.RecordWebhookAttempt(ctx, id, store.WebhookAttempt{Status: 410, Error: "HTTP 410", Outcome: store.WebhookFailed}))(t)
	if d.Status != store.WebhookFailed || d.Attempts != 3 {
		t.Errorf("after a refusal: %+v", d)
	}
}

func testWebhookDeliveriesPages(t *testing.T, s Record) {
	ctx := t.Context()
	setRoutes(t, s, testRoutes)
	c := newConversation(t, s, alice)
	r := startRun(t, s, c, "hi")
	for range 5 {
		appendEvent(t, s, r, events.TypeApprovalRequired)
	}
	var seqs []int64
	for page := (store.Page{Limit: 2}); ; {
		p := must(s.ListWebhookDeliveries(ctx, page))(t)
		if len(p.Deliveries) > 2 {
			t.Fatalf("a page of limit 2 holds %d", len(p.Deliveries))
		}
		for _, d := range p.Deliveries {
			seqs = append(seqs, d.Seq)
		}
		if p.NextCursor == "" {
			break
		}
		page.Cursor = p.NextCursor
	}
	if !slices.Equal(seqs, []int64{5, 4, 3, 2, 1}) {
		t.Errorf("pages hold seqs %v, want newest first", seqs)
	}
	_, err := s.ListWebhookDeliveries(ctx, store.Page{Cursor: "garbage"})
	wantErr(t, "a cursor ListWebhookDeliveries did not make", err, store.ErrInvalid)
	_, err = s.ListWebhookDeliveries(ctx, store.Page{Limit: -1})
	wantErr(t, "a negative limit", err, store.ErrInvalid)
}

func testWebhookDeliveriesDeleted(t *testing.T, s Record) {
	ctx := t.Context()
	setRoutes(t, s, testRoutes)
	gone, kept := newConversation(t, s, alice), newConversation(t, s, alice)
	for _, c := range []store.Conversation{gone, kept} {
		appendEvent(t, s, startRun(t, s, c, "hi"), events.TypeApprovalRequired)
	}
	if err := s.DeleteConversation(ctx, alice, gone.ID); err != nil {
		t.Fatal(err)
	}
	ds := deliveriesOf(t, s)
	if len(ds) != 1 || ds[0].ConversationID != kept.ID {
		t.Errorf("deliveries after the deletion: %+v, want the kept conversation's one", ds)
	}
}

// testCompactionKeepsEventsToDeliver: compacting a run keeps an event a
// delivery still has to send, and the delivery.
func testCompactionKeepsEventsToDeliver(t *testing.T, s Record) {
	ctx := t.Context()
	setRoutes(t, s, testRoutes)
	r := startRun(t, s, newConversation(t, s, alice), "hi")
	appendEvent(t, s, r, events.TypeRunStarted)
	appendEvent(t, s, r, events.TypeApprovalRequired) // seq 2: ops
	appendEvent(t, s, r, events.TypeApprovalResolved) // 3: nobody's
	failRun(t, s, r)                                  // 4: ops, pager
	if runs, n, err := s.CompactEvents(ctx, time.Now().Add(time.Second), 10); err != nil || runs != 1 || n != 1 {
		t.Fatalf("CompactEvents = %d runs, %d events, %v; want the one event no delivery waits for", runs, n, err)
	}
	if got := eventTypes(t, s, r.ID); !slices.Equal(got, []string{"1:run.started", "2:approval.required", "4:run.failed"}) {
		t.Errorf("the compacted run's events = %v", got)
	}
	if got := deliveriesOf(t, s); len(got) != 3 {
		t.Errorf("deliveries after compaction = %+v, want all 3", got)
	}
}

// testDeliveryInBatch: an event a webhook takes that was stored amid
// others, and the end stored with several, are each delivered as stored,
// and compaction keeps the one still to send, and its delivery, with
// the events it always keeps.
func testDeliveryInBatch(t *testing.T, s Record) {
	ctx := t.Context()
	setRoutes(t, s, testRoutes)
	r := startRun(t, s, newConversation(t, s, alice), "hi")
	var batch []store.NewEvent
	for _, typ := range []string{events.TypeRunStarted, events.TypeApprovalRequired, events.TypeApprovalResolved, "node.start"} {
		batch = append(batch, store.NewEvent{RunID: r.ID, Type: typ, Data: eventData(r, typ)})
	}
	stored := must(s.AppendEvents(ctx, batch))(t)
	stored = append(stored, must(s.EndRun(ctx, r.ID, store.RunEnd{Status: store.RunFailed}, []store.NewEvent{
		{RunID: r.ID, Type: "node.end", Data: eventData(r, "node.end")},
		{RunID: r.ID, Type: events.TypeRunFailed, Data: eventData(r, events.TypeRunFailed)},
	}))(t).Events...)
	ds := deliveriesOf(t, s)
	if len(ds) != 3 {
		t.Fatalf("deliveries = %+v, want approval.required's to ops and run.failed's to ops and pager", ds)
	}
	for _, d := range ds {
		got := must(s.GetWebhookDelivery(ctx, d.ID))(t)
		want := stored[d.Seq-1]
		if got.EventType != want.Type || string(got.Event) != string(want.Data) {
			t.Errorf("delivery of event %d: %s %s, want %s %s", d.Seq, got.EventType, got.Event, want.Type, want.Data)
		}
	}
	if runs, n, err := s.CompactEvents(ctx, time.Now().Add(time.Second), 10); err != nil || runs != 1 || n != 3 {
		t.Fatalf("CompactEvents = %d runs, %d events, %v; want the 3 no delivery waits for", runs, n, err)
	}
	if got := eventTypes(t, s, r.ID); !slices.Equal(got, []string{"1:run.started", "2:approval.required", "6:run.failed"}) {
		t.Errorf("the compacted run's events = %v", got)
	}
	if got := deliveriesOf(t, s); len(got) != 3 {
		t.Errorf("deliveries after compaction = %+v, want all 3", got)
	}
	for _, d := range ds {
		if got := must(s.GetWebhookDelivery(ctx, d.ID))(t); string(got.Event) != string(stored[d.Seq-1].Data) {
			t.Errorf("delivery of event %d after compaction: %s, want %s", d.Seq, got.Event, stored[d.Seq-1].Data)
		}
	}
}
