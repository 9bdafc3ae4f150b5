// Package web serves Trellis' web chat page: one HTML page, its stylesheet
// and its JavaScript modules, embedded in the binary so the page works
// offline and needs no CDN.
//
// The page is a client of the public HTTP API (API.md) and of nothing
// else: it starts runs with POST /api/v1/chat and reads their SSE streams
// from fetch, lists and reloads conversations, reattaches to a run's
// stream with Last-Event-ID after a drop or when the server asks it to
// (stream.reconnect, no sooner than its retry_ms), answers approvals (several of
// a run at once with "Approve all") and elicitations, cancels runs,
// reruns edited messages, retries a failed turn, and shows a
// conversation's active branch with "< i / n >" on an edited message to
// move to its other versions, and in Settings the user's usage this
// month. An API key, when
// the server wants one, is kept in the browser's localStorage and sent as
// a bearer token.
//
// # Mounting
//
// Handler serves GET and HEAD for "/" (the page) and "/static/<file>",
// answers 404 for other paths and 405 for other methods, so the server
// can mount it as the catch-all next to the API:
//
//	mux.Handle("/", web.Handler())
//
// # Files
//
// static/index.html is the page and app.css its only stylesheet; the
// script is a set of ES modules with no framework and no build step.
// app.js starts the page and owns the conversation and the open stream;
// turn.js renders one run's events, live or from history; cards.js holds
// the approval and elicitation cards; schemaform.js builds a form from a
// JSON Schema; markdown.js is a small renderer that escapes HTML before it
// formats; passage.js opens a cited passage, rendered, with the sentence
// the answer cites highlighted; board.js is the task board and
// graphview.js the agent's graph, beside the chat or, on a narrow window,
// in the Plan panel app.js opens and closes; usage.js is the Usage
// section of Settings (this month's tokens per day and model, and the
// quota, from GET /api/v1/me/usage); sse.js parses event streams read from fetch; api.js talks to
// the API; dom.js builds elements from text, never from HTML.
//
// # Tests
//
// The tests drive the page in headless Chromium through package webtest,
// against contractFake, a scripted fake of the API that replays
// API.md-conformant event sequences. The end-to-end tests of the real
// server use the same webtest.Page steps.
package web
