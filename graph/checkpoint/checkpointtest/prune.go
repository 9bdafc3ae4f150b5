package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/trellis-ai/trellis/graph"
)

// snapshot is every checkpoint of a thread namespace as Get returns it,
// by id, with List's order.
type snapshot struct {
	order []string
	saved map[string]*graph.Saved
}

func take(t *testing.T, s graph.Checkpointer, thread, ns string) snapshot {
	t.Helper()
	cps, err := s.List(t.Context(), graph.ListOptions{ThreadID: thread, Namespace: ns})
	if err != nil {
		t.Fatalf("List %s/%s: %v", thread, ns, err)
	}
	snap := snapshot{order: ids(cps), saved: make(map[string]*graph.Saved)}
	for _, cp := range cps {
		snap.saved[cp.ID] = get(t, s, graph.Ref{ThreadID: thread, Namespace: ns, ID: cp.ID})
	}
	return snap
}

// same fails unless every checkpoint of after is in before, loaded back
// identical: the checkpoint, every blob of its chains byte for byte, and
// its pending writes.
func same(t *testing.T, what string, before, after snapshot) {
	t.Helper()
	for _, id := range after.order {
		b, a := before.saved[id], after.saved[id]
		if b == nil {
			t.Errorf("%s: checkpoint %s appeared", what, id)
			continue
		}
		checkCheckpoint(t, a.Checkpoint, b.Checkpoint)
		checkBlobs(t, what+" "+id, a.Blobs, b.Blobs...)
		checkWrites(t, what+" "+id, a.Writes, b.Writes...)
	}
}

