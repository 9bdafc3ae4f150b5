package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trellis-ai/trellis/api/web/webtest"
	"github.com/trellis-ai/trellis/internal/oidctest"
)

// In Chromium, against the real server: the page offers "Sign in", the
// browser goes through the provider and back signed in, the page shows
// the user, chats with the session cookie (its writes carry the CSRF
// token) and gets an answer, and "Sign out" ends the session. Served at
// the root, and under a path prefix by a reverse proxy that strips it.
func TestServeSignInBrowser(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"", "/tools/trellis"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			_, m, public := startSignIn(t, prefix)
			p := webtest.Open(t, webtest.Browser(t), public+"/")
			p.WaitVisible("#signin-button")
			m.QueueUser(oidctest.User("ada"))
			p.Click("#signin-button")
			// The click leaves the page for the provider and comes back
			// to a new page.
			afterNavigation(t, p, prefix+"/", `document.querySelector("#signin-user").textContent`, "ada")
			p.WaitVisible("#signout-button")
			p.Send("Hello there")
			p.WaitJS("an answer", `() => { const a = document.querySelectorAll(".answer"); return a.length > 0 && a[a.length-1].textContent.trim().length > 0 }`)
			p.WaitText(webtest.ConversationList, "Hello there")
			p.Click("#signout-button")
			afterNavigation(t, p, prefix+"/", `String(!document.querySelector("#signin-button").hidden) + "|" + document.querySelector("#signin-user").textContent`, "true|")
		})
	}
}

// afterNavigation polls, across the navigations that end the old page's
// script context, until the page at page (its path) is ready again and
// expr gives want.
func afterNavigation(t *testing.T, p *webtest.Page, page, expr, want string) {
	t.Helper()
	deadline := time.Now().Add(webtest.StepTimeout)
	for {
		got, err := chromedp.Run(p.Context(), chromedp.Evaluate[string](
			`document.body && document.body.dataset.ready === "true" && location.pathname === `+strconv.Quote(page)+` ? `+expr+` : ""`))
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never gave %q for %s (%q, %v)", want, expr, got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
