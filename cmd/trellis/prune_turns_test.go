package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/graph/checkpoint/postgres"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/internal/sqlopen"
)

// BenchmarkPruneTurns measures pruning through real turns: POST
// /api/v1/chat/sync, one turn at a time, against the server `trellis
// serve` runs (startBenchServe: its wiring, memory on, the offline model,
// every third message a calculator call), in two shapes: one conversation
// of 10,000 turns, and 1,000 conversations of 10 turns. Pruning is off,
// or `trellis prune --keep 50` runs beside the server after every 1,000
// turns (a tenth of them). It reports the checkpoints' bytes stored (as
// trellis_checkpoint_bytes counts them), the checkpoints' tables on disk
// (SQLite: checkpoints.db and its WAL, written back first; PostgreSQL: pg_total_relation_size
// of the three tables), the whole database on disk (SQLite: every
// database and WAL in the data directory; PostgreSQL: every table of the
// schema), the mean time of a turn over the first and the last 100 turns,
// and the prunes' time. Then it checks that every turn still has the
// input checkpoint an edit forks from, and edits the turn 100 turns back
// (the first turn of the first conversation in the short shape). Run one
// at a time, each alone on the machine:
//
//	go test ./cmd/trellis -run '^$' -bench 'PruneTurns/sqlite' -benchtime 1x -timeout 0
//
// TRELLIS_MEASURE_TURNS shortens both shapes: that many turns of the
// long conversation, and a tenth as many conversations of 10 turns.
func BenchmarkPruneTurns(b *testing.B) {
	turns := 10000
	if s := os.Getenv("TRELLIS_MEASURE_TURNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 {
			b.Fatalf("TRELLIS_MEASURE_TURNS=%q: want a number of turns, at least 100", s)
		}
		turns = n
	}
	const keep, window = 50, 100
	every := turns / 10
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, shape := range []struct {
			name         string
			convs, turns int
		}{{fmt.Sprintf("1x%d", turns), 1, turns}, {fmt.Sprintf("%dx10", turns/10), turns / 10, 10}} {
			for _, k := range []int{0, keep} {
				b.Run(fmt.Sprintf("%s/%s/keep=%d", backend, shape.name, k), func(b *testing.B) {
					for b.Loop() {
						m := startMeasuredServe(b, backend)
						d := turnDriver{b: b, url: m.url, client: &http.Client{}}
						var conv []string // the conversations, in order
						var runs []string // the long conversation's runs
						var pruneTime time.Duration
						times := make([]time.Duration, 0, shape.convs*shape.turns)
						for c := range shape.convs {
							id := ""
							for t := range shape.turns {
								msg := fmt.Sprintf("turn %d of conversation %d: tell me about the shed", t+1, c+1)
								if t%3 == 2 {
									msg = fmt.Sprintf("what is %d+7?", t+1)
								}
								start := time.Now()
								r := d.turn(id, msg)
								times = append(times, time.Since(start))
								if id == "" {
									id = r.ConversationID
									conv = append(conv, id)
								}
								if shape.convs == 1 {
									runs = append(runs, r.RunID)
								}
								if k > 0 && len(times)%every == 0 {
									pruneTime += m.prune(k)
								}
							}
						}
						if inputs, n := m.query(`SELECT count(*) FROM checkpoints WHERE ns = '' AND source = 'input'`), int64(len(times)); inputs != n {
							b.Errorf("%d input checkpoints for %d turns: some turns cannot be edited", inputs, n)
						}
						m.report()
						b.ReportMetric(float64(m.query(`SELECT count(*) FROM checkpoints`)), "checkpoints")
						first, last := meanTime(times[:window]), meanTime(times[len(times)-window:])
						b.ReportMetric(ms(first), "ms/turn-first")
						b.ReportMetric(ms(last), "ms/turn-last")
						b.ReportMetric(float64(last)/float64(first), "last/first")
						b.ReportMetric(ms(pruneTime), "ms-pruning")
						var editRun string
						if shape.convs == 1 {
							editRun = runs[len(runs)-window]
						} else {
							editRun = d.firstRun(conv[0])
						}
						start := time.Now()
						d.edit(conv[0], editRun)
						b.ReportMetric(ms(time.Since(start)), "ms/edit")
					}
				})
			}
		}
	}
}

// measuredServe is a server started for a measurement, with what it
// takes to prune and measure its storage from outside it.
type measuredServe struct {
	b       *testing.B
	url     string
	dataDir string // SQLite's data directory, or ""
	dsn     string // PostgreSQL's URL, or ""
	saver   checkpointSizer
	query   func(sql string) int64
}

