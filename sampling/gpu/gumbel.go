package gpu

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/x448/float16"

	"github.com/structgen/structgen/internal/minheap"
)

// Params are the Gumbel-max sampler's settings. Temperature ≤ 0 means
// argmax; every other field's zero value means "off".
type Params struct {
	Temperature   float32
	TopK          int     // 0 < TopK < V: keep about the TopK largest logits (12-step bisection)
	TopP          float32 // 0 < TopP < 1: keep a top mass of at most TopP (8-step bisection)
	MinP          float32 // 0 < MinP < 1: keep logits ≥ max + ln MinP
	RepeatPenalty float32 // r > 0, r ≠ 1: once per distinct previous token, x>0: x/r, else x·r
	SeedOffset    uint32
}

// Limits and constants of the kernel semantics.
const (
	// MaxVocab bounds the vocabulary: the top-p masses are sums of
	// fixed-point terms (massScaleBits fractional bits) in a uint64, and
	// MaxVocab·2^massScaleBits = 2⁶³ cannot overflow. No model comes near
	// 2²⁶ tokens.
	MaxVocab = 1 << 26

	topKSpan  = 30 // the top-k and top-p bisections search [M-30, M]
	topKSteps = 12
	topPSteps = 8

	// massScaleBits: e^(x-M) enters the top-p masses as
	// floor(e^(x-M)·2³⁷), an integer, so that the sums are exact and do
	// not depend on the order or the chunking (a device kernel can add
	// them with integer atomics and get the same bits).
	massScaleBits = 37
	// massCutoff: below M-25.7 the fixed-point term is 0
	// (e^-25.7·2³⁷ ≈ 0.95), so such logits are skipped.
	massCutoff = 25.7
)

var massScale = math.Ldexp(1, massScaleBits)

// massTerm is floor(e^(x-M)·2^massScaleBits), x and M float32 (x ≤ M).
func massTerm(x, m float32) uint64 {
	return uint64(math.Exp(float64(x)-float64(m)) * massScale)
}

// Sample returns the token the Gumbel-max kernel picks for logits at
// decode step `position`, given the previous tokens prev (for the
// repetition penalty). It does not modify logits or prev. See the package
// documentation for the exact semantics. It returns -1 when there is
// nothing to pick (no logits, more than MaxVocab, or every logit -Inf/NaN).
// Safe for concurrent use; allocation-free after warm-up.
func Sample(logits []float32, prev []int32, position uint32, p Params) int32 {
	if len(logits) == 0 || len(logits) > MaxVocab {
		return -1
	}
	ws := getWorkspace()
	tok := ws.sample(logits, prev, position, p, false)
	putWorkspace(ws)
	return tok
}

// SampleF16 is Sample for float16 logits: they are widened exactly to
// float32, every computation is the same, and each noised logit is rounded
// to float16 before the argmax, as the kernel does.
func SampleF16(logits []float16.Float16, prev []int32, position uint32, p Params) int32 {
	if len(logits) == 0 || len(logits) > MaxVocab {
		return -1
	}
	ws := getWorkspace()
	x := ws.widen(logits)
	tok := ws.sample(x, prev, position, p, true)
	putWorkspace(ws)
	return tok
}

// f16Round rounds a float32 to the nearest float16 (ties to even).
func f16Round(v float32) float32 { return float16.Fromfloat32(v).Float32() }

// entry is a (logit, token) pair.
type entry = minheap.Entry

// heapMax is the largest k+1 for which top-k finds the (k+1)-th largest
// logit with per-chunk heaps in the max pass (no extra pass); above it the
// bisection counts, 12 passes over the vocabulary.
const heapMax = 1024

// phases of a pass over the vocabulary.
const (
	phaseWiden  = iota // float16 → float32
	phaseMax           // M, its index, and (top-k) the best k+1
	phaseCount         // #{x > mid}
	phaseMass          // the (x, term) list for top-p
	phaseArgmax        // argmax of the noised logits
)

