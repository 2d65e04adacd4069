package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// resultsMarker is written into every results directory gridbed makes: a
// directory holding it (or, from earlier versions, a summary.json or a
// sweep.md) may be replaced by a new run's results as a whole.
const resultsMarker = ".gridbed-results"

// outDir is a results directory being written: a run writes into a
// temporary sibling (tmp) and Commit renames it into place at the end, so
// a reader never sees half a run's files, nor an earlier run's files
// beside a new run's.
type outDir struct {
	final, tmp string
}

// prepareOut proves dir can take a run's results before the run starts:
// its parent is created, a temporary sibling is created in it (the run
// writes there), and an existing dir must be empty or an earlier gridbed
// results directory. Errors say what to write instead.
func prepareOut(flagName, dir string) (*outDir, error) {
	clean := filepath.Clean(dir)
	parent, base := filepath.Dir(clean), filepath.Base(clean)
	if base == "." || base == ".." || base == string(filepath.Separator) {
		return nil, fmt.Errorf("%s %s: name a directory to create, e.g. %s results/myrun", flagName, dir, flagName)
	}
	if st, err := os.Stat(clean); err == nil {
		if !st.IsDir() {
			return nil, fmt.Errorf("%s %s: is a file, not a directory — choose another %s", flagName, dir, flagName)
		}
		if ok, other, err := isResultsDir(clean); err != nil {
			return nil, fmt.Errorf("%s %s: %v", flagName, dir, err)
		} else if !ok {
			return nil, fmt.Errorf("%s %s: holds files that are not an earlier gridbed run's results (%s): gridbed replaces a results directory as a whole — choose a new directory, or empty this one", flagName, dir, other)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s %s: cannot be used as a results directory (%v) — choose a writable place", flagName, dir, err)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("%s %s: cannot create its parent directory: %v — choose a writable place", flagName, dir, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("%s %s: cannot write next to it: %v — choose a writable place", flagName, dir, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("%s %s: %v", flagName, dir, err)
	}
	if err := os.WriteFile(filepath.Join(tmp, resultsMarker), []byte("gridbed results, written "+time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("%s %s: cannot write into it: %v — choose a writable place", flagName, dir, err)
	}
	return &outDir{final: clean, tmp: tmp}, nil
}

// isResultsDir reports whether dir may be replaced: it is empty or holds
// an earlier gridbed run's (or sweep's) results; other names one entry
// that says it is not.
func isResultsDir(dir string) (ok bool, other string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, "", err
	}
	if len(entries) == 0 {
		return true, "", nil
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	for _, mark := range []string{resultsMarker, "summary.json", "sweep.md"} {
		if slices.Contains(names, mark) {
			return true, "", nil
		}
	}
	return false, names[0], nil
}

// Dir is where the run writes its files.
func (o *outDir) Dir() string { return o.tmp }

// Commit puts the written results in place: an earlier results directory
// is moved aside, the new one renamed into its place, the old one removed.
func (o *outDir) Commit() error {
	old := ""
	if _, err := os.Stat(o.final); err == nil {
		old = o.tmp + ".old"
		if err := os.Rename(o.final, old); err != nil {
			return fmt.Errorf("moving the earlier results in %s aside: %v (the new ones are in %s)", o.final, err, o.tmp)
		}
	}
	if err := os.Rename(o.tmp, o.final); err != nil {
		if old != "" {
			_ = os.Rename(old, o.final)
		}
		return fmt.Errorf("putting the results in place: %v (they are in %s)", err, o.tmp)
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

// Discard removes the temporary directory (nothing to keep).
func (o *outDir) Discard() { os.RemoveAll(o.tmp) }
