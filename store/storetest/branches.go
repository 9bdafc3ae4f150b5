package storetest

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// edit starts a run that supersedes from, as an edit of its message does.
func edit(t *testing.T, s store.Store, c store.Conversation, from store.Run, msg string) store.Run {
	t.Helper()
	return must(s.StartRun(t.Context(), store.NewRun{UserID: c.UserID, ConversationID: c.ID, UserMessage: msg, RequestID: "req-" + msg,
		Supersedes: from.ID}))(t)
}

// branchRuns returns the ids of the runs ListRuns gives for the branch
// of run, in order, read a run at a time so the pages are walked too.
func branchRuns(t *testing.T, s store.Store, user, conversationID, run string) []string {
	t.Helper()
	var ids []string
	for q := (store.RunQuery{Limit: 1, Branch: run}); ; {
		page := must(s.ListRuns(t.Context(), user, conversationID, q))(t)
		for _, r := range page.Runs {
			ids = append(ids, r.ID)
		}
		for _, m := range page.Messages {
			if r := page.Runs[len(page.Runs)-1]; m.RunID != r.ID {
				t.Errorf("branch page of run %s holds message %q of run %s", r.ID, m.Content, m.RunID)
			}
		}
		if page.NextCursor == "" {
			return ids
		}
		q.Cursor = page.NextCursor
	}
}

