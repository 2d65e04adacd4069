package emutest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ChromiumBinary finds a Chromium for the tests that check a page in a
// real browser: $GRIDBED_CHROMIUM, chromium on PATH, then the launcher
// emulator/report/install-chromium.sh puts in the user's cache directory.
// Without one the test is skipped, except under CI=true, where it fails.
func ChromiumBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("GRIDBED_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("GRIDBED_CHROMIUM=%s is not an executable: %v", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if dir, err := os.UserCacheDir(); err == nil {
		p := filepath.Join(dir, "gridbed", "chromium", "chromium")
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	msg := "no Chromium: run emulator/report/install-chromium.sh, put chromium on PATH or set GRIDBED_CHROMIUM"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: the page must be checked in a real browser)")
	}
	t.Skip(msg)
	return ""
}

// Chromium runs headless Chromium on a local page with args, within two
// minutes, and returns its standard output. --no-sandbox: the page is
// the test's own file, and the sandbox needs privileges a test may not
// have.
func Chromium(t testing.TB, bin, page string, args ...string) string {
	t.Helper()
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=" + t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+abs)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}