// testPrune builds a thread whose main branch and a fork share one delta
// chain, with a pending interrupt at the head, and checks that a prune
// keeping 2 per branch drops exactly what no branch needs and that every
// kept checkpoint loads back byte-identical.
func testPrune(t *testing.T, s graph.Checkpointer) {
	p := asPruner(t, s)
	ctx := t.Context()
	// Main branch 01..08: msgs is a delta chain from 01's full value, with
	// 06 merging 04..06 onto 03 as the engine does to keep chains short;
	// y is replaced each step; x never changes after 01.
	var parent string
	for i := 1; i <= 8; i++ {
		id := fmt.Sprintf("%02d", i)
		v := fmt.Sprint(i)
		cp := checkpoint(id, map[string]string{"msgs": v, "x": "1", "y": v})
		cp.ParentID, cp.Step = parent, i
		msgs := delta("msgs", v, fmt.Sprint(i-1), "[m"+v+"]")
		switch i {
		case 1:
			msgs = blob("msgs", v, "[m1]")
		case 6:
			msgs = delta("msgs", v, "3", "[m4,m5,m6]")
		}
		bl := []graph.Blob{msgs, blob("y", v, "y"+v)}
		if i == 1 {
			bl = append(bl, blob("x", "1", "x"))
		}
		put(t, s, cp, bl...)
		parent = id
	}
	// A fork from 03, as an edited turn makes, with a delta on 03's value.
	fork := checkpoint("09", map[string]string{"msgs": "3f", "x": "1", "y": "9"})
	fork.ParentID, fork.Source = "03", graph.SourceFork
	put(t, s, fork, delta("msgs", "3f", "3", "[m3f]"), blob("y", "9", "y9"))
	// A pending interrupt at the head, and an answered one on a dropped
	// checkpoint.
	putWrites(t, s, graph.Ref{ThreadID: "t", ID: "08"},
		graph.Write{TaskID: "a", Channel: graph.ChannelInterrupt, Value: []byte(`"approve?"`)})
	putWrites(t, s, graph.Ref{ThreadID: "t", ID: "02"},
		graph.Write{TaskID: "a", Channel: graph.ChannelInterrupt, Value: []byte(`"old"`)},
		graph.Write{TaskID: "a", Index: 1, Channel: graph.ChannelResume, Value: []byte(`"yes"`)})
	// Another thread with one checkpoint in a subgraph namespace.
	other := checkpoint("01", map[string]string{"f": "1"})
	other.ThreadID, other.Namespace = "u", "node:task"
	put(t, s, other, blob("f", "1", "f"))

	before, beforeOther := take(t, s, "t", ""), take(t, s, "u", "node:task")

	if _, err := p.Prune(ctx, graph.PruneOptions{Keep: 0}); err == nil {
		t.Error("Prune with Keep 0: no error")
	}
	dry, err := p.Prune(ctx, graph.PruneOptions{Keep: 2, DryRun: true})
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	afterDry := take(t, s, "t", "")
	if !slices.Equal(afterDry.order, before.order) {
		t.Errorf("dry run changed the thread: %v, was %v", afterDry.order, before.order)
	}
	same(t, "after dry run", before, afterDry)

	got, err := p.Prune(ctx, graph.PruneOptions{Keep: 2})
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	// Kept: the main head 08 and 07, the fork's head 09 and its parent 03.
	// msgs 1..3 stay as the base of every kept chain; 4 and 5 went into
	// 6's merged delta; y keeps only the kept checkpoints' versions.
	const droppedBlobs = 2 + 5 // msgs 4, 5; y 1, 2, 4, 5, 6
	if got.Threads != 1 || got.Checkpoints != 5 || got.Writes != 2 || got.Blobs != droppedBlobs || got.Bytes <= 0 {
		t.Errorf("Prune = %+v, want 1 thread, 5 checkpoints, 2 writes, %d blobs, some bytes", got, droppedBlobs)
	}
	if got != dry {
		t.Errorf("Prune = %+v, dry run said %+v", got, dry)
	}
	after := take(t, s, "t", "")
	if want := []string{"09", "08", "07", "03"}; !slices.Equal(after.order, want) {
		t.Errorf("kept %v, want %v", after.order, want)
	}
	same(t, "after prune", before, after)
	if w := after.saved["08"].Writes; len(w) != 1 || w[0].Channel != graph.ChannelInterrupt {
		t.Errorf("head's pending interrupt: writes %s", writeString(w))
	}
	for _, id := range []string{"01", "02", "04", "05", "06"} {
		if _, err := s.Get(ctx, graph.Ref{ThreadID: "t", ID: id}); !errors.Is(err, graph.ErrCheckpointNotFound) {
			t.Errorf("Get dropped %s: err %v, want ErrCheckpointNotFound", id, err)
		}
	}
	if afterOther := take(t, s, "u", "node:task"); !reflect.DeepEqual(afterOther.order, beforeOther.order) {
		t.Errorf("thread u: %v, was %v", afterOther.order, beforeOther.order)
	} else {
		same(t, "thread u", beforeOther, afterOther)
	}

	// The thread goes on from its head, and a second prune finds nothing.
	next := checkpoint("10", map[string]string{"msgs": "10", "x": "1", "y": "8"})
	next.ParentID = "08"
	put(t, s, next, delta("msgs", "10", "8", "[m10]"))
	if again, err := p.Prune(ctx, graph.PruneOptions{Keep: 4}); err != nil || again != (graph.PruneStats{}) {
		t.Errorf("second Prune = %+v, %v; want nothing", again, err)
	}
	checkGet(t, s, "10",
		blob("msgs", "1", "[m1]"), delta("msgs", "2", "1", "[m2]"), delta("msgs", "3", "2", "[m3]"),
		delta("msgs", "6", "3", "[m4,m5,m6]"), delta("msgs", "7", "6", "[m7]"), delta("msgs", "8", "7", "[m8]"),
		delta("msgs", "10", "8", "[m10]"), blob("x", "1", "x"), blob("y", "8", "y8"))
}

type chat struct {
	Log []string
}

