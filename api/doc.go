// Package api is Trellis' chat service over HTTP: the chi router, request
// validation, authentication and limits, the SSE writer, and the run
// manager that owns every run's life. API.md (the public contract) is what
// it serves; package nodes is the agent it runs and package store the
// record it keeps.
//
// # Example
//
//	st, _ := sqlitestore.Open(ctx, "trellis.db")
//	srv, err := api.New(api.Config{Store: st, Models: models, Tools: tools})
//	if err != nil { … }
//	srv.Recover(ctx) // continue runs a previous process left running
//	hs := &http.Server{Addr: "127.0.0.1:8080", Handler: srv.Handler()}
//	go hs.ListenAndServe()
//	…
//	go hs.Shutdown(ctx) // stop accepting
//	srv.Shutdown(ctx)   // park runs, end streams
//
// # Runs
//
// A run is one turn of a conversation, with one id for its whole life. The
// run manager starts it (one active run per conversation: the store's
// unique index answers 409 to a second), drives the agent's event
// iterator on a goroutine of its own whose context is detached from the
// request that started it, and ends it with exactly one terminal event.
//
// Every event goes through one pipeline on that goroutine: the envelope
// (run_id, conversation_id, ts) is added, store.AppendEvent stores it and
// numbers it (seq, from 1, no gaps), and only then is it published to the
// run's hub, which hands it to every subscriber's bounded buffer. A
// subscriber that falls behind is cut (its stream ends without a terminal
// event, so the client reconnects with Last-Event-ID); the run never
// waits for a client.
//
// A subscriber registers with the hub first, then replays from the store
// what came after its Last-Event-ID, then takes live events, skipping
// those it replayed: nothing is lost or sent twice. Each SSE response ends
// right after the first terminal event it sends. The replay, like every
// read of the store a client causes (a sync request catching up, the
// history of GET /conversations/{id}), reads a page at a time, so what a
// reader holds does not grow with the run or the conversation.
//
// # Approvals, clarifications, elicitations
//
// When the agent stops for an approval, the run keeps its stream open for
// Config.InterruptAfter: an answer in that time continues the run on the
// same stream. Otherwise (or when no stream is open) the run emits
// run.interrupted (reason approval) and is parked durably; a later answer
// resumes the same run in the background, its events numbered on after
// the run.interrupted, for GET /conversations/{id}/stream to follow. A
// clarifying question ends the run with run.interrupted (reason
// clarification); the user's next message is a new run that answers it.
// A tool that asks the user for input (an elicitation) waits in the
// elicitation manager while a stream follows the run, for
// Config.ElicitTimeout at most; then the run emits run.interrupted
// (reason elicitation) and is parked on the question, which stays
// pending in the store. An answer given later — to any process, after
// any number of restarts — is stored and resumes the run.
//
// # Shutdown and recovery
//
// Shutdown cancels every active run with a cause; the agent stops at its
// next checkpoint, the run's stream gets run.interrupted with reason
// shutdown (an addition to API.md's reasons), and the run stays running
// in the store, owned by a process that is gone. Recover, called at the
// next start, continues such runs from their last checkpoint, as it does
// after a crash.
//
// # A lost database
//
// With a Cluster (PostgreSQL), a run whose events, end or checkpoint
// cannot be stored because the database went away is not failed: it
// stays running in the store with its last checkpoint and goes on once
// the database is back, here, or on a peer that took it over. A process
// that loses its session stops its runs, takes no new ones (503) and
// reconnects by itself; /readyz fails meanwhile, and /healthz once that
// has lasted Config.UnhealthyAfter.
package api
