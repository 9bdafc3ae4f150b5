package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/documents/pgfiles"
	"github.com/trellis-ai/trellis/documents/s3store"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/store"
)

// documentsConfig is what serve reads about documents: where their files
// go, their limits, and the key that encrypts them at rest.
type documentsConfig struct {
	// dir holds the files with the filesystem backend; default
	// <data dir>/documents.
	dir string
	// shared says every process sharing the PostgreSQL database sees
	// dir, which then holds the files; without it (or S3) they go into
	// the database.
	shared bool
	// s3 is the bucket, when TRELLIS_DOCUMENTS_S3_ENDPOINT is set.
	s3 *s3store.Config
	// key encrypts files at rest when set (TRELLIS_DOCUMENTS_KEY).
	key        []byte
	maxBytes   int64
	maxPerConv int
	// maxExtractions is how many documents' text is read at once.
	maxExtractions int
}

// parseDocuments reads the documents' settings: flags for the shapes,
// the environment alone for the bucket's secrets and the key.
func parseDocuments(c *documentsConfig, dir, shared, maxBytes, maxDocs, maxExtractions string, getenv func(string) string) []error {
	var errs []error
	c.dir = dir
	var err error
	if c.shared, err = strconv.ParseBool(shared); err != nil {
		errs = append(errs, fmt.Errorf("documents-shared: %q is not true or false", shared))
	}
	if c.maxBytes, err = strconv.ParseInt(maxBytes, 10, 64); err != nil || c.maxBytes <= 0 {
		errs = append(errs, fmt.Errorf("max-document-bytes: %q is not a positive number", maxBytes))
	}
	if c.maxPerConv, err = strconv.Atoi(maxDocs); err != nil || c.maxPerConv <= 0 {
		errs = append(errs, fmt.Errorf("max-documents: %q is not a positive number", maxDocs))
	}
	if c.maxExtractions, err = strconv.Atoi(maxExtractions); err != nil || c.maxExtractions <= 0 {
		errs = append(errs, fmt.Errorf("max-extractions: %q is not a positive number", maxExtractions))
	}
	if k := getenv("TRELLIS_DOCUMENTS_KEY"); k != "" {
		if c.key, err = documents.ParseKey(k); err != nil {
			errs = append(errs, fmt.Errorf("TRELLIS_DOCUMENTS_KEY: %w", err))
		}
	}
	if ep := getenv("TRELLIS_DOCUMENTS_S3_ENDPOINT"); ep != "" {
		s3 := &s3store.Config{Endpoint: ep, Bucket: getenv("TRELLIS_DOCUMENTS_S3_BUCKET"),
			AccessKey: getenv("TRELLIS_DOCUMENTS_S3_ACCESS_KEY"), SecretKey: getenv("TRELLIS_DOCUMENTS_S3_SECRET_KEY"),
			Region: getenv("TRELLIS_DOCUMENTS_S3_REGION")}
		for name, b := range map[string]*bool{"TRELLIS_DOCUMENTS_S3_INSECURE": &s3.Insecure, "TRELLIS_DOCUMENTS_S3_PATH_STYLE": &s3.PathStyle} {
			if v := getenv(name); v != "" {
				if *b, err = strconv.ParseBool(v); err != nil {
					errs = append(errs, fmt.Errorf("%s: %q is not true or false", name, v))
				}
			}
		}
		if s3.Bucket == "" {
			errs = append(errs, errors.New("TRELLIS_DOCUMENTS_S3_BUCKET is required with TRELLIS_DOCUMENTS_S3_ENDPOINT"))
		}
		c.s3 = s3
	}
	return errs
}

// openDocuments builds the document service and registers its job with
// ws (the queue is opened once every service has registered, see
// openQueue), and says for the start line where the files live: in the
// bucket when one is configured; on PostgreSQL, in the database itself
// unless the directory is declared shared, since another process could
// not read the files this one stores in a private one; otherwise in the
// directory.
func openDocuments(ctx context.Context, cfg serveConfig, st store.Store, models *llm.Registry, ws *jobs.Workers, log *slog.Logger, cleanup *closers) (*ingest.Service, string, error) {
	dc := cfg.documents
	var files documents.Storage
	var desc string
	switch {
	case dc.s3 != nil:
		s, err := s3store.New(*dc.s3)
		if err != nil {
			return nil, "", err
		}
		if err := s.Check(ctx); err != nil {
			return nil, "", fmt.Errorf("documents: %w", err)
		}
		files, desc = s, "s3 "+dc.s3.Endpoint+"/"+dc.s3.Bucket
	case cfg.databaseURL != "" && !dc.shared:
		s, err := pgfiles.Open(ctx, cfg.databaseURL)
		if err != nil {
			return nil, "", fmt.Errorf("documents: %w", err)
		}
		cleanup.add(s.Close)
		files, desc = s, "postgres table "+pgfiles.Table
	default:
		fsys, err := documents.NewFileStorage(dc.dir)
		if err != nil {
			return nil, "", err
		}
		files, desc = fsys, "files "+fsys.Root()
	}
	if dc.key != nil {
		enc, err := documents.NewEncrypted(files, dc.key)
		if err != nil {
			return nil, "", err
		}
		files, desc = enc, desc+" encrypted"
	}
	rec, ok := st.(ingest.Record)
	if !ok {
		return nil, "", errors.New("documents: the store keeps no documents")
	}
	sum, sumDesc, err := summarizer(ctx, models)
	if err != nil {
		return nil, "", err
	}
	desc += ", " + sumDesc
	svc, err := ingest.New(ingest.Config{Store: rec, Files: files, Summarizer: sum, MaxBytes: dc.maxBytes, MaxPerConversation: dc.maxPerConv,
		MaxExtractions: dc.maxExtractions, Logger: log})
	if err != nil {
		return nil, "", err
	}
	svc.Register(ws)
	return svc, desc, nil
}

