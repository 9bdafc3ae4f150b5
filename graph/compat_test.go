package graph_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/postgres"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/internal/pgtest"
)

// The stores in testdata/compat were written by the checkpoint format of
// commit b50dd28, in which every append field is one long chain of
// deltas back to its first full value. They stand for the databases
// deployed before that changed: TestCompatFixtures proves today's code
// reads them back equal and carries their threads on.
//
// -compat-write rewrites them with the code under test. Do it only to
// freeze a format that is about to change, never to make a failure pass:
// the old fixtures would stop being tested.
var compatWrite = flag.Bool("compat-write", false, "rewrite testdata/compat with the code under test")

const compatDir = "testdata/compat"

type compatMsg struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

type compatState struct {
	Messages []compatMsg    `json:"messages,omitempty"`
	Turns    int            `json:"turns"`
	Last     string         `json:"last,omitempty"`
	Tags     map[string]int `json:"tags,omitempty"`
}

// compatGraph is a two-node chat turn: "user" appends the input as a
// message (or, for the input "ask", waits for an answer first), "reply"
// appends an answer, keeping threads in a cache within limits.
func compatGraph(t testing.TB, cp graph.Checkpointer, limits graph.ThreadCacheLimits) *graph.Compiled[compatState] {
	g := graph.New[compatState](
		graph.Append(func(s *compatState) *[]compatMsg { return &s.Messages }),
		graph.Sum(func(s *compatState) *int { return &s.Turns }),
		graph.Merge(func(s *compatState) *map[string]int { return &s.Tags }),
	)
	g.AddNode("user", func(ctx context.Context, s compatState) (compatState, error) {
		text := s.Last
		if text == "ask" {
			answer, err := graph.Interrupt[string](ctx, "what do you mean?")
			if err != nil {
				return compatState{}, err
			}
			text = "ask: " + answer
		}
		return compatState{Messages: []compatMsg{{"user", text}}, Turns: 1}, nil
	})
	g.AddNode("reply", func(ctx context.Context, s compatState) (compatState, error) {
		return compatState{Messages: []compatMsg{{"assistant", "re: " + s.Last}}, Tags: map[string]int{"messages": len(s.Messages)}}, nil
	})
	g.AddEdge(graph.START, "user")
	g.AddEdge("user", "reply")
	g.AddEdge("reply", graph.END)
	c, err := g.Compile(graph.CompileOptions{Checkpointer: cp, ThreadCache: limits})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// compatThreads lists the fixtures' threads: "long" has 25 turns, then a
// fork from the end of turn 12 and a turn on it; "parked" has 3 turns and
// waits on an interrupt in the fourth.
var compatThreads = []string{"long", "parked"}

func writeCompatThreads(t *testing.T, c *graph.Compiled[compatState]) {
	ctx := t.Context()
	turn := func(thread, text string) error {
		_, err := c.Invoke(ctx, &compatState{Last: text}, graph.RunConfig{ThreadID: thread})
		return err
	}
	for i := range 25 {
		if err := turn("long", fmt.Sprint("turn ", i)); err != nil {
			t.Fatal(err)
		}
	}
	hist, err := c.History(ctx, "long", graph.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var at string
	for _, s := range hist {
		if s.Values.Turns == 13 && len(s.Next) == 0 && at == "" {
			at = s.Checkpoint.ID
		}
	}
	if _, err := c.UpdateState(ctx, graph.Ref{ThreadID: "long", ID: at}, "reply", graph.Command[compatState]{Update: compatState{Last: "edited"}}); err != nil {
		t.Fatal(err)
	}
	if err := turn("long", "after the fork"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := turn("parked", fmt.Sprint("turn ", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := turn("parked", "ask"); !isInterrupt(err) {
		t.Fatalf("parked: %v", err)
	}
}

func isInterrupt(err error) bool {
	_, ok := errors.AsType[*graph.InterruptError](err)
	return ok
}

// compatHistory is every thread's full history as JSON: what the fixtures
// must keep reading back.
func compatHistory(t *testing.T, c *graph.Compiled[compatState]) []byte {
	all := map[string][]graph.Snapshot[compatState]{}
	for _, th := range compatThreads {
		h, err := c.History(t.Context(), th, graph.HistoryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		all[th] = h
	}
	b, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCompatFixtures(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "v1.sqlite")
		if *compatWrite {
			s, err := sqlite.Open(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			writeCompatThreads(t, compatGraph(t, s, graph.ThreadCacheLimits{}))
			writeFile(t, filepath.Join(compatDir, "v1-sqlite-history.json"), compatHistory(t, compatGraph(t, s, graph.ThreadCacheLimits{})))
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			copyFile(t, filepath.Join(compatDir, "v1.sqlite"), path)
		}
		copyFile(t, path, filepath.Join(compatDir, "v1.sqlite"))
		s, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		checkCompat(t, s, filepath.Join(compatDir, "v1-sqlite-history.json"))
	})
	t.Run("postgres", func(t *testing.T) {
		pool := pgtest.New(t)
		s, err := postgres.New(t.Context(), pool)
		if err != nil {
			t.Fatal(err)
		}
		if *compatWrite {
			writeCompatThreads(t, compatGraph(t, s, graph.ThreadCacheLimits{}))
			writeFile(t, filepath.Join(compatDir, "v1-postgres-history.json"), compatHistory(t, compatGraph(t, s, graph.ThreadCacheLimits{})))
			writeFile(t, filepath.Join(compatDir, "v1-postgres.sql"), dumpPostgres(t, pool))
			pool = pgtest.New(t)
			if s, err = postgres.New(t.Context(), pool); err != nil {
				t.Fatal(err)
			}
		}
		loadPostgres(t, pool, filepath.Join(compatDir, "v1-postgres.sql"))
		checkCompat(t, s, filepath.Join(compatDir, "v1-postgres-history.json"))
	})
}

// checkCompat reads a fixture's threads back and carries them on: a turn
// on the long thread, a fork from its first checkpoint, and the answer the
// parked thread waits for.
func checkCompat(t *testing.T, cp graph.Checkpointer, historyFile string) {
	ctx := t.Context()
	c := compatGraph(t, cp, graph.ThreadCacheLimits{})
	want, err := os.ReadFile(historyFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := compatHistory(t, c); !bytes.Equal(got, want) {
		t.Fatalf("history read back differs from %s:\n%s", historyFile, firstDiff(got, want))
	}
	var hist map[string][]graph.Snapshot[compatState]
	if err := json.Unmarshal(want, &hist); err != nil {
		t.Fatal(err)
	}
	long := hist["long"][0].Values
	out, err := c.Invoke(ctx, &compatState{Last: "one more"}, graph.RunConfig{ThreadID: "long"})
	if err != nil {
		t.Fatal(err)
	}
	wantMsgs := append(slices.Clone(long.Messages), compatMsg{"user", "one more"}, compatMsg{"assistant", "re: one more"})
	if !slices.Equal(out.Messages, wantMsgs) || out.Turns != long.Turns+1 {
		t.Fatalf("turn on the old thread: %+v", out)
	}
	// That turn merged the old one-blob-a-step chain into one blob, and
	// the thread reads back the same through it.
	saved, err := cp.Get(ctx, graph.Ref{ThreadID: "long"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range saved.Blobs {
		if b.Field == "Messages" {
			n++
		}
	}
	if n > 3 { // the first full one, the merged one, the turn's second step
		t.Errorf("after a turn, the old thread reads %d blobs of Messages back", n)
	}
	snap, err := c.GetState(ctx, graph.Ref{ThreadID: "long"})
	if err != nil || !slices.Equal(snap.Values.Messages, wantMsgs) {
		t.Fatalf("the old thread read back after a turn: %+v, %v", snap.Values.Messages, err)
	}
	after, err := c.History(ctx, "long", graph.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gotOld, _ := json.Marshal(after[3:]) // the turn wrote its input and two steps
	wantOld, _ := json.Marshal(hist["long"])
	if !bytes.Equal(gotOld, wantOld) {
		t.Fatalf("the old checkpoints read back differently after a turn:\n%s", firstDiff(gotOld, wantOld))
	}
	oldest := hist["long"][len(hist["long"])-1].Checkpoint.ID
	forked, err := c.Invoke(ctx, &compatState{Last: "from the start"}, graph.RunConfig{ThreadID: "long", CheckpointID: oldest})
	if err != nil {
		t.Fatal(err)
	}
	if len(forked.Messages) != 2 || forked.Turns != 1 {
		t.Fatalf("fork from the first checkpoint: %+v", forked)
	}
	parked := hist["parked"][0].Values
	out, err = c.Invoke(ctx, nil, graph.RunConfig{ThreadID: "parked", Resume: "this"})
	if err != nil {
		t.Fatal(err)
	}
	wantMsgs = append(slices.Clone(parked.Messages), compatMsg{"user", "ask: this"}, compatMsg{"assistant", "re: ask"})
	if !slices.Equal(out.Messages, wantMsgs) {
		t.Fatalf("resume of the parked thread: %+v", out.Messages)
	}
}

func firstDiff(got, want []byte) string {
	n := min(len(got), len(want))
	i := 0
	for i < n && got[i] == want[i] {
		i++
	}
	lo := max(0, i-200)
	return fmt.Sprintf("at byte %d\ngot:  …%s\nwant: …%s", i, got[lo:min(len(got), i+200)], want[lo:min(len(want), i+200)])
}

// dumpPostgres writes the saver's rows as INSERT statements, one a line,
// quoted by PostgreSQL itself.
func dumpPostgres(t *testing.T, pool *pgxpool.Pool) []byte {
	var out bytes.Buffer
	for _, q := range []string{
		`SELECT format('INSERT INTO checkpoints VALUES (%L, %L, %L, %L, %s, %L, %L, %L);',
			thread_id, ns, checkpoint_id, parent_id, step, source, created_at, body)
		 FROM checkpoints ORDER BY thread_id, ns, checkpoint_id`,
		`SELECT format('INSERT INTO checkpoint_blobs VALUES (%L, %L, %L, %L, %L, %L, %L);',
			thread_id, ns, field, version, delta, base, data)
		 FROM checkpoint_blobs ORDER BY thread_id, ns, field, version`,
		`SELECT format('INSERT INTO checkpoint_writes VALUES (%L, %L, %L, %L, %s, %L, %L);',
			thread_id, ns, checkpoint_id, task_id, idx, channel, value)
		 FROM checkpoint_writes ORDER BY thread_id, ns, checkpoint_id, task_id, idx`,
	} {
		rows, err := pool.Query(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(line, "\n") {
				t.Fatalf("a dumped row spans lines: %s", line)
			}
			out.WriteString(line + "\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

func loadPostgres(t *testing.T, pool *pgxpool.Pool, file string) {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if _, err := tx.Exec(t.Context(), sc.Text()); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, dst, src string) {
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
