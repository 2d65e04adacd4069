package workload

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/gridbed/gridbed/emulator/scenario"
)

// Categorize draws 002 §5.2's constraint kinds in their shares, each
// job's CID is exactly the combinations its constraint accepts, exact
// jobs stay within the combinations in use, and nothing else of the jobs
// changes.
func TestCategorize(t *testing.T) {
	w := scenario.Default().Workload
	w.Jobs = 4000
	base := Generate(w, 3, 1000*time.Hour, 7, nil)
	jobs := Generate(w, 3, 1000*time.Hour, 7, nil)
	pc := scenario.PeersCategorical{Types: 4, Values: 3, Combinations: 20}
	Categorize(jobs, scenario.WorkloadCategorical{Exact: 0.5, Range: 0.3, DontCare: 0.25}, pc, 7)
	space := pc.Space()
	kinds := map[string]int{}
	for i, j := range jobs {
		if j.ID != base[i].ID || j.At != base[i].At || !reflect.DeepEqual(j.Req, base[i].Req) || j.Work != base[i].Work {
			t.Fatalf("job %d changed beyond its categories: %+v, was %+v", j.ID, j, base[i])
		}
		n := 0
		for c := range space.Combinations() {
			if j.CID.Has(c) != j.Constraint.Accepts(space.ValuesOf(c)) {
				t.Fatalf("job %d: CID and constraint disagree on combination %d", j.ID, c)
			}
			if j.CID.Has(c) {
				n++
			}
		}
		switch {
		case n == 1:
			kinds["exact"]++
			for c := pc.InUse(); c < space.Combinations(); c++ {
				if j.CID.Has(c) {
					kinds["single outside use"]++ // a range job narrowed to one value per type
				}
			}
		case n == space.Combinations():
			kinds["any"]++
		default:
			kinds["range"]++
		}
	}
	// Range jobs leave every type free with probability 0.25^4 and pick
	// one value per type with probability (0.75·1/3)^4: both rare, so the
	// shares of one, all and some combinations are about the kinds'.
	for k, want := range map[string]float64{"exact": 0.5, "range": 0.3, "any": 0.2} {
		if got := float64(kinds[k]) / float64(len(jobs)); math.Abs(got-want) > 0.03 {
			t.Errorf("%s jobs: %.3f of them, want about %.2f (%v)", k, got, want, kinds)
		}
	}
	if k := kinds["single outside use"]; float64(k) > 0.01*float64(len(jobs)) {
		t.Errorf("%d single-combination jobs outside the %d in use: exact jobs must draw among those", k, pc.InUse())
	}
	again := Generate(w, 3, 1000*time.Hour, 7, nil)
	Categorize(again, scenario.WorkloadCategorical{Exact: 0.5, Range: 0.3, DontCare: 0.25}, pc, 7)
	if !reflect.DeepEqual(again, jobs) {
		t.Fatal("the same seed drew different categories")
	}
	none := Generate(w, 3, 1000*time.Hour, 7, nil)
	Categorize(none, scenario.WorkloadCategorical{}, pc, 7)
	if none[0].CID != nil || !reflect.DeepEqual(none, base) {
		t.Fatal("without categorical constraints Categorize must leave the jobs alone")
	}
}
