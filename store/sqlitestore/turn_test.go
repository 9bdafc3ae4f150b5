package sqlitestore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/internal/sqlopen"
	"github.com/trellis-ai/trellis/internal/turnbench"
	"github.com/trellis-ai/trellis/store/storetest"
)

func BenchmarkTurnRecord(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "bench.db"))
	cpu := turnbench.CPU(b)
	storetest.BenchmarkTurnRecord(b, s)
	turnbench.ReportCPU(b, cpu)
}

// floorSchema holds a turn's facts with nothing else: a table a fact,
// keyed and no more indexed than that.
const floorSchema = `
CREATE TABLE conversations (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE runs (id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, user_id TEXT NOT NULL, owner TEXT NOT NULL,
    status TEXT NOT NULL, user_message TEXT NOT NULL, input TEXT NOT NULL, usage TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL, completed_at TEXT);
CREATE TABLE messages (id TEXT PRIMARY KEY, run_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID;`

// BenchmarkTurnRecordFloor stores what BenchmarkTurnRecord does with the
// fewest statements: the run and the user's message in one transaction,
// the run's end, the answer and the events, one row for all, in another,
// on a database opened as the store's are (internal/sqlopen: WAL,
// synchronous=NORMAL, statements prepared once), each transaction
// committed on its own rather than through a group-commit writer.
func BenchmarkTurnRecordFloor(b *testing.B) {
	ctx := b.Context()
	db, err := sqlopen.SQLite(filepath.Join(b.TempDir(), "floor.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, floorSchema); err != nil {
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
		run, now := ids.New(), time.Now().UTC().Format(time.RFC3339Nano)
		err := floorTx(ctx, db, func(tx *sql.Tx) error {
			if i%8 == 0 {
				conversation = ids.New()
				if _, err := tx.ExecContext(ctx, `INSERT INTO conversations (id, user_id, created_at) VALUES (?, ?, ?)`,
					conversation, "bench", now); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO runs (id, conversation_id, user_id, owner, status, user_message, input, created_at)
VALUES (?, ?, ?, ?, 'running', ?, ?, ?)`, run, conversation, "bench", "bench-process", turn.UserMessage, string(turn.Input), now); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO messages (id, run_id, role, content, created_at) VALUES (?, ?, 'user', ?, ?)`,
				ids.New(), run, turn.UserMessage, now)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		err = floorTx(ctx, db, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'completed', usage = ?, completed_at = ? WHERE id = ?`,
				string(usage), now, run); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO messages (id, run_id, role, content, created_at) VALUES (?, ?, 'assistant', ?, ?)`,
				ids.New(), run, turn.Answer, now); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO events (run_id, seq, data) VALUES (?, 1, ?)`, run, events)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	turnbench.ReportCPU(b, cpu)
}

func floorTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