// activeRuns returns the ids of the conversation's runs not superseded,
// in order, and checks their versions against want (run id → [index,
// count]; runs absent have one version).
func activeRuns(t *testing.T, s store.Store, user, conversationID string, want map[string][2]int) []string {
	t.Helper()
	runs, _ := allRuns(t, s, user, conversationID)
	var ids []string
	for _, r := range runs {
		var got [2]int
		if r.Versions != nil {
			got = [2]int{r.Versions.Index, r.Versions.Count}
		}
		if got != want[r.ID] {
			t.Errorf("run %q: versions %v, want %v", r.UserMessage, got, want[r.ID])
		}
		if !r.Superseded {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

func branchIDs(bs []store.Branch) (runs, heads []string, active []bool) {
	for _, b := range bs {
		runs, heads, active = append(runs, b.RunID), append(heads, b.HeadRunID), append(active, b.Active)
	}
	return runs, heads, active
}

// Each run follows the active branch's last run, an edit the run its
// edited run follows; Branches lists a turn's versions with their
// branches' last runs; ListRuns reads any branch.
func testBranches(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	r1 := finish(t, s, startRun(t, s, c, "one").ID, store.RunCompleted, "")
	r2 := finish(t, s, startRun(t, s, c, "two").ID, store.RunCompleted, "")
	r3 := finish(t, s, startRun(t, s, c, "three").ID, store.RunCompleted, "")
	if r1.ParentID != "" || r2.ParentID != r1.ID || r3.ParentID != r2.ID {
		t.Errorf("parents %q, %q, %q; want none, %s, %s", r1.ParentID, r2.ParentID, r3.ParentID, r1.ID, r2.ID)
	}
	r4 := finish(t, s, edit(t, s, c, r2, "two, again").ID, store.RunCompleted, "")
	r5 := finish(t, s, edit(t, s, c, r4, "two, once more").ID, store.RunCompleted, "")
	r6 := startRun(t, s, c, "four")
	if r4.ParentID != r1.ID || r5.ParentID != r1.ID || r6.ParentID != r5.ID {
		t.Errorf("parents %q, %q, %q; want %s, %s, %s", r4.ParentID, r5.ParentID, r6.ParentID, r1.ID, r1.ID, r5.ID)
	}
	if got := must(s.GetRun(ctx, alice, r6.ID))(t); got.ParentID != r5.ID {
		t.Errorf("GetRun parent %q, want %s", got.ParentID, r5.ID)
	}
	want := map[string][2]int{r2.ID: {1, 3}, r4.ID: {2, 3}, r5.ID: {3, 3}}
	if got := activeRuns(t, s, alice, c.ID, want); !reflect.DeepEqual(got, []string{r1.ID, r5.ID, r6.ID}) {
		t.Errorf("active branch %v, want %s, %s, %s", got, r1.ID, r5.ID, r6.ID)
	}

	bs := must(s.Branches(ctx, alice, r4.ID))(t)
	runs, heads, active := branchIDs(bs)
	if !reflect.DeepEqual(runs, []string{r2.ID, r4.ID, r5.ID}) || !reflect.DeepEqual(heads, []string{r3.ID, r4.ID, r6.ID}) ||
		!reflect.DeepEqual(active, []bool{false, false, true}) {
		t.Errorf("Branches = %+v; want %s (to %s), %s, %s (to %s, active)", bs, r2.ID, r3.ID, r4.ID, r5.ID, r6.ID)
	}
	if b := bs[0]; b.UserMessage != "two" || b.Status != store.RunCompleted || b.CreatedAt.IsZero() {
		t.Errorf("first version %+v", b)
	}
	if bs := must(s.Branches(ctx, alice, r1.ID))(t); len(bs) != 1 || bs[0].RunID != r1.ID || bs[0].HeadRunID != r6.ID || !bs[0].Active {
		t.Errorf("Branches of the first turn = %+v, want its one version, to %s", bs, r6.ID)
	}
	for run, want := range map[string][]string{
		r2.ID: {r1.ID, r2.ID, r3.ID}, r3.ID: {r1.ID, r2.ID, r3.ID}, r4.ID: {r1.ID, r4.ID},
		r5.ID: {r1.ID, r5.ID, r6.ID}, r1.ID: {r1.ID, r5.ID, r6.ID},
	} {
		if got := branchRuns(t, s, alice, c.ID, run); !reflect.DeepEqual(got, want) {
			t.Errorf("branch of %s: %v, want %v", run, got, want)
		}
	}
	other := newConversation(t, s, alice)
	wantErr(t, "ListRuns of another conversation's branch", second(s.ListRuns(ctx, alice, other.ID, store.RunQuery{Branch: r2.ID})), store.ErrNotFound)
	for _, id := range []string{"a\x00b", "\xff"} { // no run has it; PostgreSQL would refuse to look
		wantErr(t, fmt.Sprintf("ListRuns of branch %q", id), second(s.ListRuns(ctx, alice, other.ID, store.RunQuery{Branch: id})), store.ErrNotFound)
	}
	wantErr(t, "Branches of another user's run", second(s.Branches(ctx, bob, r2.ID)), store.ErrNotFound)
	wantErr(t, "Branches of an unknown run", second(s.Branches(ctx, alice, "nope")), store.ErrNotFound)
}

// SetBranch makes a branch active in one step, and the next run follows
// it; an edit on it supersedes what follows on it only.
func testSetBranch(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	r1 := finish(t, s, startRun(t, s, c, "one").ID, store.RunCompleted, "")
	r2 := finish(t, s, startRun(t, s, c, "two").ID, store.RunCompleted, "")
	r3 := finish(t, s, startRun(t, s, c, "three").ID, store.RunInterrupted, events.PendingClarification)
	q3 := must(s.CreateHumanRequest(ctx, store.NewHumanRequest{ID: "q-3", Kind: events.PendingClarification, RunID: r3.ID,
		Clarification: store.Clarification{Question: "which?"}}))(t)
	r4 := finish(t, s, edit(t, s, c, r2, "two, again").ID, store.RunCompleted, "")
	if got := must(s.GetHumanRequest(ctx, events.PendingClarification, alice, q3.ID))(t); got.Status != store.HumanExpired {
		t.Errorf("question of an edited-away run: %s, want expired", got.Status)
	}

	// Back to the first branch: its last run is the clarification's.
	head := must(s.SetBranch(ctx, alice, r2.ID))(t)
	if head.ID != r3.ID || head.Superseded {
		t.Errorf("SetBranch = run %s (superseded %v), want %s", head.ID, head.Superseded, r3.ID)
	}
	if got := activeRuns(t, s, alice, c.ID, map[string][2]int{r2.ID: {1, 2}, r4.ID: {2, 2}}); !reflect.DeepEqual(got, []string{r1.ID, r2.ID, r3.ID}) {
		t.Errorf("active branch %v, want %s, %s, %s", got, r1.ID, r2.ID, r3.ID)
	}
	if latest := must(s.LatestRun(ctx, alice, c.ID))(t); latest.ID != r3.ID {
		t.Errorf("LatestRun = %s, want the active branch's last, %s", latest.ID, r3.ID)
	}
	if cv := must(s.GetConversation(ctx, alice, c.ID))(t); cv.Status != store.RunInterrupted {
		t.Errorf("conversation status %s, want its active branch's last run's", cv.Status)
	}
	r5 := finish(t, s, startRun(t, s, c, "four").ID, store.RunCompleted, "")
	if r5.ParentID != r3.ID {
		t.Errorf("the next run follows %q, want %s", r5.ParentID, r3.ID)
	}
	// Again, to the same branch: nothing changes; then an edit on it.
	if head := must(s.SetBranch(ctx, alice, r1.ID))(t); head.ID != r5.ID {
		t.Errorf("SetBranch to the active branch = %s, want %s", head.ID, r5.ID)
	}
	r6 := finish(t, s, edit(t, s, c, r3, "three, again").ID, store.RunCompleted, "")
	if got := activeRuns(t, s, alice, c.ID, map[string][2]int{r2.ID: {1, 2}, r4.ID: {2, 2}, r3.ID: {1, 2}, r6.ID: {2, 2}}); !reflect.DeepEqual(got, []string{r1.ID, r2.ID, r6.ID}) {
		t.Errorf("after an edit on the chosen branch: %v, want %s, %s, %s", got, r1.ID, r2.ID, r6.ID)
	}
	// Over to the other version of the second turn, whose last run is r4.
	if head := must(s.SetBranch(ctx, alice, r4.ID))(t); head.ID != r4.ID {
		t.Errorf("SetBranch = %s, want %s", head.ID, r4.ID)
	}
	if got := activeRuns(t, s, alice, c.ID, map[string][2]int{r2.ID: {1, 2}, r4.ID: {2, 2}, r3.ID: {1, 2}, r6.ID: {2, 2}}); !reflect.DeepEqual(got, []string{r1.ID, r4.ID}) {
		t.Errorf("active branch %v, want %s, %s", got, r1.ID, r4.ID)
	}
}

func testSetBranchRefused(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	r1 := finish(t, s, startRun(t, s, c, "one").ID, store.RunCompleted, "")
	r2 := startRun(t, s, c, "two")
	newApproval(t, s, r2, "delete_everything")
	finish(t, s, r2.ID, store.RunInterrupted, events.PendingApproval)
	r3 := edit(t, s, c, r1, "one, again")

	wantErr(t, "SetBranch beside a running run", second(s.SetBranch(ctx, alice, r1.ID)), store.ErrRunActive)
	finish(t, s, r3.ID, store.RunCompleted, "")
	before := take(t, s, alice, c.ID)
	wantErr(t, "SetBranch to a branch parked on an expired approval", second(s.SetBranch(ctx, alice, r1.ID)), store.ErrConflict)
	wantErr(t, "SetBranch of another user's run", second(s.SetBranch(ctx, bob, r1.ID)), store.ErrNotFound)
	wantErr(t, "SetBranch of an unknown run", second(s.SetBranch(ctx, alice, "nope")), store.ErrNotFound)
	sameSnapshot(t, "refused SetBranch", before, take(t, s, alice, c.ID))

	// Parked on an approval, the active run holds the branch too.
	r4 := startRun(t, s, c, "two, again")
	finish(t, s, r4.ID, store.RunInterrupted, events.PendingApproval)
	wantErr(t, "SetBranch beside a run waiting for approval", second(s.SetBranch(ctx, alice, r3.ID)), store.ErrRunActive)
}

// BranchesBackfilled checks the record of runs stored before runs knew
// which run they follow. s is a store whose runs' parents are then
// forgotten and filled in again as its migration does, by backfill.
func BranchesBackfilled(t *testing.T, s store.Store, backfill func()) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	r1 := finish(t, s, startRun(t, s, c, "one").ID, store.RunCompleted, "")
	r2 := finish(t, s, startRun(t, s, c, "two").ID, store.RunCompleted, "")
	r3 := finish(t, s, startRun(t, s, c, "three").ID, store.RunCompleted, "")
	r4 := finish(t, s, edit(t, s, c, r2, "two, again").ID, store.RunCompleted, "")
	r5 := finish(t, s, startRun(t, s, c, "four").ID, store.RunCompleted, "")
	backfill()
	// The active branch is exact; the runs edited away read as one
	// earlier branch, in the order they were taken.
	if got := activeRuns(t, s, alice, c.ID, map[string][2]int{r2.ID: {1, 2}, r4.ID: {2, 2}}); !reflect.DeepEqual(got, []string{r1.ID, r4.ID, r5.ID}) {
		t.Errorf("active branch %v, want %s, %s, %s", got, r1.ID, r4.ID, r5.ID)
	}
	bs := must(s.Branches(ctx, alice, r4.ID))(t)
	if runs, heads, _ := branchIDs(bs); !reflect.DeepEqual(runs, []string{r2.ID, r4.ID}) || !reflect.DeepEqual(heads, []string{r3.ID, r5.ID}) {
		t.Errorf("Branches = %+v, want %s (to %s) and %s (to %s)", bs, r2.ID, r3.ID, r4.ID, r5.ID)
	}
	if got := branchRuns(t, s, alice, c.ID, r2.ID); !reflect.DeepEqual(got, []string{r1.ID, r2.ID, r3.ID}) {
		t.Errorf("the earlier branch %v, want %s, %s, %s", got, r1.ID, r2.ID, r3.ID)
	}
	if head := must(s.SetBranch(ctx, alice, r2.ID))(t); head.ID != r3.ID {
		t.Errorf("SetBranch = %s, want %s", head.ID, r3.ID)
	}
	if r6 := startRun(t, s, c, "five"); r6.ParentID != r3.ID {
		t.Errorf("the next run follows %q, want %s", r6.ParentID, r3.ID)
	}
}

// ParentsBackfill returns the statement of the migration file at path
// that fills runs.parent_id in, for BranchesBackfilled's backfill.
func ParentsBackfill(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for stmt := range strings.SplitSeq(string(b), ";") {
		if i := strings.Index(stmt, "UPDATE runs SET parent_id"); i >= 0 {
			return stmt[i:]
		}
	}
	t.Fatalf("%s fills no parent_id", path)
	return ""
}
