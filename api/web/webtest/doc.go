// Package webtest runs Trellis' web chat page in headless Chromium for
// tests: Browser starts Debian's chromium for one test, Screenshot saves
// what the page shows as a test artifact, and Page drives the chat page
// through its stable ids and data attributes (the selector constants), so
// one list of steps runs against any server that serves the page at "/"
// and API.md under /api/v1.
//
// # Against the real server
//
// Package web's own tests drive the page against contractFake, a scripted
// fake of the API. An end-to-end test of the real server (package api)
// takes the same steps and only changes the URL:
//
//	srv := httptest.NewServer(handler) // the server, with web.Handler() at "/"
//	t.Cleanup(srv.Close)
//	p := webtest.Open(t, webtest.Browser(t), srv.URL)
//	p.Send("What is 2 + 2?")
//	p.WaitText(webtest.LastAnswer, "4")
//	p.WaitText(webtest.LastUsage, "total")
//	p.Screenshot("answered")
//
// # Environment
//
// Without Chromium at ChromiumPath (or "chromium" on PATH), Browser skips
// the test, and fails it when CI is set; .ci/run installs the chromium
// package. Screenshots go to $TRELLIS_ARTIFACTS/screenshots, by default
// <repo>/artifacts/screenshots, which git ignores.
//
// # Bounds
//
// Every step of a Page waits at most StepTimeout; the browser lives at
// most until the test's deadline and never longer than five minutes, and
// a cleanup closes it and waits for its process, its profile directory and
// the goroutines of the harness to go, so a package can check for leaks
// with goleak.
package webtest
