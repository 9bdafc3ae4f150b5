package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

func TestCancelRun(t *testing.T) {
	f := newContractFake(t, func(r *fakeRun) {
		r.emit("tool.start", map[string]any{"tool_call_id": "call-1", "tool": "long_report", "source": "operator", "args": map[string]any{"weeks": 52}})
		r.emit("tool.progress", map[string]any{"tool_call_id": "call-1", "progress": 3, "total": 0, "message": "reading week 3"})
		r.emit("response.chunk", map[string]any{"content": "Working on it"})
		r.await(nil) // until cancelled; the fake then sends run.cancelled
	})
	p := open(t, f)
	p.Send("Write the yearly report")
	p.WaitText(webtest.LastAnswer, "Working on it")
	p.WaitJS("an indeterminate progress bar", `() => { const b = document.querySelector(".act-tool progress"); return b && !b.hasAttribute("value") }`)
	p.WaitText(webtest.LastTurn+" .progress-label", "reading week 3")

	// The Stop button is reachable from the keyboard.
	p.Do("focus Stop", chromedp.Focus(chromedp.CSS(webtest.CancelButton)))
	p.Enter()
	f.requestsTo("POST", "/api/v1/conversations/conv-1/cancel", 1)
	p.WaitJS("the turn is cancelled", `() => document.querySelector("#transcript > li.turn:last-of-type").dataset.state === "cancelled"`)
	p.WaitText(webtest.LastTurn+" .turn-status", "Cancelled")
	p.WaitGone(webtest.CancelButton)
	p.WaitJS("Send is enabled", `() => !document.querySelector("#send").disabled`)
	p.Screenshot("cancelled")
}

func TestReconnectAfterDrop(t *testing.T) {
	for _, replayAll := range []bool{false, true} {
		t.Run(fmt.Sprintf("replayAll=%v", replayAll), func(t *testing.T) {
			testReconnect(t, replayAll)
		})
	}
}

// testReconnect cuts the stream mid-answer. With replayAll the server
// ignores Last-Event-ID and replays the whole run.
func testReconnect(t *testing.T, replayAll bool) {
	dropNow, resume := make(chan struct{}), make(chan struct{})
	f := newContractFake(t, func(r *fakeRun) {
		r.emit("response.chunk", map[string]any{"content": "Hello "})
		r.emit("response.chunk", map[string]any{"content": "wor"})
		if !r.await(dropNow) {
			return
		}
		r.dropStreams()
		r.emit("response.chunk", map[string]any{"content": "l"}) // while disconnected: replayed
		if !r.await(resume) {
			return
		}
		r.answer("d") // live on the new stream
	})
	f.mu.Lock()
	f.replayAll = replayAll
	f.mu.Unlock()
	p := open(t, f)
	p.Send("Say hello")
	p.WaitText(webtest.LastAnswer, "Hello wor")
	close(dropNow)

	// run.started is seq 1, the chunks 2 and 3.
	stream := f.requestsTo("GET", "/api/v1/conversations/conv-1/stream", 1)[0]
	if got := stream.Header.Get("Last-Event-ID"); got != "3" {
		t.Errorf("Last-Event-ID on reconnecting = %q, want 3", got)
	}
	p.WaitText(webtest.LastAnswer, "Hello worl")
	// Before response.done replaces the text: nothing is doubled.
	if got := strings.TrimSpace(p.Text(webtest.LastAnswer)); got != "Hello worl" {
		t.Errorf("the streamed text after a reconnect = %q, want %q", got, "Hello worl")
	}
	close(resume)
	p.WaitText(webtest.LastUsage, "165 total")
	if got := strings.TrimSpace(p.Text(webtest.LastAnswer)); got != "Hello world" {
		t.Errorf("the answer after a reconnect = %q, want %q", got, "Hello world")
	}
	p.WaitGone("#connection-status")
}

