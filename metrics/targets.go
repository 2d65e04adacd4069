package metrics

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
)

// Prometheus file-based service discovery: every /metrics server a
// gridbed process starts (a run's, each worker's) writes one target file,
// a JSON list with one entry — its address and the label gridbed_process
// (run, worker) —, into TargetsDir, and removes it when it closes. The
// shipped grafana/prometheus.yml reads that directory (file_sd_configs),
// so one configuration scrapes every process of every run on the machine,
// whatever port each found free. A process killed before it closed leaves
// its file behind (its target shows as down in Prometheus; delete the
// file by hand); gridbed removes only the files it wrote.

// TargetsDirEnv names the directory of the target files instead of the
// default; "off" writes none.
const TargetsDirEnv = "GRIDBED_TARGETS_DIR"

// TargetsDir is where target files go: $GRIDBED_TARGETS_DIR, else
// gridbed/targets under the user's cache directory (~/.cache on Linux),
// else under the temporary directory; "" when $GRIDBED_TARGETS_DIR is
// "off".
func TargetsDir() string {
	switch d := os.Getenv(TargetsDirEnv); d {
	case "off":
		return ""
	case "":
	default:
		return d
	}
	if c, err := os.UserCacheDir(); err == nil {
		return filepath.Join(c, "gridbed", "targets")
	}
	return filepath.Join(os.TempDir(), "gridbed-targets")
}

var (
	advertiseMu sync.Mutex
	advertiseAs string // the gridbed_process label; "" advertises nothing
)

// Advertise makes every /metrics server this process starts from now on
// write a target file (labelled gridbed_process=role, e.g. "run" or
// "worker") into TargetsDir and remove it when it closes. The gridbed
// command calls it; a library or test that serves metrics does not
// advertise unless it asks.
func Advertise(role string) {
	advertiseMu.Lock()
	defer advertiseMu.Unlock()
	advertiseAs = role
}

// advertising is the role servers advertise as ("" none).
func advertising() string {
	advertiseMu.Lock()
	defer advertiseMu.Unlock()
	return advertiseAs
}

// targetGroup is one entry of a file_sd target file.
type targetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// scrapeAddr is the address Prometheus on this machine scrapes a server
// listening on addr at: a server on every interface (0.0.0.0, ::) is
// reached on the loopback.
func scrapeAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// writeTarget writes the target file of a server listening on addr into
// dir, labelled with role: dir/gridbed-<pid>-<port>.json, written whole
// (a temporary file renamed into place: Prometheus never reads half of
// one). It returns the file's path.
func writeTarget(dir, addr, role string) (string, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent([]targetGroup{{Targets: []string{scrapeAddr(addr)}, Labels: map[string]string{"gridbed_process": role}}}, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("gridbed-%d-%s.json", os.Getpid(), port))
	tmp, err := os.CreateTemp(dir, ".gridbed-target-*")
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(append(data, '\n'))
	cerr := tmp.Close()
	if err := firstErr(werr, cerr, os.Chmod(tmp.Name(), 0o644)); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return path, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
