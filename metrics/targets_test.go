package metrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTargetFiles: a server writes its target file only when the process
// advertises, names a server on every interface by the loopback, leaves no
// temporary behind, removes the file when it closes, and writes none with
// GRIDBED_TARGETS_DIR=off.
func TestTargetFiles(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(TargetsDirEnv, dir)
	reg := NewRun(RunInfo{Driver: "sim"}).Registry
	quiet, err := Serve("127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	if f, _ := quiet.TargetFile(); f != "" {
		t.Fatalf("a server wrote %s without Advertise", f)
	}
	Advertise("worker")
	defer Advertise("")
	srv, err := Serve("0.0.0.0:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := srv.TargetFile()
	if err != nil || filepath.Dir(f) != dir {
		t.Fatalf("target file %q (%v), want one in %s", f, err, dir)
	}
	b, _ := os.ReadFile(f)
	_, port, _ := strings.Cut(srv.Addr(), "]:")
	if port == "" {
		_, port, _ = strings.Cut(srv.Addr(), ":")
	}
	if !strings.Contains(string(b), `"127.0.0.1:`+port+`"`) || !strings.Contains(string(b), `"gridbed_process": "worker"`) {
		t.Errorf("%s:\n%s", f, b)
	}
	if all, _ := filepath.Glob(filepath.Join(dir, "*")); len(all) != 1 {
		t.Errorf("files in %s: %v, want the target file alone", dir, all)
	}
	srv.Close()
	if _, err := os.Stat(f); !os.IsNotExist(err) {
		t.Errorf("%s still there after Close: %v", f, err)
	}
	t.Setenv(TargetsDirEnv, "off")
	off, err := Serve("127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if f, _ := off.TargetFile(); f != "" {
		t.Errorf("%s=off wrote %s", TargetsDirEnv, f)
	}
	t.Setenv(TargetsDirEnv, "")
	if d := TargetsDir(); !strings.HasSuffix(d, filepath.Join("gridbed", "targets")) {
		t.Errorf("default targets dir %s", d)
	}
}
