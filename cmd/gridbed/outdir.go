package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// resultsMarker is written into every results directory gridbed makes, as
// its last file before the directory is put in place: it names the run
// that wrote it and lists every file the run wrote. A directory is
// replaced by a new run's results only when it is empty or holds this
// marker and nothing the marker does not list — never because of a file
// name such as summary.json, which any directory may hold.
const resultsMarker = ".gridbed-results"

// tempMarker is written first into a run's temporary directory, naming
// the process: a later run removes a temporary directory only when it
// holds this file and its run is no longer alive.
const tempMarker = ".gridbed-temp"

// markerHeader opens a resultsMarker; the listed files follow it, one
// path (slash-separated, relative to the directory) per line.
const markerHeader = "gridbed results"

// outDir is a results directory being written: a run writes into a
// temporary sibling (tmp) and Commit renames it into place at the end, so
// a reader never sees half a run's files, nor an earlier run's files
// beside a new run's. From prepareOut to Commit or Discard the run holds
// a lock on the directory's name (a file .NAME.lock beside it, removed
// when the run lets go), so a second run into the same directory is
// refused rather than racing it.
type outDir struct {
	final, tmp string
	lock       *os.File
	once       sync.Once
}

// errOutBusy is prepareOut's error when another live run holds the
// directory's lock.
var errOutBusy = errors.New("another gridbed run is writing there")

// prepareOut proves dir can take a run's results before the run starts:
// its parent is created, the directory's lock is taken (refused if another
// run holds it), temporary directories that runs no longer alive left in
// the parent are removed (said on notes), an existing dir must be empty or
// an earlier gridbed results directory holding only what gridbed wrote,
// and a temporary sibling is created for the run to write in. Errors say
// what to write instead.
func prepareOut(flagName, dir string, notes io.Writer) (*outDir, error) {
	clean := filepath.Clean(dir)
	parent, base := filepath.Dir(clean), filepath.Base(clean)
	if base == "." || base == ".." || base == string(filepath.Separator) {
		return nil, fmt.Errorf("%s %s: name a directory to create, e.g. %s results/myrun", flagName, dir, flagName)
	}
	if st, err := os.Stat(clean); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%s %s: is a file, not a directory — choose another %s", flagName, dir, flagName)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s %s: cannot be used as a results directory (%v) — choose a writable place", flagName, dir, err)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("%s %s: cannot create its parent directory: %v — choose a writable place", flagName, dir, err)
	}
	lock, holder, err := lockName(parent, base)
	if err != nil {
		if errors.Is(err, errOutBusy) {
			return nil, fmt.Errorf("%s %s: %v (%s) — wait for it to end, or choose another %s", flagName, dir, err, holder, flagName)
		}
		return nil, fmt.Errorf("%s %s: cannot lock it: %v — choose a writable place", flagName, dir, err)
	}
	od := &outDir{final: clean, lock: lock}
	removeDeadTemps(parent, base, notes)
	if _, err := os.Stat(clean); err == nil {
		if ok, why, err := isResultsDir(clean); err != nil {
			od.unlock()
			return nil, fmt.Errorf("%s %s: %v", flagName, dir, err)
		} else if !ok {
			od.unlock()
			return nil, fmt.Errorf("%s %s: %s, and gridbed replaces a results directory as a whole, so it would be lost — choose a new directory, or move that away", flagName, dir, why)
		}
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".tmp-")
	if err != nil {
		od.unlock()
		return nil, fmt.Errorf("%s %s: cannot write next to it: %v — choose a writable place", flagName, dir, err)
	}
	od.tmp = tmp
	if err := os.Chmod(tmp, 0o755); err != nil {
		od.Discard()
		return nil, fmt.Errorf("%s %s: %v", flagName, dir, err)
	}
	if err := os.WriteFile(filepath.Join(tmp, tempMarker), []byte(processLine()), 0o644); err != nil {
		od.Discard()
		return nil, fmt.Errorf("%s %s: cannot write into it: %v — choose a writable place", flagName, dir, err)
	}
	registerExitCleanup(od)
	return od, nil
}