// When the server ends the stream before the run's end and asks the page
// to reconnect (stream.reconnect: the client fell behind, or the server
// is shutting down), the page reconnects with Last-Event-ID no sooner
// than the retry_ms it was given, shows no error and no event of its
// own for it, and the answer goes on whole: what came while it was away
// is replayed once, and the rest comes live.
func TestReconnectWhenAsked(t *testing.T) {
	for _, reason := range []string{"behind", "shutting_down"} {
		t.Run(reason, func(t *testing.T) {
			askNow, resume := make(chan struct{}), make(chan struct{})
			asked := make(chan time.Time, 1)
			f := newContractFake(t, func(r *fakeRun) {
				r.emit("response.chunk", map[string]any{"content": "Hello "})
				r.emit("response.chunk", map[string]any{"content": "wor"})
				if !r.await(askNow) {
					return
				}
				asked <- time.Now()
				r.askReconnect(reason)
				r.emit("response.chunk", map[string]any{"content": "l"}) // while away: replayed
				if !r.await(resume) {
					return
				}
				r.answer("d") // live on the new stream
			})
			p := open(t, f)
			p.Send("Say hello")
			p.WaitText(webtest.LastAnswer, "Hello wor")
			close(askNow)

			stream := f.requestsTo("GET", "/api/v1/conversations/conv-1/stream", 1)[0]
			if waited := time.Since(<-asked); waited < reconnectRetry {
				t.Errorf("the page reconnected %v after stream.reconnect asked it to wait %v", waited, reconnectRetry)
			}
			if got := stream.Header.Get("Last-Event-ID"); got != "3" {
				t.Errorf("Last-Event-ID on reconnecting = %q, want 3", got)
			}
			p.WaitText(webtest.LastAnswer, "Hello worl")
			if got := strings.TrimSpace(p.Text(webtest.LastAnswer)); got != "Hello worl" {
				t.Errorf("the streamed text after the reconnect = %q, want %q", got, "Hello worl")
			}
			close(resume)
			p.WaitText(webtest.LastUsage, "165 total")
			if got := strings.TrimSpace(p.Text(webtest.LastAnswer)); got != "Hello world" {
				t.Errorf("the answer after the reconnect = %q, want %q", got, "Hello world")
			}
			p.WaitGone("#connection-status")
			if got := p.Text("#transcript"); strings.Contains(got, "reconnect") || strings.Contains(got, reason) {
				t.Errorf("the transcript shows the request to reconnect: %q", got)
			}
			if n := p.Count("#error-banner:not([hidden])"); n != 0 {
				t.Errorf("an error shows after the reconnect: %q", p.Text("#error-banner"))
			}
			if n := f.count("GET", "/api/v1/conversations/conv-1/stream"); n != 1 {
				t.Errorf("the page opened the conversation's stream %d times, want 1", n)
			}
		})
	}
}

func TestReloadShowsHistory(t *testing.T) {
	gate := make(chan struct{})
	f := newContractFake(t, func(r *fakeRun) {
		r.emit("node.start", map[string]any{"node": "write"})
		r.emit("response.chunk", map[string]any{"content": "First part. "})
		if !r.await(gate) {
			return
		}
		r.emit("node.end", map[string]any{"node": "write", "duration_ms": 40})
		r.answer("Second part.")
	})
	p := open(t, f)
	p.Send("Tell me a story")
	p.WaitText(webtest.LastAnswer, "First part.")

	// A reload mid-run shows the history and reattaches to the live run
	// after the last stored event (seq 3).
	p.Reload()
	p.WaitText(webtest.LastTurn+" .user-msg", "Tell me a story")
	p.WaitText(webtest.LastAnswer, "First part.")
	f.requestsTo("GET", "/api/v1/conversations/conv-1", 1)
	stream := f.requestsTo("GET", "/api/v1/conversations/conv-1/stream", 1)[0]
	if got := stream.Header.Get("Last-Event-ID"); got != "3" {
		t.Errorf("Last-Event-ID after a reload = %q, want 3", got)
	}
	close(gate)
	p.WaitText(webtest.LastUsage, "165 total")
	if got := strings.TrimSpace(p.Text(webtest.LastAnswer)); got != "First part. Second part." {
		t.Errorf("the answer = %q", got)
	}

	// A reload after the run shows it whole, once.
	p.Reload()
	p.WaitText(webtest.LastAnswer, "First part. Second part.")
	p.WaitText(webtest.LastUsage, "165 total")
	p.WaitText(webtest.ConversationList+` a[aria-current="page"]`, "Tell me a story")
	if n := p.Count("#transcript > li.turn"); n != 1 {
		t.Errorf("%d turns after a reload, want 1", n)
	}
	if n := f.count("GET", "/api/v1/conversations/conv-1/stream"); n != 1 {
		t.Errorf("the page opened %d streams, want 1: a finished run needs none", n)
	}
	p.Screenshot("history")
}

