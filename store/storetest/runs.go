package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

func testRunLifecycle(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	r := must(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "hello",
		RequestID: "req-1", Owner: "proc-a", CheckpointID: "cp-0"}))(t)
	if r.ID == "" || r.ConversationID != c.ID || r.UserID != alice || r.Status != store.RunRunning || r.UserMessage != "hello" ||
		r.RequestID != "req-1" || r.Owner != "proc-a" || r.CheckpointID != "cp-0" || r.CompletedAt != nil || r.Superseded || r.LastSeq != 0 {
		t.Errorf("StartRun = %+v", r)
	}
	utc(t, "run", r.CreatedAt)
	if got := must(s.GetRun(ctx, alice, r.ID))(t); !reflect.DeepEqual(got, r) {
		t.Errorf("GetRun = %+v\nwant %+v as started", got, r)
	}

	usage := events.Usage{InputTokens: 10, OutputTokens: 5, ThinkingTokens: 1, CacheReadTokens: 2, CacheWriteTokens: 3, TotalTokens: 15}
	parked := must(s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunInterrupted, Reason: events.PendingApproval, Usage: usage}))(t)
	if parked.Status != store.RunInterrupted || parked.InterruptReason != events.PendingApproval || parked.Usage != usage || parked.CompletedAt == nil {
		t.Errorf("FinishRun(interrupted) = %+v", parked)
	} else {
		utc(t, "completed", *parked.CompletedAt)
	}
	if got := must(s.GetRun(ctx, alice, r.ID))(t); !reflect.DeepEqual(got, parked) {
		t.Errorf("GetRun = %+v\nwant %+v as finished", got, parked)
	}

	resumed := must(s.ResumeRun(ctx, r.ID, "proc-b"))(t)
	if resumed.Status != store.RunRunning || resumed.InterruptReason != "" || resumed.CompletedAt != nil || resumed.Owner != "proc-b" || resumed.Usage != usage {
		t.Errorf("ResumeRun = %+v: want running, no reason, no completion, owner proc-b, usage kept", resumed)
	}
	wantErr(t, "ResumeRun of a running run", second(s.ResumeRun(ctx, r.ID, "proc-c")), store.ErrConflict)

	usage.OutputTokens, usage.TotalTokens = 50, 60
	done := must(s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunCompleted, Usage: usage}))(t)
	if done.Status != store.RunCompleted || done.Usage != usage || done.CompletedAt == nil || done.Owner != "proc-b" {
		t.Errorf("FinishRun(completed) = %+v", done)
	}
	wantErr(t, "FinishRun of a completed run", second(s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunFailed})), store.ErrConflict)
	wantErr(t, "ResumeRun of a completed run", second(s.ResumeRun(ctx, r.ID, "proc-c")), store.ErrConflict)
	if got := must(s.GetRun(ctx, alice, r.ID))(t); !reflect.DeepEqual(got, done) {
		t.Errorf("refused calls changed the run: %+v\nwant %+v", got, done)
	}

	data, err := json.Marshal(store.RunWithEvents{Run: done})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"id"`, `"status":"completed"`, `"user_message":"hello"`, `"events":[]`, `"usage":{"input_tokens":10`,
		`"created_at"`, `"completed_at":"`, `"superseded":false`} {
		if !strings.Contains(string(data), k) {
			t.Errorf("run JSON %s lacks %s (API.md)", data, k)
		}
	}
}

// testActiveRunRule: which runs keep a second run from starting.
func testActiveRunRule(t *testing.T, s Record) {
	for _, tc := range []struct {
		name   string
		end    *store.RunEnd // nil: still running
		blocks bool
	}{
		{"running", nil, true},
		{"interrupted for approval", &store.RunEnd{Status: store.RunInterrupted, Reason: events.PendingApproval}, true},
		{"interrupted for elicitation", &store.RunEnd{Status: store.RunInterrupted, Reason: events.PendingElicitation}, true},
		{"interrupted for clarification", &store.RunEnd{Status: store.RunInterrupted, Reason: events.PendingClarification}, false},
		{"completed", &store.RunEnd{Status: store.RunCompleted}, false},
		{"cancelled", &store.RunEnd{Status: store.RunCancelled}, false},
		{"failed", &store.RunEnd{Status: store.RunFailed}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConversation(t, s, alice)
			r := startRun(t, s, c, "first")
			if tc.end != nil {
				r = must(s.FinishRun(t.Context(), r.ID, *tc.end))(t)
			}
			if r.Active() != tc.blocks {
				t.Errorf("Run.Active() = %v, want %v", r.Active(), tc.blocks)
			}
			before := take(t, s, alice, c.ID)
			_, err := s.StartRun(t.Context(), store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "second"})
			switch {
			case tc.blocks && !errors.Is(err, store.ErrRunActive):
				t.Errorf("StartRun after a %s run: %v, want ErrRunActive", tc.name, err)
			case tc.blocks:
				sameSnapshot(t, "a refused StartRun", before, take(t, s, alice, c.ID))
			case err != nil:
				t.Errorf("StartRun after a %s run: %v, want success", tc.name, err)
			}
		})
	}
}