// processLine names this process for a lock or temp file: pid, start time
// and command line.
func processLine() string {
	return fmt.Sprintf("pid %d, started %s: %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339), strings.Join(os.Args, " "))
}

// lockName takes the lock of results directory base in parent: an
// exclusive flock on parent/.base.lock, which names the holder. When
// another live process holds it, the error is errOutBusy and holder is
// what that process wrote (the kernel drops a dead process's lock, so a
// crashed run never blocks the next). The holder removes the file when it
// lets go (unlockFile); a process that locked a file so removed finds the
// name no longer refers to it and tries again.
func lockName(parent, base string) (f *os.File, holder string, err error) {
	path := filepath.Join(parent, "."+base+".lock")
	for range 100 {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, "", err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			b, _ := io.ReadAll(io.LimitReader(f, 4096))
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, strings.TrimSpace(string(b)), errOutBusy
			}
			return nil, "", err
		}
		held, err1 := f.Stat()
		named, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			if err := f.Truncate(0); err == nil {
				_, _ = f.WriteAt([]byte(processLine()), 0)
			}
			return f, "", nil
		}
		f.Close() // its holder removed it as we locked it: the name is free again
	}
	return nil, "", fmt.Errorf("%s keeps changing", path)
}

// unlockFile removes a lock file lockName took and lets it go.
func unlockFile(f *os.File) {
	_ = os.Remove(f.Name())
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}

// tempName matches a run's temporary directory (.NAME.tmp-DIGITS) and
// the earlier results a Commit moved aside (the same with .old).
var tempName = regexp.MustCompile(`^\.(.+)\.tmp-[0-9]+(\.old)?$`)

// removeDeadTemps removes, from parent, the temporary directories of runs
// that are no longer alive: a temp of the results directory base (whose
// lock this run holds, so no live run writes it), and a temp of another
// name whose lock can be taken now. Only directories gridbed marked as
// its own are touched; each removal is said on notes. An .old directory
// (earlier results moved aside by a Commit that did not finish) is put
// back when its results directory is missing, else removed.
func removeDeadTemps(parent, base string, notes io.Writer) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		m := tempName.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		name, old := m[1], m[2] != ""
		path := filepath.Join(parent, e.Name())
		mark := tempMarker
		if old {
			mark = resultsMarker
		}
		if _, err := os.Stat(filepath.Join(path, mark)); err != nil {
			continue // not gridbed's
		}
		if name != base {
			l, _, err := lockName(parent, name)
			if err != nil {
				continue // alive, or not ours to judge
			}
			defer unlockFile(l)
		}
		if old {
			final := filepath.Join(parent, name)
			if _, err := os.Stat(final); errors.Is(err, fs.ErrNotExist) {
				if os.Rename(path, final) == nil {
					fmt.Fprintf(notes, "gridbed: put back %s: earlier results a run that did not finish had moved aside to %s\n", final, path)
				}
				continue
			}
		}
		if err := os.RemoveAll(path); err == nil {
			fmt.Fprintf(notes, "gridbed: removed %s: the temporary directory of a run that is no longer alive\n", path)
		}
	}
}

// isResultsDir reports whether dir may be replaced: it is empty, or it
// holds gridbed's marker and nothing the marker does not list. why says,
// when not, which entry is in the way.
func isResultsDir(dir string) (ok bool, why string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, "", err
	}
	if len(entries) == 0 {
		return true, "", nil
	}
	b, err := os.ReadFile(filepath.Join(dir, resultsMarker))
	if err != nil {
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name()
		}
		slices.Sort(names)
		return false, fmt.Sprintf("holds files gridbed did not write (%s, …; a results directory gridbed wrote holds a %s file)", names[0], resultsMarker), nil
	}
	listed, err := parseMarker(b)
	if err != nil {
		return false, fmt.Sprintf("holds a %s file gridbed cannot read (%v)", resultsMarker, err), nil
	}
	var extra string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() || rel == resultsMarker {
			return nil
		}
		if _, ok := listed[rel]; !ok {
			extra = rel
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return false, "", err
	}
	if extra != "" {
		return false, fmt.Sprintf("holds %s, which the gridbed run that wrote the directory did not write", extra), nil
	}
	return true, "", nil
}

