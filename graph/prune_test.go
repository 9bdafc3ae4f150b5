package graph_test

import (
	"slices"
	"testing"

	"github.com/trellis-ai/trellis/graph"
)

// A prune's stats count what its plan drops: each dropped checkpoint's
// bytes (its writes' included) and pending writes, each dropped blob's
// bytes, and the namespace once.
func TestPruneReadPlanCounts(t *testing.T) {
	r := graph.PruneRead{
		Nodes: []graph.PruneNode{
			{ID: "a", Versions: map[string]string{"x": "1"}},
			{ID: "b", ParentID: "a", Versions: map[string]string{"x": "2"}},
			{ID: "c", ParentID: "b", Versions: map[string]string{"x": "3"}},
		},
		Blobs:     []graph.PruneBlob{{Field: "x", Version: "1"}, {Field: "x", Version: "2"}, {Field: "x", Version: "3"}},
		Sizes:     map[string]int64{"a": 10, "b": 20, "c": 40},
		BlobSizes: []int64{100, 200, 400},
		Writes:    map[string]int{"b": 2, "c": 5},
	}
	ids, blobs, st := r.Plan(1)
	slices.Sort(ids)
	slices.Sort(blobs)
	if !slices.Equal(ids, []string{"a", "b"}) || !slices.Equal(blobs, []int{0, 1}) {
		t.Fatalf("dropped %v and blobs %v, want [a b] and [0 1]", ids, blobs)
	}
	want := graph.PruneStats{Threads: 1, Checkpoints: 2, Blobs: 2, Writes: 2, Bytes: 10 + 20 + 100 + 200}
	if st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
	if _, _, st := r.Plan(3); st != (graph.PruneStats{}) {
		t.Errorf("keeping all: stats %+v, want none", st)
	}
}