func testOneActiveRunConcurrent(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	const n = 8
	others := make([]store.Conversation, n)
	for i := range others {
		others[i] = newConversation(t, s, alice)
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		won     []store.Run
		refused int
	)
	for i := range n {
		wg.Go(func() {
			r, err := s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "racer"})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, r)
			case errors.Is(err, store.ErrRunActive):
				refused++
			default:
				t.Errorf("StartRun %d: %v, want success or ErrRunActive", i, err)
			}
		})
		// Runs of other conversations are not held up.
		wg.Go(func() {
			if _, err := s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: others[i].ID, UserMessage: "alone"}); err != nil {
				t.Errorf("StartRun on a conversation of its own: %v", err)
			}
		})
	}
	wg.Wait()
	if len(won) != 1 || refused != n-1 {
		t.Fatalf("%d concurrent StartRuns: %d won, %d refused; want exactly one winner", n, len(won), refused)
	}
	if latest := must(s.LatestRun(ctx, alice, c.ID))(t); latest.ID != won[0].ID {
		t.Errorf("LatestRun = %s, want the winner %s", latest.ID, won[0].ID)
	}
	if msgs := allMessages(t, s, alice, c.ID); len(msgs) != 1 {
		t.Errorf("%d messages stored, want the winner's only: a refused run leaves nothing", len(msgs))
	}
}

// A run parked on a clarification does not block the next run, and once
// that run is active the parked one cannot resume.
func testResumeRespectsActiveRun(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	asked := finish(t, s, startRun(t, s, c, "book a flight").ID, store.RunInterrupted, events.PendingClarification)
	next := startRun(t, s, c, "to Paris")
	wantErr(t, "ResumeRun beside an active run", second(s.ResumeRun(ctx, asked.ID, "p")), store.ErrRunActive)
	if got := must(s.GetRun(ctx, alice, asked.ID))(t); !reflect.DeepEqual(got, asked) {
		t.Errorf("refused ResumeRun changed the run: %+v", got)
	}
	if latest := must(s.LatestRun(ctx, alice, c.ID))(t); latest.ID != next.ID {
		t.Errorf("LatestRun = %s, want %s", latest.ID, next.ID)
	}
	finish(t, s, next.ID, store.RunCompleted, "")
	if _, err := s.ResumeRun(ctx, asked.ID, "p"); err != nil {
		t.Errorf("ResumeRun with no other active run: %v", err)
	}
}

