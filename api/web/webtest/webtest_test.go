package webtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
)

func TestFileName(t *testing.T) {
	for in, want := range map[string]string{
		"TestPage/phone width": "TestPage_phone_width",
		"../../etc/passwd":     "etc_passwd",
		"approval-card":        "approval-card",
		"a b\tc.png":           "a_b_c.png",
	} {
		if got := fileName(in); got != want {
			t.Errorf("fileName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestScreenshotDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(ArtifactsEnv, dir)
	if got, want := ScreenshotDir(t), filepath.Join(dir, "screenshots"); got != want {
		t.Errorf("with %s set, ScreenshotDir = %q, want %q", ArtifactsEnv, got, want)
	}
	t.Setenv(ArtifactsEnv, "")
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ScreenshotDir(t), filepath.Join(root, "artifacts", "screenshots"); got != want {
		t.Errorf("by default, ScreenshotDir = %q, want %q", got, want)
	}
}

// A page that renders its button anew every 20 ms, as a live list does
// while events come: no Click fails on the node its query found being
// gone (before, one in a few did). A click whose press and release fall
// on either side of a rendering is lost, as a user's would be, so the
// clicks that land are counted, not required.
func TestClickAnElementRenderedAnew(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<!doctype html><body><div id="list"></div><script>
const list = document.getElementById("list");
let clicks = 0;
list.addEventListener("click", () => { clicks++; document.body.dataset.clicks = clicks; });
const render = () => { list.innerHTML = '<button data-path="notes.md">notes.md</button>'; };
render();
setInterval(render, 20);
document.body.dataset.ready = "true";
</script></body>`)
	}))
	defer srv.Close()
	p := Open(t, Browser(t), srv.URL)
	const n = 30
	for range n {
		p.Click(`#list button[data-path="notes.md"]`)
	}
	landed, err := strconv.Atoi(Eval[string](p, `document.body.dataset.clicks || "0"`))
	if err != nil || landed < n/2 {
		t.Errorf("%d of %d clicks landed (%v)", landed, n, err)
	}
}