// chunkState is one chunk's partial result.
type chunkState struct {
	maxV  float32
	maxI  int
	heap  []entry // this chunk's best k+1 (a min-heap) above carry
	carry float32 // max pass: a floor below the global (k+1)-th largest
	count int
	n     int // length of this chunk's mass list
	bestV float32
	bestI int
}

// workspace holds one call's buffers; workspaces are pooled.
type workspace struct {
	x      []float32 // the logits of this call
	f16buf []float32
	src16  []float16.Float16

	pen    []int32   // sorted distinct penalised tokens in [0, V)
	penVal []float32 // their penalised logits

	chunks []chunkState
	nChunk int

	// pass parameters
	phase      int
	k1         int     // k+1 when top-k uses heaps, else 0
	mid        float32 // phaseCount
	floor      float32 // phaseMass: lowest logit listed
	m          float32 // global max
	theta      float32
	es         uint32
	temp, tg   float32 // T and fl(T·gmax)
	f16        bool
	seedV      float32 // the global argmax's noised value …
	seedI      int     // … and index: every chunk's starting best
	massX      []float32
	massT      []uint64
	heapMerged []entry

	gen      uint16
	claim    atomic.Uint64 // see run
	done     atomic.Int32  // chunks finished in this phase
	finished chan struct{} // the last chunk's worker signals here
}

var (
	poolMu sync.Mutex
	pool   []*workspace
)

func getWorkspace() *workspace {
	poolMu.Lock()
	defer poolMu.Unlock()
	if n := len(pool); n > 0 {
		ws := pool[n-1]
		pool = pool[:n-1]
		return ws
	}
	return &workspace{finished: make(chan struct{}, 1)}
}

func putWorkspace(ws *workspace) {
	ws.x, ws.src16 = nil, nil
	poolMu.Lock()
	pool = append(pool, ws)
	poolMu.Unlock()
}

func (ws *workspace) widen(src []float16.Float16) []float32 {
	if cap(ws.f16buf) < len(src) {
		ws.f16buf = make([]float32, len(src))
	}
	ws.f16buf = ws.f16buf[:len(src)]
	ws.src16 = src
	ws.x = ws.f16buf
	ws.setChunks(len(src))
	ws.run(phaseWiden)
	return ws.f16buf
}

// setChunks splits [0, V) into chunks of chunkSize.
func (ws *workspace) setChunks(v int) {
	ws.nChunk = (v + chunkSize - 1) / chunkSize
	if cap(ws.chunks) < ws.nChunk {
		ws.chunks = make([]chunkState, ws.nChunk)
	}
	ws.chunks = ws.chunks[:ws.nChunk]
}