func testSupersede(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	r1 := finish(t, s, startRun(t, s, c, "one").ID, store.RunCompleted, "")
	r2 := finish(t, s, startRun(t, s, c, "two").ID, store.RunCompleted, "")
	r3 := startRun(t, s, c, "three")
	a3 := newApproval(t, s, r3, "delete_everything")
	e3 := newElicitation(t, s, r3, "sure?")
	finish(t, s, r3.ID, store.RunInterrupted, events.PendingApproval)
	wantErr(t, "StartRun beside a run waiting for approval", second(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "x"})), store.ErrRunActive)

	r4 := must(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "two, edited", Supersedes: r2.ID}))(t)
	if r4.CheckpointID != r2.CheckpointID || r4.Superseded || r4.Status != store.RunRunning {
		t.Errorf("edit run = %+v: want running, not superseded, from %s's checkpoint %q", r4, r2.ID, r2.CheckpointID)
	}
	runs, _ := allRuns(t, s, alice, c.ID)
	var got []bool
	for _, r := range runs {
		got = append(got, r.Superseded)
	}
	if want := []bool{false, true, true, false}; !reflect.DeepEqual(got, want) || runs[0].ID != r1.ID || runs[3].ID != r4.ID {
		t.Errorf("superseded flags %v, want %v for %s, %s, %s, %s", got, want, r1.ID, r2.ID, r3.ID, r4.ID)
	}
	if a := must(s.GetHumanRequest(ctx, events.PendingApproval, alice, a3.ID))(t); a.Status != store.HumanExpired || a.ResolvedAt == nil {
		t.Errorf("approval of a superseded run: %+v, want expired", a)
	}
	if e := must(s.GetHumanRequest(ctx, events.PendingElicitation, alice, e3.ID))(t); e.Status != store.HumanExpired {
		t.Errorf("elicitation of a superseded run: %+v, want expired", e)
	}
	wantErr(t, "answering an expired approval", second(s.ResolveHumanRequest(ctx, alice, a3.ID, store.ApprovalAnswer{Decision: events.DecisionApprove})), store.ErrAlreadyResolved)
	wantErr(t, "resuming a superseded run", second(s.ResumeRun(ctx, r3.ID, "p")), store.ErrConflict)
	for _, m := range allMessages(t, s, alice, c.ID) {
		if m.Superseded != (m.RunID == r2.ID || m.RunID == r3.ID) {
			t.Errorf("message %q of run %s: superseded %v", m.Content, m.RunID, m.Superseded)
		}
	}

	// An explicit checkpoint wins over the superseded run's.
	finish(t, s, r4.ID, store.RunCompleted, "")
	r5 := must(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "again", Supersedes: r4.ID, CheckpointID: "cp-x"}))(t)
	if r5.CheckpointID != "cp-x" {
		t.Errorf("CheckpointID = %q, want the one given", r5.CheckpointID)
	}
}

func testSupersedeRefused(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	r1 := finish(t, s, startRun(t, s, c, "one").ID, store.RunCompleted, "")
	r2 := startRun(t, s, c, "two") // still running
	other := newConversation(t, s, alice)
	otherRun := finish(t, s, startRun(t, s, other, "elsewhere").ID, store.RunCompleted, "")
	edit := func(from string) error {
		_, err := s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "edited", Supersedes: from})
		return err
	}
	before := take(t, s, alice, c.ID)
	wantErr(t, "editing while a later run is running", edit(r1.ID), store.ErrRunActive)
	wantErr(t, "editing the running run itself", edit(r2.ID), store.ErrRunActive)
	wantErr(t, "editing another conversation's run", edit(otherRun.ID), store.ErrNotFound)
	wantErr(t, "editing an unknown run", edit("no-such-run"), store.ErrNotFound)
	sameSnapshot(t, "refused edits", before, take(t, s, alice, c.ID))

	finish(t, s, r2.ID, store.RunCompleted, "")
	if err := edit(r1.ID); err != nil {
		t.Fatalf("edit once nothing runs: %v", err)
	}
	before = take(t, s, alice, c.ID)
	wantErr(t, "editing a superseded run", edit(r2.ID), store.ErrConflict)
	sameSnapshot(t, "a refused edit", before, take(t, s, alice, c.ID))
}

func testListRuns(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	if p := must(s.ListRuns(ctx, alice, c.ID, store.RunQuery{}))(t); p.Runs == nil || len(p.Runs) != 0 || p.Messages == nil || len(p.Messages) != 0 || p.NextCursor != "" {
		t.Errorf("runs of a new conversation = %#v, want empty and non-nil, no cursor", p)
	}
	wantErr(t, "LatestRun without runs", second(s.LatestRun(ctx, alice, c.ID)), store.ErrNotFound)
	var want []store.RunWithEvents
	for i, msg := range []string{"a", "b", "c"} {
		r := startRun(t, s, c, msg)
		var events []store.Event
		for j := range i + 1 {
			events = append(events, appendEvent(t, s, r, []string{"run.started", "node.start", "node.end"}[j]))
		}
		r = finish(t, s, r.ID, store.RunCompleted, "")
		r.LastSeq = int64(i + 1)
		want = append(want, store.RunWithEvents{Run: r, Events: events})
	}
	quiet := startRun(t, s, c, "d")
	want = append(want, store.RunWithEvents{Run: quiet, Events: []store.Event{}})
	got := must(s.ListRuns(ctx, alice, c.ID, store.RunQuery{}))(t)
	if !reflect.DeepEqual(got.Runs, want) || got.NextCursor != "" {
		t.Errorf("ListRuns =\n%+v\nwant\n%+v, no cursor", got, want)
	}
	if msgs := allMessages(t, s, alice, c.ID); !reflect.DeepEqual(got.Messages, msgs) {
		t.Errorf("ListRuns' messages =\n%+v\nwant every message, as RunMessages gives\n%+v", got.Messages, msgs)
	}
	if latest := must(s.LatestRun(ctx, alice, c.ID))(t); latest.ID != quiet.ID {
		t.Errorf("LatestRun = %s, want %s", latest.ID, quiet.ID)
	}
}

