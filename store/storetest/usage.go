package storetest

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// testUsage: the usage record counts what each stretch of a run added,
// once, on the day the run's stream ended, under the run's model; the
// run itself once it ends for good; and ends refused add nothing.
func testUsage(t *testing.T, s Record) {
	ctx := t.Context()
	today := time.Now().UTC().Format(store.DayFormat)
	c := newConversation(t, s, alice)
	r := must(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "hello", Model: "smart-1"}))(t)

	u := events.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}
	must(s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunInterrupted, Reason: events.PendingApproval, Usage: u, ToolCalls: 2}))(t)
	// Ended again without a resume (a recovered process ending it a
	// second time): its stretch counted already.
	must(s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunInterrupted, Reason: events.PendingApproval, Usage: u, ToolCalls: 2}))(t)
	must(s.ResumeRun(ctx, r.ID, "proc-b"))(t)
	u = events.Usage{InputTokens: 30, OutputTokens: 9, TotalTokens: 40} // the run's total
	must(s.EndRun(ctx, r.ID, store.RunEnd{Status: store.RunCompleted, Usage: u, ToolCalls: 1},
		[]store.NewEvent{{RunID: r.ID, Type: "run.completed", Data: []byte(`{"type":"run.completed"}`)}}))(t)
	wantErr(t, "FinishRun of a completed run", second(s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunFailed,
		Usage: events.Usage{TotalTokens: 1000}, ToolCalls: 9})), store.ErrConflict)

	// A second run, of no model named, and bob's, which alice's view leaves out.
	r2 := startRun(t, s, c, "again")
	must(s.FinishRun(ctx, r2.ID, store.RunEnd{Status: store.RunFailed, Usage: events.Usage{InputTokens: 1, TotalTokens: 1}}))(t)
	cb := newConversation(t, s, bob)
	rb := startRun(t, s, cb, "bob's")
	must(s.FinishRun(ctx, rb.ID, store.RunEnd{Status: store.RunCancelled, Usage: events.Usage{TotalTokens: 7}}))(t)

	smart := store.UsageDay{UserID: alice, Day: today, Model: "smart-1",
		UsageCounts: store.UsageCounts{InputTokens: 30, OutputTokens: 9, TotalTokens: 40, ToolCalls: 3, Runs: 1}}
	def := store.UsageDay{UserID: alice, Day: today, Model: "default",
		UsageCounts: store.UsageCounts{InputTokens: 1, TotalTokens: 1, Runs: 1}}
	p := must(s.UsageDays(ctx, store.UsageQuery{UserID: alice, From: today, To: today}))(t)
	if len(p.Days) != 2 || p.Days[0] != def || p.Days[1] != smart || p.NextCursor != "" {
		t.Errorf("UsageDays(alice) = %+v\nwant %+v, %+v", p.Days, def, smart)
	}
	if want := (store.UsageCounts{InputTokens: 31, OutputTokens: 9, TotalTokens: 41, ToolCalls: 3, Runs: 2}); p.Totals != want {
		t.Errorf("totals = %+v, want %+v", p.Totals, want)
	}
	if n := must(s.MonthTokens(ctx, alice, time.Now()))(t); n != 41 {
		t.Errorf("MonthTokens(alice) = %d, want 41", n)
	}
	if n := must(s.MonthTokens(ctx, alice, time.Now().AddDate(0, -1, 0)))(t); n != 0 {
		t.Errorf("MonthTokens(alice, last month) = %d, want 0", n)
	}

	// Every user's, a page at a time.
	all := must(s.UsageDays(ctx, store.UsageQuery{From: today, To: today, Page: store.Page{Limit: 2}}))(t)
	if len(all.Days) != 2 || all.Days[0] != def || all.Days[1] != smart || all.NextCursor == "" || all.Totals.TotalTokens != 48 {
		t.Fatalf("UsageDays(all, limit 2) = %+v", all)
	}
	rest := must(s.UsageDays(ctx, store.UsageQuery{From: today, To: today, Page: store.Page{Limit: 2, Cursor: all.NextCursor}}))(t)
	if len(rest.Days) != 1 || rest.Days[0].UserID != bob || rest.Days[0].TotalTokens != 7 || rest.NextCursor != "" {
		t.Errorf("UsageDays(all, page 2) = %+v", rest)
	}
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(store.DayFormat)
	if none := must(s.UsageDays(ctx, store.UsageQuery{UserID: alice, From: yesterday, To: yesterday}))(t); len(none.Days) != 0 || none.Days == nil {
		t.Errorf("UsageDays(yesterday) = %+v, want an empty page", none)
	}

	// A queued message's run counts under the model it was queued with.
	active := startRun(t, s, cb, "busy")
	must(s.EnqueueRun(ctx, store.NewQueuedRun{UserID: bob, ConversationID: cb.ID, UserMessage: "next", Model: "fast-1"}))(t)
	must(s.FinishRun(ctx, active.ID, store.RunEnd{Status: store.RunCompleted}))(t)
	queued := must(s.StartQueuedRun(ctx, cb.ID, "proc-1"))(t)
	must(s.FinishRun(ctx, queued.ID, store.RunEnd{Status: store.RunCompleted, Usage: events.Usage{TotalTokens: 3}}))(t)
	if p := must(s.UsageDays(ctx, store.UsageQuery{UserID: bob, From: today, To: today}))(t); len(p.Days) != 2 ||
		p.Days[1].Model != "fast-1" || p.Days[1].TotalTokens != 3 || p.Days[1].Runs != 1 || p.Days[0].Runs != 2 {
		t.Errorf("bob's usage with a queued run = %+v", p.Days)
	}

	long := time.Now().UTC().AddDate(0, 0, -store.MaxUsageDays).Format(store.DayFormat)
	wantErrs(t, "", map[string]error{
		"UsageDays without from":      second(s.UsageDays(ctx, store.UsageQuery{To: today})),
		"UsageDays from a non-day":    second(s.UsageDays(ctx, store.UsageQuery{From: "2026-02-30", To: today})),
		"UsageDays backwards":         second(s.UsageDays(ctx, store.UsageQuery{From: today, To: yesterday})),
		"UsageDays over the most":     second(s.UsageDays(ctx, store.UsageQuery{From: long, To: today})),
		"UsageDays, negative limit":   second(s.UsageDays(ctx, store.UsageQuery{From: today, To: today, Page: store.Page{Limit: -1}})),
		"UsageDays, a foreign cursor": second(s.UsageDays(ctx, store.UsageQuery{From: today, To: today, Page: store.Page{Cursor: "nope"}})),
		"UsageDays, a cursor holding NUL": second(s.UsageDays(ctx, store.UsageQuery{From: today, To: today,
			Page: store.Page{Cursor: rawCursor(`["u1","` + today + `","bob\u0000","m"]`)}})),
		"FinishRun, negative calls": second(s.FinishRun(ctx, startRun(t, s, cb, "calls").ID,
			store.RunEnd{Status: store.RunCompleted, ToolCalls: -1})),
	}, store.ErrInvalid)

	// Erasing a user erases their usage.
	us, ok := s.(store.Users)
	if !ok {
		return
	}
	must(us.EraseUser(ctx, alice))(t)
	if p := must(s.UsageDays(ctx, store.UsageQuery{UserID: alice, From: today, To: today}))(t); len(p.Days) != 0 {
		t.Errorf("UsageDays after erasure = %+v", p.Days)
	}
}

// rawCursor is s as a cursor's opaque form wraps it: a cursor a client
// could forge.
func rawCursor(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