func (ws *workspace) sample(x []float32, prev []int32, position uint32, p Params, f16 bool) int32 {
	v := len(x)
	ws.x = x
	ws.f16 = f16
	ws.setChunks(v)

	// Phase 0: the penalised tokens, each once.
	ws.pen, ws.penVal = ws.pen[:0], ws.penVal[:0]
	if r := p.RepeatPenalty; r > 0 && r != 1 {
		for _, t := range prev {
			if t >= 0 && int(t) < v {
				ws.pen = append(ws.pen, t)
			}
		}
		slices.Sort(ws.pen)
		ws.pen = slices.Compact(ws.pen)
		for _, t := range ws.pen {
			xv := x[t]
			if xv > 0 {
				xv /= r
			} else {
				xv *= r
			}
			ws.penVal = append(ws.penVal, xv)
		}
	}

	// Phase 1: M (and, for a small top-k, the k+1 largest).
	k := p.TopK
	topK := k > 0 && k < v
	ws.k1 = 0
	if topK && k+1 <= heapMax {
		ws.k1 = k + 1
	}
	ws.run(phaseMax)
	m, mi := negInf, -1
	var t float32 // the (k+1)-th largest logit, with heaps
	if ws.k1 > 0 {
		t = ws.kthLargest()
		if all := ws.heapMerged; len(all) > 0 {
			// Sorted by value, then index: the first is the lowest-index max.
			m, mi = all[0].X, int(all[0].I)
		}
	} else {
		for c := range ws.chunks {
			st := &ws.chunks[c]
			if st.maxI >= 0 && (st.maxV > m || mi < 0) {
				m, mi = st.maxV, st.maxI
			}
		}
	}
	if mi < 0 || m == negInf {
		return -1 // nothing but -Inf and NaN
	}
	if !(p.Temperature > 0) || m == posInf {
		return int32(mi) // T = 0 (or +Inf logits): argmax after phase 0
	}
	ws.m = m

	// Phase 2: top-k threshold by bisection.
	theta := negInf
	cands := []entry(nil) // the candidate list when it is known to hold every kept token
	if topK {
		lo, hi := m-topKSpan, m
		if ws.k1 > 0 {
			for range topKSteps {
				mid := (lo + hi) / 2
				if t > mid { // #{x > mid} > k
					lo = mid
				} else {
					hi = mid
				}
			}
			theta = hi
			if t < theta {
				// Every token ≥ θ is among the k+1 largest.
				cands = ws.heapMerged
				j := 0
				for _, e := range cands {
					if e.X >= theta {
						cands[j] = e
						j++
					}
				}
				cands = cands[:j]
			}
		} else {
			for range topKSteps {
				mid := (lo + hi) / 2
				ws.mid = mid
				ws.run(phaseCount)
				n := 0
				for c := range ws.chunks {
					n += ws.chunks[c].count
				}
				if n > k {
					lo = mid
				} else {
					hi = mid
				}
			}
			theta = hi
		}
	}

	// Phase 2b: top-p threshold by bisection over fixed-point masses.
	if tp := p.TopP; tp > 0 && tp < 1 {
		var nList int
		if cands != nil {
			nList = ws.massFromList(cands, theta)
		} else {
			ws.theta = theta
			ws.floor = max(theta, m-massCutoff)
			nList = ws.massFromPass()
		}
		theta = max(theta, ws.topPThreshold(nList, theta, tp))
		if cands != nil {
			j := 0
			for _, e := range cands {
				if e.X >= theta {
					cands[j] = e
					j++
				}
			}
			cands = cands[:j]
		}
	}

	// Phase 2c: min-p.
	if mp := p.MinP; mp > 0 && mp < 1 {
		theta = max(theta, m+float32(math.Log(float64(mp))))
	}

	// Phase 3: mask + noise, argmax. θ ≤ M unless a bisection midpoint
	// overflowed float32 (|M| > 1.7e38): then nothing is kept.
	if theta > m {
		return -1
	}
	es := elementSeed(position, p.SeedOffset)
	ws.es = es
	ws.temp = p.Temperature
	ws.tg = float32(p.Temperature * gumbelMax)
	ws.theta = theta
	ws.seedV = ws.noised(m, mi)
	ws.seedI = mi
	if cands != nil {
		bestV, bestI := ws.seedV, ws.seedI
		for _, e := range cands {
			if e.X < theta {
				continue
			}
			if v := ws.noised(e.X, int(e.I)); v > bestV || (v == bestV && int(e.I) < bestI) {
				bestV, bestI = v, int(e.I)
			}
		}
		return pick(bestV, bestI)
	}
	ws.run(phaseArgmax)
	bestV, bestI := ws.seedV, ws.seedI
	for c := range ws.chunks {
		st := &ws.chunks[c]
		if st.bestV > bestV || (st.bestV == bestV && st.bestI < bestI) {
			bestV, bestI = st.bestV, st.bestI
		}
	}
	return pick(bestV, bestI)
}

// pick is the argmax's answer: -1 when even the best noised value is -Inf
// (x + T·g overflowed, or rounded to float16 below -65504).
func pick(bestV float32, bestI int) int32 {
	if bestV == negInf {
		return -1
	}
	return int32(bestI)
}

var (
	negInf = float32(math.Inf(-1))
	posInf = float32(math.Inf(1))
)

// noised is the phase-3 value of logit x at token i: x + T·g_i in float32
// (the product rounded before the sum: no fused multiply-add), rounded to
// float16 on the F16 path.
func (ws *workspace) noised(x float32, i int) float32 {
	v := x + float32(ws.temp*noise(ws.es, i))
	if ws.f16 {
		v = f16Round(v)
	}
	return v
}

