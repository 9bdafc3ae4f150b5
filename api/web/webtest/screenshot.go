package webtest

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ArtifactsEnv names the environment variable holding the directory for
// test artifacts; screenshots go in its "screenshots" subdirectory. It
// defaults to "artifacts" at the repository root (the directory holding
// go.mod), which .gitignore leaves out.
const ArtifactsEnv = "TRELLIS_ARTIFACTS"

// ScreenshotDir is the directory Screenshot writes to:
// $TRELLIS_ARTIFACTS/screenshots, by default <repo>/artifacts/screenshots.
func ScreenshotDir(t testing.TB) string {
	t.Helper()
	root := os.Getenv(ArtifactsEnv)
	if root == "" {
		repo, err := repoRoot()
		if err != nil {
			t.Fatalf("webtest: find the repository root for artifacts (set %s to choose a directory): %v", ArtifactsEnv, err)
		}
		root = filepath.Join(repo, "artifacts")
	}
	return filepath.Join(root, "screenshots")
}

// Screenshot saves a PNG of the whole page in ctx's tab as
// <ScreenshotDir>/<test name>--<name>.png and returns the path. A failure
// to capture or write is reported with t.Errorf: the test goes on, failed.
func Screenshot(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100)) // quality 100 is PNG
	if err != nil {
		t.Errorf("webtest: screenshot %q: %v", name, err)
		return ""
	}
	dir := ScreenshotDir(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Errorf("webtest: screenshot %q: %v", name, err)
		return ""
	}
	path := filepath.Join(dir, fileName(t.Name())+"--"+fileName(name)+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Errorf("webtest: screenshot %q: %v", name, err)
		return ""
	}
	t.Logf("screenshot: %s", path)
	return path
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// fileName makes a test or screenshot name safe as one path element.
func fileName(s string) string {
	return strings.Trim(unsafeFileChars.ReplaceAllString(s, "_"), "_.")
}

// repoRoot walks up from the working directory (a package's directory
// under go test) to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
