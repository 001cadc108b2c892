package main

import (
	"fmt"
	"math"
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
	type sample struct {
		id                       string
		ns, units, nodes, states float64
	}
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
		ss = append(ss, sample{c.ID(), float64(best.Nanoseconds()), float64(st.EagerWork), float64(st.EagerNodes), float64(st.EagerStates)})
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
	fmt.Printf("calibrate: %d grammars (every %dth, fastest of %d): ns per work unit p5 %.1f, p25 %.1f, p50 %.1f, p75 %.1f, p95 %.1f, max %.1f\n",
		len(ss), every, runs, q(5), q(25), q(50), q(75), q(95), per[len(per)-1])
	// Minimize Σ((x·f)/ns − 1)² over the features f: the normal equations.
	fit := func(feat func(s sample) []float64) []float64 {
		k := len(feat(ss[0]))
		m := make([][]float64, k)
		for i := range m {
			m[i] = make([]float64, k+1)
		}
		for _, s := range ss {
			f := feat(s)
			for i := range f {
				f[i] /= s.ns
			}
			for i := range k {
				for j := range k {
					m[i][j] += f[i] * f[j]
				}
				m[i][k] += f[i]
			}
		}
		for i := range k { // Gauss-Jordan
			for r := range k {
				if r != i {
					x := m[r][i] / m[i][i]
					for j := i; j <= k; j++ {
						m[r][j] -= x * m[i][j]
					}
				}
			}
		}
		x := make([]float64, k)
		for i := range k {
			x[i] = m[i][k] / m[i][i]
		}
		return x
	}
	relErr := func(pred func(s sample) float64) (p50, p90, worst float64) {
		es := make([]float64, len(ss))
		for i, s := range ss {
			es[i] = math.Abs(pred(s)/s.ns - 1)
		}
		sort.Float64s(es)
		return es[len(es)/2], es[len(es)*9/10], es[len(es)-1]
	}
	x := fit(func(s sample) []float64 { return []float64{s.units, s.states} })
	e50, e90, emax := relErr(func(s sample) float64 { return x[0]*s.units + x[1]*s.states })
	fmt.Printf("calibrate: time ≈ %.2f ns·units + %.0f ns·states (a state's fixed cost ≈ %.0f units beyond mask.StateWorkUnits = %d); relative error p50 %.2f, p90 %.2f, max %.2f\n",
		x[0], x[1], x[1]/x[0], mask.StateWorkUnits, e50, e90, emax)
	y := fit(func(s sample) []float64 { return []float64{s.units - s.nodes, s.nodes, s.states} })
	e50, e90, emax = relErr(func(s sample) float64 { return y[0]*(s.units-s.nodes) + y[1]*s.nodes + y[2]*s.states })
	fmt.Printf("calibrate: time ≈ %.2f ns·(units − nodes) + %.2f ns·nodes + %.0f ns·states (a node ≈ %.1f units); relative error p50 %.2f, p90 %.2f, max %.2f\n",
		y[0], y[1], y[2], y[1]/y[0], e50, e90, emax)
	sort.Slice(ss, func(i, j int) bool { return ss[i].ns/ss[i].units > ss[j].ns/ss[j].units })
	for _, s := range ss[:min(8, len(ss))] {
		fmt.Printf("calibrate: %-40s %.1f ns/unit, %.0f units, %.0f%% nodes, %.0f states\n", s.id, s.ns/s.units, s.units, 100*s.nodes/s.units, s.states)
	}
}
