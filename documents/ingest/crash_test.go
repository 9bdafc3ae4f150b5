package ingest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/documents/ingest/ingesttest"
	"github.com/trellis-ai/trellis/documents/pgfiles"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/pgstore"
	"github.com/trellis-ai/trellis/store/sqlitestore"
)

const childEnv = "TRELLIS_INGEST_TEST_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		runChild(strings.Split(spec, "\x1f"))
		return
	}
	os.Exit(m.Run())
}

// place is where one test's processes keep everything: the database (a
// SQLite directory, or a PostgreSQL URL and schema) and the files (in
// the directory beside SQLite; in the database on PostgreSQL, as serve
// keeps them there by default).
type place struct {
	backend, dir, dsn, schema string
}

func (p place) spec() string {
	return strings.Join([]string{p.backend, p.dir, p.dsn, p.schema}, "\x1f")
}

// open opens the place's record, files and queue (not started) for a
// service with sum as its summariser.
func (p place) open(ctx context.Context, sum documents.Summarizer, jcfg jobs.Config) (*ingest.Service, *jobs.Queue, ingest.Record, func(), error) {
	var files documents.Storage
	var rec ingest.Record
	var pool *pgxpool.Pool
	closeAll := func() {}
	switch p.backend {
	case "sqlite":
		st, err := sqlitestore.Open(ctx, filepath.Join(p.dir, "trellis.db"))
		if err != nil {
			return nil, nil, nil, nil, err
		}
		rec, closeAll = st, func() { st.Close() }
		if files, err = documents.NewFileStorage(filepath.Join(p.dir, "files")); err != nil {
			return nil, nil, nil, nil, err
		}
	case "postgres":
		cfg, err := pgxpool.ParseConfig(p.dsn)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = p.schema
		if pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
			return nil, nil, nil, nil, err
		}
		st, err := pgstore.New(ctx, pool)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		rec, closeAll = st, pool.Close
		if files, err = pgfiles.New(ctx, pool); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	svc, err := ingest.New(ingest.Config{Store: rec, Files: files, Summarizer: sum})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	ws := jobs.NewWorkers()
	svc.Register(ws)
	jcfg.PollInterval = 50 * time.Millisecond
	var q *jobs.Queue
	if p.backend == "sqlite" {
		q, err = jobs.SQLite(ctx, filepath.Join(p.dir, "jobs.db"), ws, jcfg)
	} else {
		q, err = jobs.Postgres(ctx, pool, ws, jcfg)
	}
	if err != nil {
		return nil, nil, nil, nil, err
	}
	svc.Attach(q)
	return svc, q, rec, func() { q.Close(); closeAll() }, nil
}

// stuck is a summariser that hangs, as a process about to die does; it
// notes that it was reached.
type stuck struct{ marker string }

func (s stuck) SummarizeChunk(context.Context, string) (string, error) {
	os.WriteFile(s.marker, nil, 0o644)
	select {}
}

func (s stuck) SummarizeDocument(context.Context, string, string, []string) (string, error) {
	select {}
}

// runChild works the queue with a summariser that hangs, until killed.
func runChild(spec []string) {
	p := place{backend: spec[0], dir: spec[1], dsn: spec[2], schema: spec[3]}
	ctx := context.Background()
	_, q, _, _, err := p.open(ctx, stuck{marker: filepath.Join(p.dir, "summarizing")}, jobs.Config{JobTimeout: time.Minute})
	if err != nil {
		panic(err)
	}
	if err := q.Start(ctx); err != nil {
		panic(err)
	}
	select {}
}

// A process killed while it processes a document (here: summarising its
// chunks) leaves it summarizing; the next process takes the job over and
// makes it ready, with its chunks stored once.
func TestCrashDuringProcessingResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the dead process's lease to run out")
	}
	md, err := os.ReadFile("../testdata/handbook.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range ingesttest.Backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			p := place{backend: backend, dir: t.TempDir()}
			if backend == "postgres" {
				pool := pgtest.New(t)
				p.dsn, p.schema = pool.Config().ConnString(), pool.Config().ConnConfig.RuntimeParams["search_path"]
			}
			ctx := t.Context()
			// Upload through a queue that is not started: the child takes
			// the job.
			svc, _, rec, closeFirst, err := p.open(ctx, documents.Extractive{}, jobs.Config{})
			if err != nil {
				t.Fatal(err)
			}
			d, err := svc.Upload(ctx, ingest.Upload{UserID: "alice", Filename: "handbook.md", Data: md})
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+p.spec())
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				if _, err := os.Stat(filepath.Join(p.dir, "summarizing")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("the child never reached the summaries")
				}
				time.Sleep(20 * time.Millisecond)
			}
			cmd.Process.Kill()
			cmd.Wait()
			if got, _ := rec.LookupDocument(ctx, d.ID); got.Status != store.DocSummarizing || got.Chunks != 1 {
				t.Fatalf("after the kill: %+v", got)
			}
			closeFirst()

			svc, q, rec, closeSecond, err := p.open(ctx, documents.Extractive{}, jobs.Config{JobTimeout: time.Second, RescueAfter: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer closeSecond()
			if err := q.Start(context.WithoutCancel(ctx)); err != nil {
				t.Fatal(err)
			}
			defer func() {
				sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				q.Stop(sctx)
			}()
			deadline = time.Now().Add(90 * time.Second)
			for {
				got, err := svc.Get(ctx, "alice", d.ConversationID, d.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Status == store.DocReady {
					break
				}
				if got.Status == store.DocError || time.Now().After(deadline) {
					t.Fatalf("not resumed: %+v", got)
				}
				time.Sleep(50 * time.Millisecond)
			}
			chunks, err := rec.DocumentChunks(ctx, "alice", d.ID, nil)
			if err != nil || len(chunks) != 1 || chunks[0].Summary == "" {
				t.Fatalf("chunks after the resume: %+v, %v", chunks, err)
			}
		})
	}
}