// newChat compiles a graph whose one node answers each message, and asks
// for approval first when the message is "ask".
func newChat(t *testing.T, s graph.Checkpointer) *graph.Compiled[chat] {
	t.Helper()
	g := graph.New[chat](graph.Append(func(s *chat) *[]string { return &s.Log }))
	g.AddNode("turn", func(ctx context.Context, s chat) (chat, error) {
		if s.Log[len(s.Log)-1] == "ask" {
			ok, err := graph.Interrupt[string](ctx, "go on?")
			if err != nil {
				return chat{}, err
			}
			return chat{Log: []string{"approved " + ok}}, nil
		}
		return chat{Log: []string{fmt.Sprintf("reply %d", len(s.Log))}}, nil
	})
	g.AddEdge(graph.START, "turn")
	g.AddEdge("turn", graph.END)
	c, err := g.Compile(graph.CompileOptions{Checkpointer: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// states encodes the state of every checkpoint of the thread, by id.
func states(t *testing.T, c *graph.Compiled[chat]) map[string]string {
	t.Helper()
	hist, err := c.History(t.Context(), "conv", graph.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(hist))
	for _, snap := range hist {
		b, err := json.Marshal(snap.Values)
		if err != nil {
			t.Fatal(err)
		}
		out[snap.Checkpoint.ID] = string(b)
	}
	return out
}

// testPruneEngine runs a long conversation through the
// engine, with a fork and a pending interrupt, prunes it, and checks with a
// fresh engine (nothing cached) that every kept checkpoint decodes to the
// same state, the interrupt resumes and the fork goes on.
func testPruneEngine(t *testing.T, s graph.Checkpointer) {
	p := asPruner(t, s)
	ctx := t.Context()
	c := newChat(t, s)
	cfg := graph.RunConfig{ThreadID: "conv"}
	var forkFrom string
	for i := range 120 {
		if _, err := c.Invoke(ctx, &chat{Log: []string{fmt.Sprint("message ", i)}}, cfg); err != nil {
			t.Fatal(err)
		}
		if i == 40 {
			snap, err := c.GetState(ctx, graph.Ref{ThreadID: "conv"})
			if err != nil {
				t.Fatal(err)
			}
			forkFrom = snap.Checkpoint.ID
		}
	}
	main, err := c.GetState(ctx, graph.Ref{ThreadID: "conv"})
	if err != nil {
		t.Fatal(err)
	}
	mainHead := main.Checkpoint.ID
	// An edited turn: a branch from turn 40's end, three turns long,
	// which becomes the thread's newest.
	fork := graph.RunConfig{ThreadID: "conv", CheckpointID: forkFrom}
	for i := range 3 {
		if _, err := c.Invoke(ctx, &chat{Log: []string{fmt.Sprint("edited ", i)}}, fork); err != nil {
			t.Fatal(err)
		}
		snap, err := c.GetState(ctx, graph.Ref{ThreadID: "conv"})
		if err != nil {
			t.Fatal(err)
		}
		fork.CheckpointID = snap.Checkpoint.ID
	}
	// The thread goes on from its newest, the fork, and stops at an
	// approval.
	if _, err := c.Invoke(ctx, &chat{Log: []string{"ask"}}, cfg); !errors.As(err, new(*graph.InterruptError)) {
		t.Fatalf("ask: %v, want an interrupt", err)
	}
	before := states(t, c)

	st, err := p.Prune(ctx, graph.PruneOptions{Keep: 3})
	if err != nil || st.Checkpoints == 0 {
		t.Fatalf("Prune = %+v, %v", st, err)
	}
	fresh := newChat(t, s)
	after := states(t, fresh)
	if len(after) >= len(before) {
		t.Fatalf("%d checkpoints kept of %d", len(after), len(before))
	}
	for id, state := range after {
		if before[id] != state {
			t.Errorf("checkpoint %s:\n got %s\nwant %s", id, state, before[id])
		}
	}
	if _, ok := after[mainHead]; !ok {
		t.Errorf("the head %s of the branch the edit left was pruned", mainHead)
	}

	cfg.Resume = "yes"
	out, err := fresh.Invoke(ctx, nil, cfg)
	if err != nil {
		t.Fatalf("resume after prune: %v", err)
	}
	if want := []string{"message 40", "reply 81", "edited 0"}; len(out.Log) != 90 || !slices.Equal(out.Log[80:83], want) || out.Log[89] != "approved yes" {
		t.Errorf("resumed state: %d entries, %q…", len(out.Log), out.Log[80:])
	}
	out, err = fresh.Invoke(ctx, &chat{Log: []string{"more"}}, graph.RunConfig{ThreadID: "conv", CheckpointID: mainHead})
	if err != nil {
		t.Fatalf("go on from the left branch after prune: %v", err)
	}
	if len(out.Log) != 242 || out.Log[239] != "reply 239" || out.Log[241] != "reply 241" {
		t.Errorf("left branch's state: %d entries, ends %q", len(out.Log), out.Log[len(out.Log)-3:])
	}
}

// testPrunePins runs a long conversation, pins the checkpoints two early
// turns started from, as a caller that knows its turns' starts does, and checks that a prune
// keeps them with the state they had, that an edit forks from each, and
// that a failing Pinned stops the prune before it deletes anything.
func testPrunePins(t *testing.T, s graph.Checkpointer) {
	p := asPruner(t, s)
	ctx := t.Context()
	c := newChat(t, s)
	cfg := graph.RunConfig{ThreadID: "conv"}
	var starts []string
	for i := range 60 {
		if i > 0 {
			snap, err := c.GetState(ctx, graph.Ref{ThreadID: "conv"})
			if err != nil {
				t.Fatal(err)
			}
			starts = append(starts, snap.Checkpoint.ID)
		}
		if _, err := c.Invoke(ctx, &chat{Log: []string{fmt.Sprint("message ", i)}}, cfg); err != nil {
			t.Fatal(err)
		}
	}
	pinned := []string{starts[4], starts[19], "no-such-checkpoint"}
	before := states(t, c)

	broken := errors.New("record unavailable")
	opts := graph.PruneOptions{Keep: 2, Pinned: func(context.Context, string) ([]string, error) { return nil, broken }}
	if _, err := p.Prune(ctx, opts); !errors.Is(err, broken) {
		t.Fatalf("Prune with a failing Pinned = %v, want %v", err, broken)
	}
	if n := len(states(t, newChat(t, s))); n != len(before) {
		t.Fatalf("a failed Prune left %d checkpoints of %d", n, len(before))
	}

	var asked []string
	opts.Pinned = func(_ context.Context, thread string) ([]string, error) {
		asked = append(asked, thread)
		if thread != "conv" {
			return nil, nil
		}
		return pinned, nil
	}
	if _, err := p.Prune(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(asked, "conv") {
		t.Errorf("Pinned asked for %q, never the pruned thread", asked)
	}
	fresh := newChat(t, s)
	after := states(t, fresh)
	if len(after) >= len(before) {
		t.Fatalf("%d checkpoints kept of %d", len(after), len(before))
	}
	if _, ok := after[starts[10]]; ok {
		t.Errorf("unpinned old checkpoint %s was kept", starts[10])
	}
	for i, id := range pinned[:2] {
		if after[id] != before[id] {
			t.Errorf("pinned checkpoint %d (%s): got %q, want %q", i, id, after[id], before[id])
		}
	}
	// Edit the sixth turn: it started from starts[4], after five turns of
	// two entries each.
	out, err := fresh.Invoke(ctx, &chat{Log: []string{"edited"}}, graph.RunConfig{ThreadID: "conv", CheckpointID: starts[4]})
	if err != nil {
		t.Fatalf("fork from a pinned checkpoint after prune: %v", err)
	}
	if want := []string{"message 0", "reply 1", "message 1", "reply 3", "message 2", "reply 5", "message 3", "reply 7", "message 4", "reply 9", "edited", "reply 11"}; !slices.Equal(out.Log, want) {
		t.Errorf("forked state %q, want %q", out.Log, want)
	}
}

// asPruner skips the test unless s is a graph.Pruner.
func asPruner(t *testing.T, s graph.Checkpointer) graph.Pruner {
	t.Helper()
	p, ok := s.(graph.Pruner)
	if !ok {
		t.Skip("saver does not implement graph.Pruner")
	}
	return p
}