// parseMarker reads a resultsMarker: the header line, a line naming the
// run, then the files.
func parseMarker(b []byte) (map[string]struct{}, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	if !sc.Scan() || sc.Text() != markerHeader {
		if strings.HasPrefix(sc.Text(), markerHeader+", written") {
			return nil, errors.New("an earlier gridbed wrote it without listing its files; remove the directory yourself if it holds only that run's results")
		}
		return nil, fmt.Errorf("it does not start with %q", markerHeader)
	}
	files := map[string]struct{}{}
	for sc.Scan() {
		if f, ok := strings.CutPrefix(sc.Text(), "file "); ok {
			files[f] = struct{}{}
		}
	}
	return files, sc.Err()
}

// writeMarker lists every file under dir in its resultsMarker, with the
// run that wrote them.
func writeMarker(dir string) error {
	var b strings.Builder
	b.WriteString(markerHeader + "\n")
	b.WriteString("run " + processLine())
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == resultsMarker || rel == tempMarker {
			return nil
		}
		b.WriteString("file " + rel + "\n")
		n++
		return nil
	})
	if err != nil {
		return err
	}
	b.WriteString("files " + strconv.Itoa(n) + "\n")
	return os.WriteFile(filepath.Join(dir, resultsMarker), []byte(b.String()), 0o644)
}

// Dir is where the run writes its files.
func (o *outDir) Dir() string { return o.tmp }

// Commit puts the written results in place: the marker listing them is
// written, an earlier results directory (checked again: nothing of anyone
// else's may have arrived in it meanwhile) is moved aside, the new one
// renamed into its place, the old one removed, the lock released.
func (o *outDir) Commit() error {
	defer o.unlock()
	if err := writeMarker(o.tmp); err != nil {
		return fmt.Errorf("marking the results: %v (they are in %s)", err, o.tmp)
	}
	_ = os.Remove(filepath.Join(o.tmp, tempMarker))
	old := ""
	if _, err := os.Stat(o.final); err == nil {
		if ok, why, err := isResultsDir(o.final); err != nil || !ok {
			if err != nil {
				why = err.Error()
			}
			return fmt.Errorf("%s %s since the run started; the results are in %s", o.final, why, o.tmp)
		}
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
	o.tmp = ""
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

// Discard removes the temporary directory (nothing to keep) and releases
// the lock.
func (o *outDir) Discard() {
	if o.tmp != "" {
		os.RemoveAll(o.tmp)
		o.tmp = ""
	}
	o.unlock()
}

// unlock releases the directory's lock, once.
func (o *outDir) unlock() {
	o.once.Do(func() {
		unregisterExitCleanup(o)
		if o.lock != nil {
			unlockFile(o.lock)
		}
	})
}

// exitCleanup holds the results directories being written, whose
// temporaries an exit at once (a second interrupt) removes.
var exitCleanup struct {
	sync.Mutex
	dirs map[*outDir]struct{}
}

func registerExitCleanup(o *outDir) {
	exitCleanup.Lock()
	defer exitCleanup.Unlock()
	if exitCleanup.dirs == nil {
		exitCleanup.dirs = map[*outDir]struct{}{}
	}
	exitCleanup.dirs[o] = struct{}{}
}

func unregisterExitCleanup(o *outDir) {
	exitCleanup.Lock()
	defer exitCleanup.Unlock()
	delete(exitCleanup.dirs, o)
}

// removeTemps removes the temporary directory of every results directory
// still being written, naming each on w: called on an exit at once.
func removeTemps(w io.Writer) {
	exitCleanup.Lock()
	defer exitCleanup.Unlock()
	for o := range exitCleanup.dirs {
		if o.tmp != "" && os.RemoveAll(o.tmp) == nil {
			fmt.Fprintf(w, "gridbed: removed %s (unfinished results)\n", o.tmp)
		}
	}
}
