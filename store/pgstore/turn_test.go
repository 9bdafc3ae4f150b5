package pgstore_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/internal/turnbench"
	"github.com/trellis-ai/trellis/store/storetest"
)

// The CPU time a turn (cpu-ms/turn) is the Go process's alone, as the
// README's scale section counts it on PostgreSQL; the time a turn takes
// (ns/op) holds the database server's too.
func BenchmarkTurnRecord(b *testing.B) {
	s := newStore(b)
	cpu := turnbench.CPU(b)
	storetest.BenchmarkTurnRecord(b, s)
	turnbench.ReportCPU(b, cpu)
}

// floorSchema holds a turn's facts with nothing else: a table a fact,
// keyed and no more indexed than that.
const floorSchema = `
CREATE TABLE conversations (id UUID PRIMARY KEY, user_id TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL);
CREATE TABLE runs (id UUID PRIMARY KEY, conversation_id UUID NOT NULL, user_id TEXT NOT NULL, owner TEXT NOT NULL,
    status TEXT NOT NULL, user_message TEXT NOT NULL, input JSONB NOT NULL, usage JSONB NOT NULL DEFAULT '{}',
    created_at TIMESTAMPTZ NOT NULL, completed_at TIMESTAMPTZ);
CREATE TABLE messages (id UUID PRIMARY KEY, run_id UUID NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL);
CREATE TABLE events (run_id UUID NOT NULL, seq BIGINT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, seq));`

// BenchmarkTurnRecordFloor stores what BenchmarkTurnRecord does with the
// fewest statements and round trips: the run and the user's message in
// one transaction, the run's end, the answer and the events, one row for
// all, in another, each transaction sent whole in one batch.
func BenchmarkTurnRecordFloor(b *testing.B) {
	ctx := b.Context()
	pool := pgtest.New(b)
	if _, err := pool.Exec(ctx, floorSchema); err != nil {
		b.Fatal(err)
	}
	turn := storetest.LoadTurn()
	events := turn.Batch()
	usage, err := json.Marshal(turn.Usage)
	if err != nil {
		b.Fatal(err)
	}
	conversation := ""
	b.ReportAllocs()
	cpu := turnbench.CPU(b)
	for i := 0; b.Loop(); i++ {
		run, now := ids.New(), time.Now()
		start := &pgx.Batch{}
		start.Queue(`BEGIN`)
		if i%8 == 0 {
			conversation = ids.New()
			start.Queue(`INSERT INTO conversations (id, user_id, created_at) VALUES ($1, $2, $3)`, conversation, "bench", now)
		}
		start.Queue(`INSERT INTO runs (id, conversation_id, user_id, owner, status, user_message, input, created_at)
VALUES ($1, $2, $3, $4, 'running', $5, $6, $7)`, run, conversation, "bench", "bench-process", turn.UserMessage, string(turn.Input), now)
		start.Queue(`INSERT INTO messages (id, run_id, role, content, created_at) VALUES ($1, $2, 'user', $3, $4)`,
			ids.New(), run, turn.UserMessage, now)
		start.Queue(`COMMIT`)
		if err := pool.SendBatch(ctx, start).Close(); err != nil {
			b.Fatal(err)
		}
		end := &pgx.Batch{}
		end.Queue(`BEGIN`)
		end.Queue(`UPDATE runs SET status = 'completed', usage = $1, completed_at = $2 WHERE id = $3`, string(usage), now, run)
		end.Queue(`INSERT INTO messages (id, run_id, role, content, created_at) VALUES ($1, $2, 'assistant', $3, $4)`,
			ids.New(), run, turn.Answer, now)
		end.Queue(`INSERT INTO events (run_id, seq, data) VALUES ($1, 1, $2)`, run, events)
		end.Queue(`COMMIT`)
		if err := pool.SendBatch(ctx, end).Close(); err != nil {
			b.Fatal(err)
		}
	}
	turnbench.ReportCPU(b, cpu)
}