// testListRunsPages: pages of runs cover every run once, oldest first,
// each with its first events (a page's event limit falling in the middle
// of a run's events says so) and with the messages of its runs only;
// cursors stay good while runs are added.
func testListRunsPages(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	var (
		runs   []store.Run
		events = map[string][]store.Event{}
	)
	// Runs of 0, 1, 2, … events; each but the last answered.
	for i := range 5 {
		r := startRun(t, s, c, fmt.Sprint("turn ", i))
		for range i {
			events[r.ID] = append(events[r.ID], appendEvent(t, s, r, "node.start"))
		}
		if i < 4 {
			must(s.AddMessage(ctx, store.NewMessage{RunID: r.ID, Role: store.RoleAssistant, Content: fmt.Sprint("answer ", i)}))(t)
		}
		runs = append(runs, finish(t, s, r.ID, store.RunCompleted, ""))
	}
	const limit, eventLimit = 2, 2
	q := store.RunQuery{Limit: limit, EventLimit: eventLimit}
	var pages [][]string
	for n := 0; ; n++ {
		p := must(s.ListRuns(ctx, alice, c.ID, q))(t)
		var ids []string
		msgRuns := map[string]int{}
		for _, m := range p.Messages {
			msgRuns[m.RunID]++
		}
		for _, r := range p.Runs {
			i := len(slices.Concat(pages...)) + len(ids)
			ids = append(ids, r.ID)
			if i >= len(runs) || !reflect.DeepEqual(r.Run, runs[i]) {
				t.Fatalf("page %d: run %+v, want run %d of %d", n, r.Run, i, len(runs))
			}
			all := events[r.ID]
			want := all[:min(len(all), eventLimit)]
			if want == nil {
				want = []store.Event{}
			}
			if !reflect.DeepEqual(r.Events, want) || r.EventsTruncated != (len(all) > eventLimit) {
				t.Errorf("run %d: events %v, truncated %v; want %v, truncated %v", i, seqs(r.Events), r.EventsTruncated, seqs(want), len(all) > eventLimit)
			}
			if r.EventsTruncated {
				// The rest follow the last one given.
				rest := allEvents(t, s, alice, r.ID, r.Events[len(r.Events)-1].Seq, 1)
				if !reflect.DeepEqual(slices.Concat(r.Events, rest), all) {
					t.Errorf("run %d: events %v then %v, want %v", i, seqs(r.Events), seqs(rest), seqs(all))
				}
			}
			wantMsgs := 1 // the user's
			if i < 4 {
				wantMsgs = 2 // and the answer
			}
			if msgRuns[r.ID] != wantMsgs {
				t.Errorf("page %d: %d messages of run %d, want %d", n, msgRuns[r.ID], i, wantMsgs)
			}
			delete(msgRuns, r.ID)
		}
		if len(msgRuns) != 0 {
			t.Errorf("page %d has messages of runs not on it: %v", n, msgRuns)
		}
		pages = append(pages, ids)
		if n == 0 {
			// A run started while the client pages comes on a later page.
			runs = append(runs, startRun(t, s, c, "late"))
		}
		if p.NextCursor == "" {
			if len(p.Runs) == 0 {
				t.Errorf("page %d: the last page is empty; the page before should have had no cursor", n)
			}
			break
		}
		if len(p.Runs) != limit {
			t.Errorf("page %d holds %d runs, want %d (a cursor follows)", n, len(p.Runs), limit)
		}
		q.Cursor = p.NextCursor
	}
	if want := [][]string{{runs[0].ID, runs[1].ID}, {runs[2].ID, runs[3].ID}, {runs[4].ID, runs[5].ID}}; !reflect.DeepEqual(pages, want) {
		t.Errorf("pages %v, want %v", pages, want)
	}

	// Cursors that ListRuns did not make.
	newConversation(t, s, alice)
	conv := must(s.ListConversations(ctx, alice, store.Page{Limit: 1}))(t)
	before := take(t, s, alice, c.ID)
	for _, cur := range []string{"garbage", "cjE", "cjEuMA" /* r1.0 */, "cjEueA" /* r1.x */, "cjIuMQ" /* r2.1 */, conv.NextCursor} {
		wantErr(t, fmt.Sprintf("ListRuns with cursor %q", cur), second(s.ListRuns(ctx, alice, c.ID, store.RunQuery{Cursor: cur})), store.ErrInvalid)
	}
	sameSnapshot(t, "refused listings", before, take(t, s, alice, c.ID))
}