// startMeasuredServe starts serve on a fresh data directory or
// PostgreSQL schema, and opens a connection to its database.
func startMeasuredServe(b *testing.B, backend string) *measuredServe {
	m := &measuredServe{b: b}
	if backend == "sqlite" {
		m.dataDir = b.TempDir()
		m.url = startBenchServe(b, "TRELLIS_DATA_DIR", m.dataDir)
		path := filepath.Join(m.dataDir, "checkpoints.db")
		s, err := sqlite.Open(b.Context(), path)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		db, err := sqlopen.SQLite(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		m.saver = s
		m.query = func(q string) int64 {
			var n int64
			if err := db.QueryRowContext(b.Context(), q).Scan(&n); err != nil {
				b.Fatalf("%s: %v", q, err)
			}
			return n
		}
		return m
	}
	m.dsn = pgDSN(b)
	m.url = startBenchServe(b, "DATABASE_URL", m.dsn)
	s, err := postgres.Open(b.Context(), m.dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	conn, err := pgx.Connect(b.Context(), m.dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(context.Background()) })
	m.saver = s
	m.query = func(q string) int64 {
		var n int64
		if err := conn.QueryRow(b.Context(), q).Scan(&n); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
		return n
	}
	return m
}

// prune runs trellis prune --keep keep on the server's database while it
// runs, and returns how long it took.
func (m *measuredServe) prune(keep int) time.Duration {
	args := []string{"prune", "--keep", strconv.Itoa(keep), "--data-dir", m.dataDir}
	if m.dsn != "" {
		args = []string{"prune", "--keep", strconv.Itoa(keep), "--database-url", m.dsn}
	}
	var out bytes.Buffer
	start := time.Now()
	if code := run(m.b.Context(), args, stdio{out: &out, err: &out, getenv: func(string) string { return "" }}); code != 0 {
		m.b.Fatalf("prune: exit %d: %s", code, out.String())
	}
	return time.Since(start)
}

// report reports the checkpoints' stored bytes, their tables' size on
// disk and the whole database's.
func (m *measuredServe) report() {
	b := m.b
	stored, err := m.saver.Bytes(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(stored), "stored-bytes")
	if m.dsn != "" {
		b.ReportMetric(float64(m.query(`SELECT pg_total_relation_size('checkpoints') + pg_total_relation_size('checkpoint_blobs')
     + pg_total_relation_size('checkpoint_writes')`)), "checkpoint-disk-bytes")
		b.ReportMetric(float64(m.query(`SELECT sum(pg_total_relation_size(c.oid))::bigint FROM pg_class c
     JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'`)), "db-disk-bytes")
		return
	}
	var cps, all int64
	entries, err := os.ReadDir(m.dataDir)
	if err != nil {
		b.Fatal(err)
	}
	// A write-ahead log's size is what the last checkpoint of it left,
	// not what is stored: it is written back first, as the server's
	// own checkpoints would, so that the files say what the data takes.
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".db") {
			truncateWAL(b, filepath.Join(m.dataDir, e.Name()))
		}
	}
	if entries, err = os.ReadDir(m.dataDir); err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".db") && !strings.HasSuffix(e.Name(), ".db-wal") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			b.Fatal(err)
		}
		all += fi.Size()
		if strings.HasPrefix(e.Name(), "checkpoints.db") {
			cps += fi.Size()
		}
	}
	b.ReportMetric(float64(cps), "checkpoint-disk-bytes")
	b.ReportMetric(float64(all), "db-disk-bytes")
}

// truncateWAL writes the log of the database at path back into it; a log
// the server keeps in use is left as it is, and said.
func truncateWAL(b *testing.B, path string) {
	db, err := sqlopen.SQLite(path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := sqlopen.TruncateWAL(b.Context(), db); err != nil {
		b.Logf("%s: %v", filepath.Base(path), err)
	}
}

// turnDriver takes turns over HTTP, failing b on anything but a
// completed answer.
type turnDriver struct {
	b      *testing.B
	url    string
	client *http.Client
}

// syncAnswer is what a turn's chat/sync answer says that a measurement reads.
type syncAnswer struct {
	ConversationID string `json:"conversation_id"`
	RunID          string `json:"run_id"`
	Status         string `json:"status"`
}

// turn posts msg to conversation conv (a new one when "") and waits for
// its answer.
func (d *turnDriver) turn(conv, msg string) syncAnswer {
	body := map[string]string{"message": msg}
	if conv != "" {
		body["conversation_id"] = conv
	}
	var r syncAnswer
	got := d.post("/api/v1/chat/sync", body)
	if err := json.Unmarshal(got, &r); err != nil || r.Status != "completed" {
		d.b.Fatalf("turn %q: %s (%v)", msg, got, err)
	}
	return r
}

// firstRun returns the id of conversation conv's first run.
func (d *turnDriver) firstRun(conv string) string {
	resp, err := d.client.Get(d.url + "/api/v1/conversations/" + conv)
	if err != nil {
		d.b.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Runs []struct {
			ID string `json:"id"`
		} `json:"runs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || len(c.Runs) == 0 {
		d.b.Fatalf("conversation %s: %d runs (%v)", conv, len(c.Runs), err)
	}
	return c.Runs[0].ID
}

// edit edits run's message and reads its stream to the end.
func (d *turnDriver) edit(conv, run string) {
	got := d.post("/api/v1/conversations/"+conv+"/runs/"+run+"/edit", map[string]string{"message": "edited"})
	if !bytes.Contains(got, []byte("event: run.completed")) {
		d.b.Fatalf("edit of run %s: %s", run, got)
	}
}

func (d *turnDriver) post(path string, body any) []byte {
	data, err := json.Marshal(body)
	if err != nil {
		d.b.Fatal(err)
	}
	resp, err := d.client.Post(d.url+path, "application/json", bytes.NewReader(data))
	if err != nil {
		d.b.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		d.b.Fatalf("POST %s: %d %s (%v)", path, resp.StatusCode, got, err)
	}
	return got
}

func meanTime(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