// TestReloadPagedHistory: a history longer than a page of runs, with runs
// longer than a page of events, comes back whole: the page follows
// next_cursor and reads the rest of each cut run.
func TestReloadPagedHistory(t *testing.T) {
	f := newContractFake(t, func(r *fakeRun) {
		for i := range 4 {
			r.emit("node.start", map[string]any{"node": fmt.Sprint("step", i)})
		}
		r.answer("Answer to " + r.message + ".")
	})
	p := open(t, f)
	questions := []string{"one", "two", "three"}
	for _, q := range questions {
		p.Send(q)
		p.WaitText(webtest.LastAnswer, "Answer to "+q+".")
		p.WaitJS("Send is enabled", `() => !document.querySelector("#send").disabled`)
	}
	f.mu.Lock()
	f.runsPage, f.eventsPage = 2, 3
	var runs []string
	for _, r := range f.convs[0].runs {
		runs = append(runs, r.id)
	}
	f.mu.Unlock()

	p.Reload()
	p.WaitText(webtest.LastUsage, "165 total") // from the last events of the last run
	if n := p.Count("#transcript > li.turn"); n != len(questions) {
		t.Fatalf("%d turns after a reload, want %d", n, len(questions))
	}
	for i, q := range questions {
		sel := fmt.Sprintf("#transcript > li.turn:nth-of-type(%d)", i+1)
		if got, want := strings.TrimSpace(p.Text(sel+" .answer")), "Answer to "+q+"."; got != want {
			t.Errorf("turn %d answers %q, want %q", i+1, got, want)
		}
		if got := strings.TrimSpace(p.Text(sel + " .usage")); !strings.Contains(got, "165 total") {
			t.Errorf("turn %d usage %q, want 165 total", i+1, got)
		}
	}
	if pages := f.requestsTo("GET", "/api/v1/conversations/conv-1", 2); pages[len(pages)-1].Query != "cursor=2" {
		t.Errorf("the last page was asked with %q, want the cursor given", pages[len(pages)-1].Query)
	}
	// Each run has 8 events: 3 came with the run, the rest 3 at a time.
	for _, id := range runs {
		if n := f.count("GET", "/api/v1/conversations/conv-1/runs/"+id+"/events"); n != 2 {
			t.Errorf("%d requests for the rest of %s's events, want 2", n, id)
		}
	}

	// Runs that came with none of their events (their page was full):
	// all of them are read from the run's events.
	f.mu.Lock()
	f.eventsPage = -1
	f.mu.Unlock()
	p.Reload()
	p.WaitText(webtest.LastUsage, "165 total")
	for i, q := range questions {
		sel := fmt.Sprintf("#transcript > li.turn:nth-of-type(%d)", i+1)
		if got, want := strings.TrimSpace(p.Text(sel+" .answer")), "Answer to "+q+"."; got != want {
			t.Errorf("with no events on the page: turn %d answers %q, want %q", i+1, got, want)
		}
	}
}

func TestEditAndRerun(t *testing.T) {
	f := newContractFake(t, func(r *fakeRun) {
		r.answer(fmt.Sprintf("You said: %s", r.message))
	})
	p := open(t, f)
	p.Send("first question")
	p.WaitText(webtest.LastAnswer, "You said: first question")
	p.Send("second question")
	p.WaitText(webtest.LastAnswer, "You said: second question")

	first := turn(1)
	p.Click(first + ` [data-action="edit-message"]`)
	p.Fill(first+" .msg-editor textarea", "first question, edited")
	p.CheckAccessible()
	p.Screenshot("editing")
	p.Click(first + ` [data-action="rerun"]`)

	// conv-1's runs are run-2 and run-3.
	req := f.requestsTo("POST", "/api/v1/conversations/conv-1/runs/run-2/edit", 1)[0]
	jsonEqual(t, "the edit body", req.Body, `{"message": "first question, edited"}`)
	p.WaitText(webtest.LastAnswer, "You said: first question, edited")
	if n := p.Count("#transcript > li.turn.superseded"); n != 2 {
		t.Errorf("%d superseded turns, want 2", n)
	}
	p.Screenshot("rerun")

	// Read again, the page shows the active branch only: the edited
	// message's versions are a click on "< i / n >" away.
	p.Reload()
	p.WaitText(webtest.LastAnswer, "You said: first question, edited")
	if n, all := p.Count("#transcript > li.turn.superseded"), p.Count("#transcript > li.turn"); n != 0 || all != 1 {
		t.Errorf("after a reload, %d turns, %d superseded; want the edited one alone", all, n)
	}
}