// testListRunsLimits: limits of 0 and above the most allowed mean the
// defaults and the most.
func testListRunsLimits(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	for i := range store.MaxRunLimit + 1 {
		r := startRun(t, s, c, fmt.Sprint(i))
		if i == 0 {
			batch := make([]store.NewEvent, store.MaxEventLimit+1)
			for j := range batch {
				batch[j] = store.NewEvent{RunID: r.ID, Type: "tool.progress", Data: json.RawMessage(`{"type":"tool.progress"}`)}
			}
			must(s.AppendEvents(ctx, batch))(t)
		}
		finish(t, s, r.ID, store.RunCompleted, "")
	}
	for _, tc := range []struct {
		q              store.RunQuery
		runs, events   int
		cursorExpected bool
	}{
		{store.RunQuery{}, store.DefaultRunLimit, store.DefaultEventLimit, true},
		{store.RunQuery{Limit: 1000, EventLimit: 100000}, store.MaxRunLimit, store.MaxEventLimit, true},
		{store.RunQuery{Limit: 1, EventLimit: 1}, 1, 1, true},
	} {
		p := must(s.ListRuns(ctx, alice, c.ID, tc.q))(t)
		if len(p.Runs) != tc.runs || len(p.Runs[0].Events) != tc.events || !p.Runs[0].EventsTruncated || (p.NextCursor != "") != tc.cursorExpected {
			t.Errorf("ListRuns(%+v) = %d runs, %d events of the first (truncated %v), cursor %q; want %d runs, %d events, truncated",
				tc.q, len(p.Runs), len(p.Runs[0].Events), p.Runs[0].EventsTruncated, p.NextCursor, tc.runs, tc.events)
		}
	}
	// The last page: one run, no cursor.
	p := must(s.ListRuns(ctx, alice, c.ID, store.RunQuery{Limit: store.MaxRunLimit}))(t)
	p = must(s.ListRuns(ctx, alice, c.ID, store.RunQuery{Cursor: p.NextCursor}))(t)
	if len(p.Runs) != 1 || p.NextCursor != "" || p.Runs[0].UserMessage != fmt.Sprint(store.MaxRunLimit) {
		t.Errorf("last page = %d runs, cursor %q; want the last run alone, no cursor", len(p.Runs), p.NextCursor)
	}
}

// testRunInput: a run's input is kept verbatim while the run runs, in a
// new conversation or an older one, and is gone once its stream ends
// (EndRun, or FinishRun even as interrupted); a run started without one
// has none, and another user's is not found.
func testRunInput(t *testing.T, s Record) {
	ctx := t.Context()
	in := json.RawMessage(`{"input":{"message":"héllo \u2028","budget":{"max_tool_calls":2}},"edit_of":"req-0"}`)
	fresh := must(s.StartRun(ctx, store.NewRun{UserID: alice, NewConversation: &store.NewConversation{UserID: alice, Title: "t"},
		UserMessage: "héllo", Owner: "proc-a", Input: in}))(t)
	if got := must(s.RunInput(ctx, alice, fresh.ID))(t); string(got) != string(in) {
		t.Errorf("RunInput = %s, want %s", got, in)
	}
	wantErr(t, "RunInput of another user's run", second(s.RunInput(ctx, bob, fresh.ID)), store.ErrNotFound)
	wantErr(t, "RunInput of an unknown run", second(s.RunInput(ctx, alice, "no-such-run")), store.ErrNotFound)
	done := fmt.Sprintf(`{"type":"run.completed","run_id":%q,"conversation_id":%q}`, fresh.ID, fresh.ConversationID)
	must(s.EndRun(ctx, fresh.ID, store.RunEnd{Status: store.RunCompleted},
		[]store.NewEvent{{RunID: fresh.ID, Type: "run.completed", Data: json.RawMessage(done)}}))(t)
	if got := must(s.RunInput(ctx, alice, fresh.ID))(t); got != nil {
		t.Errorf("RunInput after EndRun = %s, want none", got)
	}

	c := newConversation(t, s, alice)
	bare := must(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "hi"}))(t)
	if got := must(s.RunInput(ctx, alice, bare.ID))(t); got != nil {
		t.Errorf("RunInput of a run started without one = %s", got)
	}
	must(s.FinishRun(ctx, bare.ID, store.RunEnd{Status: store.RunCompleted}))(t)
	r := must(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "again", Input: in}))(t)
	if got := must(s.RunInput(ctx, alice, r.ID))(t); string(got) != string(in) {
		t.Errorf("RunInput of a later run = %s, want %s", got, in)
	}
	must(s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunInterrupted, Reason: events.PendingApproval}))(t)
	if got := must(s.RunInput(ctx, alice, r.ID))(t); got != nil {
		t.Errorf("RunInput after the run was parked = %s, want none", got)
	}
}