// rescueAfter is how long after its attempt began a job of a process
// that died is taken again, for a job timeout of jobTimeout.
func rescueAfter(jobTimeout time.Duration) time.Duration {
	return jobTimeout + min(jobTimeout, time.Minute)
}

// openQueue opens the one job queue of the services that registered
// with ws, and starts it: River on a second pool on the PostgreSQL
// database, so River's listening connection never starves the store's
// pool; or jobs.db beside the SQLite files.
func openQueue(ctx context.Context, cfg serveConfig, ws *jobs.Workers, periodic []jobs.Periodic, log *slog.Logger, cleanup *closers) (*jobs.Queue, error) {
	// A job whose process died is taken again once its attempt would
	// have timed out, with a margin for a live process to notice its own
	// timeout first.
	jcfg := jobs.Config{Logger: log, Periodic: periodic, JobTimeout: cfg.jobTimeout, RescueAfter: rescueAfter(cfg.jobTimeout)}
	var queue *jobs.Queue
	var err error
	if cfg.databaseURL != "" {
		pool, err := pgxpool.New(ctx, cfg.databaseURL)
		if err != nil {
			return nil, fmt.Errorf("jobs: %w", err)
		}
		cleanup.add(pool.Close)
		queue, err = jobs.Postgres(ctx, pool, ws, jcfg)
		if err != nil {
			return nil, err
		}
	} else {
		if err := os.MkdirAll(cfg.dataDir, 0o700); err != nil {
			return nil, err
		}
		queue, err = jobs.SQLite(ctx, filepath.Join(cfg.dataDir, "jobs.db"), ws, jcfg)
		if err != nil {
			return nil, err
		}
	}
	cleanup.add(func() { _ = queue.Close() })
	// The queue outlives the signal that ends serve: its jobs get the
	// shutdown timeout to finish (see the stop below), not a cancel.
	if err := queue.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	cleanup.add(func() {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
		defer cancel()
		if err := queue.Stop(sctx); err != nil {
			log.LogAttrs(sctx, slog.LevelWarn, "stopping the job queue", slog.Any("error", err))
		}
	})
	return queue, nil
}

// summarizer is the fast model's summariser (the registry wraps it in the
// resilience policy), or the extractive one when the fast model is the
// offline model, which cannot summarise, or a scripted one, whose script
// drives the agent, not summaries.
func summarizer(ctx context.Context, models *llm.Registry) (documents.Summarizer, string, error) {
	mc, err := models.Resolve("fast")
	if err != nil {
		return nil, "", err
	}
	if mc.Provider == llm.ProviderOffline || mc.Provider == llm.ProviderScripted {
		return documents.Extractive{}, "extractive summaries", nil
	}
	m, err := models.Model(ctx, "fast")
	if err != nil {
		return nil, "", fmt.Errorf("documents: the summaries' model: %w", err)
	}
	return documents.ModelSummarizer{Model: m}, "summaries by " + mc.ID, nil
}

// documentsDefaultDir is where the filesystem backend keeps files.
func documentsDefaultDir(dataDir string) string { return filepath.Join(dataDir, "documents") }

// documentSummaries is the agent's view of a conversation's documents,
// over the document service: the supervisor reads it before deciding.
type documentSummaries struct{ svc *ingest.Service }

func (d documentSummaries) DocumentSummaries(ctx context.Context, userID, conversationID string, ids []string) ([]nodes.DataSummary, error) {
	if conversationID == "" {
		return nil, nil
	}
	docs, err := d.svc.All(ctx, userID, conversationID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []nodes.DataSummary
	for _, doc := range docs {
		if len(ids) > 0 && !slices.Contains(ids, doc.ID) {
			continue
		}
		summary := doc.Summary
		switch {
		case doc.Status == store.DocError:
			summary = "could not be processed: " + doc.Error
		case summary == "":
			summary = "(no summary yet)"
		}
		out = append(out, nodes.DataSummary{DocumentID: doc.ID, Title: doc.Filename, Status: string(doc.Status), Summary: summary})
	}
	return out, nil
}
