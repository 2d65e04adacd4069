package emulator

import (
	"fmt"
	"strings"
)

// Outcomes of a run (summary.json "outcome"). Every run ends with exactly
// one; a run is evidence only when it passed (docs/ARCHITECTURE.md
// principle 11: a verdict cannot pass vacuously — "unknown" is never "ok").
const (
	// OutcomePassed: the run reached its end and every invariant held.
	OutcomePassed = "passed"
	// OutcomeFailed: the run reached its end and an invariant failed.
	OutcomeFailed = "failed"
	// OutcomeOverloaded: the emulator could not keep up with the time
	// scale (the overload guard stopped the run, its clock fell behind the
	// tolerance, the bus dropped messages, or memory ran out): its figures
	// are distorted by the machine, not by the protocol.
	OutcomeOverloaded = "overloaded"
	// OutcomeInterrupted: a signal (or the caller's context) stopped the
	// run before its end; its figures cover the run up to there.
	OutcomeInterrupted = "interrupted"
)

// Exit statuses of gridbed run (documented in docs/RESULTS.md).
const (
	ExitFailed      = 3
	ExitOverloaded  = 4
	ExitInterrupted = 130
)

// ExitCode is the status gridbed run exits with for this summary: 0 for a
// completed run unless strict, where anything but passed is non-zero; an
// interrupted run 130 and a run the overload guard stopped 4 always (they
// did not complete).
func (s *Summary) ExitCode(strict bool) int {
	switch s.Outcome {
	case OutcomeInterrupted:
		return ExitInterrupted
	case OutcomeOverloaded:
		if strict || (s.Emulator != nil && s.Emulator.Aborted) {
			return ExitOverloaded
		}
	case OutcomeFailed:
		if strict {
			return ExitFailed
		}
		if s.Emulator != nil && s.Emulator.Aborted {
			return ExitOverloaded // a lost worker's run the overload guard stopped: it did not complete
		}
	}
	return 0
}

// overloadChecks are the invariants whose failure means the machine, not
// the protocol, distorted the run: the outcome is then overloaded.
var overloadChecks = map[string]bool{"kept_up": true, "run_completed": true}

// decide sets the run's outcome and its reasons from the invariants (and
// interrupted, when the run was stopped from outside). Reasons name the
// invariant or condition and what to change.
func (s *Summary) decide(interrupted string) {
	// A lost worker first (its peers crashed: it explains the rest), then
	// the machine's failures: they may explain the others. A lost worker
	// makes the run failed even when the machine also fell behind: part
	// of the run is gone, which no lower time scale would mend.
	var lost, machine, protocol []string
	for _, c := range s.Invariants.Checks {
		switch {
		case c.OK:
		case c.Name == "workers_alive":
			lost = append(lost, c.Name+": "+c.Detail)
		case overloadChecks[c.Name]:
			machine = append(machine, c.Name+": "+c.Detail)
		default:
			protocol = append(protocol, c.Name+": "+c.Detail)
		}
	}
	overloaded := len(machine) > 0
	s.OutcomeReasons = append(append(append([]string{}, lost...), machine...), protocol...) // [] in JSON when none
	switch {
	case interrupted != "":
		s.Outcome = OutcomeInterrupted
		s.OutcomeReasons = append([]string{interrupted}, s.OutcomeReasons...)
	case len(lost) > 0:
		s.Outcome = OutcomeFailed
	case overloaded:
		s.Outcome = OutcomeOverloaded
	case len(s.OutcomeReasons) > 0 || !s.Invariants.OK:
		s.Outcome = OutcomeFailed
	default:
		s.Outcome = OutcomePassed
	}
	s.Invariants.OK = s.Outcome == OutcomePassed
}

// OutcomeLine is the terminal's last line for the run.
func (s *Summary) OutcomeLine() string {
	switch s.Outcome {
	case OutcomePassed:
		return "outcome: passed — every invariant held"
	case "":
		return "outcome: unknown"
	}
	return fmt.Sprintf("outcome: %s — %s", strings.ToUpper(s.Outcome), strings.Join(s.OutcomeReasons, "; "))
}

// Check returns the invariant check called name, or nil.
func (v *InvariantsSummary) Check(name string) *InvariantCheck {
	for i := range v.Checks {
		if v.Checks[i].Name == name {
			return &v.Checks[i]
		}
	}
	return nil
}

// add appends a check; a failed one marks the invariants failed.
func (v *InvariantsSummary) add(c InvariantCheck) {
	if !c.OK {
		v.OK = false
	}
	v.Checks = append(v.Checks, c)
}