func testActiveUsers(t *testing.T, s Record) {
	ctx := t.Context()
	if users := must(s.ActiveUsers(ctx))(t); len(users) != 0 {
		t.Fatalf("active users of an empty store: %v", users)
	}
	carol, dave, erin := "carol", "dave", "erin"
	startRun(t, s, newConversation(t, s, bob), "running")
	finish(t, s, startRun(t, s, newConversation(t, s, alice), "parked").ID, store.RunInterrupted, events.PendingApproval)
	finish(t, s, startRun(t, s, newConversation(t, s, carol), "done").ID, store.RunCompleted, "")
	finish(t, s, startRun(t, s, newConversation(t, s, dave), "asked").ID, store.RunInterrupted, events.PendingClarification)
	edited := startRun(t, s, newConversation(t, s, erin), "edited")
	finish(t, s, edited.ID, store.RunInterrupted, events.PendingApproval)
	must(s.StartRun(ctx, store.NewRun{UserID: erin, ConversationID: edited.ConversationID, UserMessage: "again", Supersedes: edited.ID,
		RequestID: "req-again", Owner: "proc-1"}))(t)
	// Dave's question waits for his next message, which recovery does
	// not continue, but it is parked all the same; erin's edit superseded
	// her parked run and runs.
	if users := must(s.ActiveUsers(ctx))(t); !slices.Equal(users, []string{alice, bob, dave, erin}) {
		t.Fatalf("active users %v, want [alice bob dave erin]", users)
	}
}

// A run ending while the next message starts a run on its conversation,
// or while an earlier run parked there resumes: each either waits for
// the end and goes ahead, or finds the run still active
// (ErrRunActive); neither fails otherwise. On PostgreSQL, a start locks
// the conversation's row and then waits on the ending run's row in the
// one-active-run index, so an end that locked them the other way round
// deadlocked with it.
func testEndRunRacesStart(t *testing.T, s Record) {
	ctx := t.Context()
	const rounds = 100
	for i := range rounds {
		c, parked := parkedRun(t, s, events.PendingClarification)
		r := must(s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "running"}))(t)
		errs := make([]error, 3)
		together(func() {
			_, errs[0] = s.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunCompleted})
		}, func() {
			_, errs[1] = s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "next"})
		}, func() {
			_, errs[2] = s.ResumeRun(ctx, parked.ID, "proc-1")
		})
		if errs[0] != nil {
			t.Fatalf("round %d: FinishRun: %v", i, errs[0])
		}
		for j, name := range []string{"", "StartRun", "ResumeRun"} {
			if j > 0 && errs[j] != nil && !errors.Is(errs[j], store.ErrRunActive) {
				t.Fatalf("round %d: %s: %v, want success or ErrRunActive", i, name, errs[j])
			}
		}
	}
}

// parkedRun starts a run in a new conversation of alice's and parks it
// for reason.
func parkedRun(t *testing.T, s store.Store, reason events.PendingKind) (store.Conversation, store.Run) {
	t.Helper()
	c := newConversation(t, s, alice)
	r := startRun(t, s, c, "parked")
	finish(t, s, r.ID, store.RunInterrupted, reason)
	return c, r
}

// together runs fns on goroutines of their own, let go at one moment, and
// returns when all have.
func together(fns ...func()) {
	var wg sync.WaitGroup
	begin := make(chan struct{})
	for _, fn := range fns {
		wg.Go(func() {
			<-begin
			fn()
		})
	}
	close(begin)
	wg.Wait()
}
