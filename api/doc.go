// Package api is Trellis' chat service over HTTP: the chi router, the
// handlers, the SSE writer, the sync chat answer and the web page.
// API.md (the public contract) is what it serves. Its pieces that need
// nothing of the server are packages of their own that it installs: the
// middleware (request ids, logging, CORS, authentication, rate limits:
// api/middleware), strict request decoding (api/jsonbody) and the
// collector /metrics serves (api/metrics). It owns no run and builds
// none: it is given a finished run service (package runs) and starts,
// follows, answers, cancels, edits and recovers every run through it,
// mapping its errors to API.md's statuses in one place (writeError);
// package store is the record both read. The endpoint groups that are
// thin HTTP over a service of their own are packages it mounts over the
// services in Config, answering their errors as its own: the documents
// endpoints and document.status on its streams (api/docs), the
// agent's workspace files and projects, with download links that work
// without credentials (api/files), a user's
// endpoints beside their conversations (memory, usage, erasure: api/me)
// and the operators' (issued keys, the webhook delivery log: api/admin),
// and the page's sign-in under /auth, over the identity provider and the
// record of sessions (api/signin), whose session cookie the
// authentication takes beside the keys. What the agent
// is, and how it is glued to memory and documents, is cmd/trellis'
// wiring.
//
// # Example
//
//	st, _ := sqlitestore.Open(ctx, "trellis.db")
//	svc, err := runs.New(runs.Config{Store: st, Models: models, Tools: tools})
//	if err != nil { … }
//	srv, err := api.New(api.Config{Runs: svc, Store: st, Tools: tools})
//	if err != nil { … }
//	srv.Recover(ctx) // continue runs a previous process left running
//	hs := &http.Server{Addr: "127.0.0.1:8080", Handler: srv.Handler()}
//	go hs.ListenAndServe()
//	…
//	go hs.Shutdown(ctx) // stop accepting
//	srv.Shutdown(ctx)   // park runs, end streams
//
// # A chat request
//
// POST /api/v1/chat is decoded and checked here (the message, the model,
// the context), then runs.Service.Start stores the run and subscribes
// the request to it before its first event. The run's goroutine, in
// runs, queues each event in the run's outbox, which stores the
// events in batches off the run's goroutine and only then publishes
// them: nothing unstored is ever sent. The handler follows the run
// (runs.Service.Follow) and writes each event as one SSE frame (id:
// seq, event: type, data: the stored JSON), pings while idle, and ends
// the response right after the first terminal event. GET
// /conversations/{id}/stream follows the same way from Last-Event-ID,
// replaying from the store first. POST /chat/sync follows without
// writing, folding the typed events (runs.Event.Payload) into one JSON
// answer.
//
// A stream that falls behind is cut: its response ends without a
// terminal event, and the client reconnects with Last-Event-ID.
//
// # Approvals, clarifications, elicitations, shutdown
//
// What a run waits for, and how answers resume it, is the run service's
// (see runs); here they are POST /approvals/{id}, POST
// /elicitation/respond, DELETE /elicitation/{id}, POST
// /uncertain-calls/{id} and the lists of what is pending of each kind
// (GET /approvals/pending, /elicitation/pending, /clarifications/pending,
// /uncertain-calls/pending). A run stopped on
// its way down emits run.interrupted with reason shutdown (an addition
// to API.md's reasons); Recover continues it at the next start.
//
// # Probes and a lost database
//
// With a Cluster (PostgreSQL), a process that loses its database session
// stops its runs, takes no new ones (503) and reconnects by itself;
// /readyz fails meanwhile, and /healthz once that, or a store that does
// not answer, has lasted Config.UnhealthyAfter.
package api
