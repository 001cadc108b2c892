package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf/internal/schemabench"
	"github.com/structgen/structgen/mask"
)

// calibrate measures what a work unit of mask's eager part costs
// (mask.WorkUnitNanos, mask.StateWorkUnits): every nth strict grammar of
// the corpus compiled with everything eager, the fastest of runs
// compilations each; it prints the nanoseconds per unit over the
// grammars (those of at least 20,000 units) and the least-squares fit
// of time = a·units + b·states (relative error) that gives the state's
// fixed cost b/a in units.
func calibrate(cases []*schemabench.Case, v *mask.Vocab, every, runs int) {
	type sample struct{ ns, units, states float64 }
	var ss []sample
	for i, c := range cases {
		if i%every != 0 {
			continue
		}
		src, err := jsonschema2gbnf.Convert(c.Schema)
		if err != nil {
			continue
		}
		g, err := gbnf.Parse(src)
		if err != nil {
			continue
		}
		best := time.Duration(1 << 62)
		var st mask.CompileStats
		for range runs {
			cc, err := mask.CompileWith(g, v, mask.Options{EagerWork: -1, EagerTimeout: -1})
			if err != nil {
				break
			}
			st = cc.Stats()
			best = min(best, st.WalkDuration)
		}
		if st.EagerWork < 20000 {
			continue
		}
		ss = append(ss, sample{float64(best.Nanoseconds()), float64(st.EagerWork), float64(st.EagerStates)})
	}
	if len(ss) == 0 {
		fmt.Println("calibrate: no grammar")
		return
	}
	per := make([]float64, len(ss))
	for i, s := range ss {
		per[i] = s.ns / s.units
	}
	sort.Float64s(per)
	q := func(p int) float64 { return per[min(len(per)-1, len(per)*p/100)] }
	fmt.Printf("calibrate: %d grammars (every %dth, fastest of %d): ns per work unit p5 %.1f, p25 %.1f, p50 %.1f, p75 %.1f, p95 %.1f\n",
		len(ss), every, runs, q(5), q(25), q(50), q(75), q(95))
	// Minimize Σ((a·u + b·s)/ns − 1)²: the normal equations of two unknowns.
	var uu, vv, uv, u1, v1 float64
	for _, s := range ss {
		u, w := s.units/s.ns, s.states/s.ns
		uu, vv, uv, u1, v1 = uu+u*u, vv+w*w, uv+u*w, u1+u, v1+w
	}
	det := uu*vv - uv*uv
	a, b := (u1*vv-v1*uv)/det, (uu*v1-uv*u1)/det
	fmt.Printf("calibrate: time ≈ %.2f ns·units + %.0f ns·states (a state's fixed cost ≈ %.0f units beyond mask.StateWorkUnits = %d)\n",
		a, b, b/a, mask.StateWorkUnits)
}
