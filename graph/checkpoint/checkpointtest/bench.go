package checkpointtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/graph"
)

// answerFields are the fields the agent's answer changes in one
// checkpoint, in the agent's own order; the first holds the answer's
// message, the rest are small.
var answerFields = []string{"Messages", "Turn", "Decision", "Iteration", "Actions",
	"Usage", "TurnUsage", "Brief", "FinalResponse", "Outcome"}

// BenchmarkPutAnswer measures a Put of a checkpoint that changes ten
// fields, the way the agent's answer does, on threads that already hold
// prior such checkpoints each: what a turn of a long conversation pays
// to store its answer. The threads take turns, as the conversations of
// several clients do.
func BenchmarkPutAnswer(b *testing.B, s graph.Checkpointer, threads, prior int) {
	ctx := b.Context()
	message := []byte(`[{"role":"assistant","content":"` + strings.Repeat("an answer of a few sentences ", 10) + `"}]`)
	small := []byte(`{"n":1,"text":"a short value"}`)
	put := func(thread string, n int) {
		id := fmt.Sprintf("%010d", n)
		cp := graph.Checkpoint{ThreadID: thread, ID: id, Step: n, Source: graph.SourceLoop,
			CreatedAt: time.Now(), Versions: make(map[string]string, len(answerFields))}
		blobs := make([]graph.Blob, len(answerFields))
		for i, f := range answerFields {
			cp.Versions[f] = id
			blobs[i] = graph.Blob{Field: f, Version: id, Data: small}
		}
		blobs[0].Data = message
		if err := s.Put(ctx, cp, blobs); err != nil {
			b.Fatal(err)
		}
	}
	for n := range prior {
		for t := range threads {
			put(fmt.Sprint("thread-", t), n)
		}
	}
	b.ReportAllocs()
	n := prior * threads
	for b.Loop() {
		put(fmt.Sprint("thread-", n%threads), n)
		n++
	}
}