// kthLargest merges the chunks' heaps and returns the (k+1)-th largest
// logit (-Inf if there are fewer), leaving the merged entries, largest
// first, in heapMerged.
func (ws *workspace) kthLargest() float32 {
	all := ws.heapMerged[:0]
	for c := range ws.chunks {
		all = append(all, ws.chunks[c].heap...)
	}
	slices.SortFunc(all, func(a, b entry) int {
		switch {
		case a.X > b.X:
			return -1
		case a.X < b.X:
			return 1
		}
		return int(a.I - b.I)
	})
	ws.heapMerged = all
	if len(all) < ws.k1 {
		return negInf
	}
	return all[ws.k1-1].X
}

// massFromList fills the mass list from known candidates (x ≥ θ).
func (ws *workspace) massFromList(cands []entry, theta float32) int {
	ws.growMass(len(cands))
	n := 0
	floor := max(theta, ws.m-massCutoff)
	for _, e := range cands {
		if e.X >= floor {
			ws.massX[n] = e.X
			ws.massT[n] = massTerm(e.X, ws.m)
			n++
		}
	}
	return n
}

// massFromPass fills the mass list with a pass over the vocabulary: each
// chunk writes its part at its own offset; the parts are then packed.
func (ws *workspace) massFromPass() int {
	ws.growMass(len(ws.x))
	ws.run(phaseMass)
	n := 0
	for c := range ws.chunks {
		st := &ws.chunks[c]
		off := c * chunkSize
		if n != off {
			copy(ws.massX[n:], ws.massX[off:off+st.n])
			copy(ws.massT[n:], ws.massT[off:off+st.n])
		}
		n += st.n
	}
	return n
}

func (ws *workspace) growMass(n int) {
	if cap(ws.massX) < n {
		ws.massX = make([]float32, n)
		ws.massT = make([]uint64, n)
	}
	ws.massX, ws.massT = ws.massX[:cap(ws.massX)], ws.massT[:cap(ws.massT)]
}

// topPThreshold runs the 8-step top-p bisection over the mass list
// massX/massT[:n] (every logit ≥ max(θ, M-massCutoff) with its term) and
// returns hi. The list is partitioned in place as the window narrows: the
// terms of logits ≥ hi are folded into base, logits < lo drop out.
func (ws *workspace) topPThreshold(n int, theta, p float32) float32 {
	allX, allT := ws.massX[:n], ws.massT[:n]
	var total uint64
	for _, t := range allT {
		total += t
	}
	target := float64(p) * float64(total)
	lo, hi := max(theta, ws.m-topKSpan), ws.m
	// Window: lo ≤ x < hi; base: Σ terms of x ≥ hi. The partitions only
	// permute allX/allT, so the whole list stays available.
	var base uint64
	j := 0
	for i := range allX {
		switch x := allX[i]; {
		case x >= hi:
			base += allT[i]
		case x >= lo:
			allX[j], allX[i] = allX[i], allX[j]
			allT[j], allT[i] = allT[i], allT[j]
			j++
		}
	}
	xs, ts := allX[:j], allT[:j]
	plain := false
	for range topPSteps {
		mid := (lo + hi) / 2
		if plain || !(mid >= lo && mid <= hi) {
			// (lo+hi)/2 overflowed float32 (|M| > 1.7e38): sum the whole
			// list for this and every later step.
			plain = true
			var m uint64
			for i, x := range allX {
				if x >= mid {
					m += allT[i]
				}
			}
			if float64(m) > target {
				lo = mid
			} else {
				hi = mid
			}
			continue
		}
		// Partition: [0, a) ≥ mid, [a, len) < mid.
		a := 0
		var sa uint64
		for i := range xs {
			if xs[i] >= mid {
				sa += ts[i]
				xs[a], xs[i] = xs[i], xs[a]
				ts[a], ts[i] = ts[i], ts[a]
				a++
			}
		}
		if float64(base+sa) > target {
			lo = mid
			xs, ts = xs[:a], ts[:a]
		} else {
			hi = mid
			base += sa
			xs, ts = xs[a:], ts[a:]
		}
	}
	return hi
}
