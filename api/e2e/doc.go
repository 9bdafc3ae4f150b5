// Package e2e holds end-to-end tests of Trellis' chat service: the real
// server (package api, with a SQLite store and checkpointer and a
// scripted model) serving the web page (package api/web), driven in
// headless Chromium through package webtest. It has no code besides its
// tests: the journeys of a user — chat with streaming, approvals,
// elicitation forms, cancelling, reloading — each with screenshots saved
// as test artifacts (see webtest.ScreenshotDir).
package e2e
