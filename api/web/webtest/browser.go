package webtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	// chromedp drives Chromium over the DevTools protocol from plain Go
	// tests: no Node toolchain, no separate driver binary, and only the
	// standard library and its own protocol bindings (cdproto) as
	// dependencies. It is actively maintained, talks to the browser over a
	// pipe by default (no debugging port to race for), and cleans up the
	// browser process and its profile directory when the context ends.
	"github.com/chromedp/chromedp"
)

// ChromiumPath is where Debian's chromium package installs the browser;
// .ci/run installs the package when it is missing. When the file is
// absent, Browser looks for "chromium" on PATH.
const ChromiumPath = "/usr/bin/chromium"

const (
	// launchTimeout bounds starting the browser and opening its first tab.
	launchTimeout = 60 * time.Second
	// maxLife bounds the whole browser session of one test, for tests run
	// without -timeout; a test's own deadline, when sooner, wins.
	maxLife = 5 * time.Minute
	// closeTimeout bounds the graceful close; the process is killed after it.
	closeTimeout = 15 * time.Second
)

// Browser starts a headless Chromium for one test and returns the context
// of its first tab: pass it to chromedp.Run and chromedp.Do, to Open, and
// to Screenshot. Contexts made from it with chromedp.NewContext are more
// tabs of the same browser.
//
// The browser runs with
//
//	--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
//	--disable-background-networking --disable-component-update --disable-sync
//
// and a fresh temporary profile (--user-data-dir), which the allocator
// removes when the browser exits. It lives until the test ends, at most
// until the test's deadline and never longer than five minutes; a test
// cleanup closes it, waits for the process to exit, and leaves no
// goroutine behind. When the test has failed by then, the cleanup first
// saves a screenshot named "failure".
//
// Console messages of the page are logged with t.Logf, and an uncaught
// exception or unhandled promise rejection in the page fails the test.
//
// When Chromium is not installed, Browser skips the test, or fails it when
// the CI environment variable is set (.ci/run sets it).
func Browser(t testing.TB) context.Context {
	t.Helper()
	path := chromiumPath(t)

	life := maxLife
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			// Leave the test time to close the browser and report.
			if left := time.Until(dl) - closeTimeout - 5*time.Second; left < life {
				life = max(left, 10*time.Second)
			}
		}
	}

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// Quiet and deterministic: no scrollbars in screenshots, no
		// throttled timers in a hidden tab, no /dev/shm exhaustion in
		// containers.
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.WindowSize(1280, 860),
		// No --user-data-dir flag: the allocator then creates a temporary
		// profile, passes it as --user-data-dir, kills leftover child
		// processes and removes the directory when the browser exits.
	}

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	lifeCtx, cancelLife := context.WithTimeout(allocCtx, life)
	ctx, cancelTab := chromedp.NewContext(lifeCtx,
		chromedp.WithErrorf(func(format string, args ...any) { t.Logf("chromedp: "+format, args...) }),
	)

	// The first Do starts the browser, so its life is bound to lifeCtx;
	// the timer bounds only the launch.
	launch := time.AfterFunc(launchTimeout, cancelLife)
	err := chromedp.Do(ctx)
	launched := launch.Stop()
	if err != nil {
		cancelTab()
		cancelLife()
		cancelAlloc()
		if !launched {
			err = errors.Join(err, errors.New("launch timed out"))
		}
		t.Fatalf("webtest: start %s: %v", path, err)
	}

	console := watchConsole(t, ctx)
	t.Cleanup(func() {
		console.stop()
		cctx, cancel := context.WithTimeout(ctx, closeTimeout)
		defer cancel()
		if err := chromedp.Cancel(cctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			t.Logf("webtest: close browser: %v", err)
		}
		cancelTab()
		cancelLife()
		cancelAlloc() // waits for the process to exit and its profile to go
		console.wait()
	})
	// Registered after the close, so it runs before it.
	t.Cleanup(func() {
		if t.Failed() && ctx.Err() == nil {
			Screenshot(t, ctx, "failure")
		}
	})
	return ctx
}

// chromiumPath finds the browser, or skips or fails the test.
func chromiumPath(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err == nil {
		return ChromiumPath
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("webtest: Chromium is not installed (no %s, no chromium on PATH); install Debian's chromium package, as .ci/run does", ChromiumPath)
	}
	t.Skipf("webtest: Chromium is not installed (no %s); set CI to make this a failure", ChromiumPath)
	return ""
}

// consoleWatch logs the page's console into the test until stopped.
type consoleWatch struct {
	mu      sync.Mutex
	stopped bool
	done    chan struct{}
}

// watchConsole logs console messages and fails the test on uncaught
// exceptions, from one goroutine that ends with the browser's context.
func watchConsole(t testing.TB, ctx context.Context) *consoleWatch {
	w := &consoleWatch{done: make(chan struct{})}
	messages := chromedp.Console(ctx)
	go func() {
		defer close(w.done)
		for m, err := range messages {
			if err != nil {
				return
			}
			w.mu.Lock()
			if !w.stopped {
				if m.IsException() {
					t.Errorf("webtest: uncaught exception in the page: %s", m)
				} else {
					t.Logf("browser console.%s: %s", m.Type, m)
				}
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// stop makes later messages go unreported, so nothing is logged into a
// finished test.
func (w *consoleWatch) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

// wait waits for the goroutine, which ends when the browser's context does.
func (w *consoleWatch) wait() { <-w.done }