func TestAPIKeyAndErrors(t *testing.T) {
	f := newContractFake(t, func(r *fakeRun) {
		if r.message == "fail" {
			r.emit("run.failed", map[string]any{"error": map[string]any{"code": "model_error", "message": "the model returned nonsense"}})
			return
		}
		r.answer("Hi!")
	})
	f.requireKey("sk-test")
	p := open(t, f)

	// Without the key the API answers 401; the page says so and offers
	// the settings.
	p.WaitText(webtest.ErrorBanner, "missing or wrong API key")
	p.Click(webtest.ErrorBanner + ` [data-action="settings"]`)
	p.WaitVisible("#settings")
	p.Type("#api-key", "sk-test")
	p.Click("#settings-save")
	p.WaitGone("#settings")
	p.WaitText("#tool-list", "send_email")
	p.Send("hello")
	p.WaitText(webtest.LastAnswer, "Hi!")
	chat := f.requestsTo("POST", "/api/v1/chat", 1)[0]
	if got := chat.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	if got := webtest.Eval[string](p, `localStorage.getItem("trellis.apiKey")`); got != "sk-test" {
		t.Errorf("the stored key = %q", got)
	}

	// An API error is shown, and the message goes back to the composer.
	f.failChat(&fakeFailure{503, "not_ready", "the model provider's circuit is open; try again in a minute"})
	p.Send("are you there?")
	p.WaitText(webtest.ErrorBanner, "circuit is open; try again in a minute (not_ready)")
	if got := webtest.Eval[string](p, `document.querySelector("#composer-input").value`); got != "are you there?" {
		t.Errorf("the composer after a failed send = %q", got)
	}
	if n := p.Count("#transcript > li.turn"); n != 1 {
		t.Errorf("%d turns after a failed send, want 1", n)
	}
	p.Screenshot("api-error")
	f.failChat(nil)

	// A failed run says why.
	p.Fill(webtest.Composer, "")
	p.Send("fail")
	p.WaitText(webtest.LastTurn+" .run-error", "the model returned nonsense (model_error)")
	p.WaitText(webtest.LastTurn+" .turn-status", "Failed")
}

func TestDirectResponses(t *testing.T) {
	const png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	f := newContractFake(t, func(r *fakeRun) {
		for _, d := range []map[string]any{
			{"content": "Plain <b>text</b>", "content_type": "text"},
			{"content": "**Bold** move", "content_type": "markdown"},
			{"content": `<h1>Report</h1><script>parent.document.title = "pwned"</script>`, "content_type": "html"},
			{"content": `{"a":1,"b":[1,2]}`, "content_type": "json"},
			{"content": png, "content_type": "image"},
			{"content": "<div>chart</div>", "content_type": "widget", "widget_type": "chart"},
		} {
			if _, ok := d["widget_type"]; !ok {
				d["widget_type"] = ""
			}
			r.emit("direct.response", d)
		}
		r.answer("Done.")
	})
	p := open(t, f)
	p.Send("Show me everything")
	p.WaitText(webtest.LastAnswer, "Done.")
	last := webtest.LastTurn
	p.WaitText(last+" .direct-text", "Plain <b>text</b>") // shown as text
	p.WaitText(last+" .direct-markdown strong", "Bold")
	if got := p.Attr(last+" .direct-html iframe", "sandbox"); got != "" || p.Count(last+" .direct-html iframe[sandbox]") != 1 {
		t.Errorf("the HTML response is not in a sandboxed iframe (sandbox=%q)", got)
	}
	if got := webtest.Eval[string](p, `document.querySelector("`+last+` .direct-html iframe").srcdoc`); !strings.Contains(got, "<h1>Report</h1>") {
		t.Errorf("the iframe's srcdoc = %q", got)
	}
	p.WaitText(last+" .direct-json pre", "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ]\n}")
	p.WaitJS("the image loaded", `(sel) => { const i = document.querySelector(sel); return i && i.complete && i.naturalWidth === 1 }`, last+" .direct-image img")
	p.WaitText(last+" .direct-widget .badge", "chart")
	if p.Count(last+" .direct-widget iframe[sandbox]") != 1 {
		t.Error("the widget is not in a sandboxed iframe")
	}
	if got := webtest.Eval[string](p, "document.title"); got != "Trellis" {
		t.Errorf("document.title = %q: script in operator HTML ran", got)
	}
	p.CheckAccessible()
	p.Do("scroll to the top", chromedp.ScrollIntoView(chromedp.CSS(webtest.LastTurn+" .user-msg")))
	p.Screenshot("direct-responses")
}
