package webtest

import (
	"path/filepath"
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
