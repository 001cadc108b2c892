package gpu

import (
	"math"
	"runtime"
	"sort"
	"sync"

	"github.com/x448/float16"

	"github.com/structgen/structgen/internal/minheap"
)

// chunkSize is the unit of parallel work and of per-chunk partial results.
// Results never depend on it (counts, fixed-point sums, max and argmax with
// the lowest-index rule are exact), only the speed does: 16k float32 is
// 64 KiB, one L2-sized bite, and enough work (≈10 µs) to amortise a
// goroutine hand-off.
const chunkSize = 1 << 14

// parallelMin is, per phase, the smallest vocabulary whose pass is split
// over the worker pool; below it one goroutine does everything. Handing
// chunks to another thread costs a few µs on an idle machine and much more
// on a loaded one, so the cheap SSE max/top-k pass goes parallel only for
// the largest vocabularies, the passes with real work per logit (an exp
// for top-p, a hash for the argmax, the counting passes of a large top-k,
// float16 widening) from 64k on. Measured with BenchmarkParallelThreshold
// on the development machine's 2 cores, shared and loaded (load average
// 4–10), so the two runs disagree in detail (µs per token, sequential →
// parallel): top-k 40 at 128k 19 → 25 and 41 → 62, at 262k 51 → 80 and
// 110 → 59; no filter at 64k 927 → 305, at 128k 644 → 671 and 2150 → 822;
// top-p 0.9 at 128k 2634 → 2428 and 16306 → 2404; top-k 2000 at 64k
// 471 → 535 and 1547 → 664; float16 top-k 40 at 128k 60 → 59 and 287 → 119.
// On an idle machine with more cores the break-even points are lower.
var parallelMin = [...]int{
	phaseWiden:  1 << 16,
	phaseMax:    200_000, // 256k vocabularies (Gemma), not 128k (Llama 3)
	phaseCount:  1 << 16,
	phaseMass:   1 << 16,
	phaseArgmax: 1 << 16,
}

// The worker pool: GOMAXPROCS-1 goroutines, started on first use, helping
// whatever call is running. A call offers its workspace to idle helpers
// over a channel (never blocking: busy helpers are skipped) and works on
// chunks itself; chunks are claimed from one atomic word that also names
// the phase, so a helper that arrives late claims nothing from a finished
// phase. The call waits only for chunks that were actually claimed.
var (
	poolOnce sync.Once
	helpers  int
	workCh   chan *workspace
)

func startPool() {
	helpers = runtime.GOMAXPROCS(0) - 1
	workCh = make(chan *workspace, max(helpers, 1))
	for range helpers {
		go func() {
			for ws := range workCh {
				ws.work()
			}
		}()
	}
}

// The claim word: phase generation (16 bits) | chunk count (24) | claims (24).
const (
	claimBits = 24
	claimMask = 1<<claimBits - 1
)

// run executes one phase over every chunk.
func (ws *workspace) run(phase int) {
	ws.phase = phase
	ws.done.Store(0)
	ws.gen++
	ws.claim.Store(uint64(ws.gen)<<(2*claimBits) | uint64(ws.nChunk)<<claimBits)
	if len(ws.x) >= parallelMin[phase] && ws.nChunk > 1 {
		poolOnce.Do(startPool)
	offer:
		for range min(helpers, ws.nChunk-1) {
			select {
			case workCh <- ws:
			default:
				break offer
			}
		}
	}
	ws.work()
	<-ws.finished
}

// work claims and processes chunks until none is left. A worker's chunks
// come in increasing order; in the max pass it carries the smallest of the
// k+1 largest logits seen so far as a floor for the next chunk's heap (it
// is ≤ the global (k+1)-th largest, and any tie with it lies in an earlier
// chunk), which keeps later heaps nearly idle.
func (ws *workspace) work() {
	carry := negInf
	for {
		v := ws.claim.Add(1)
		c, n := int(v&claimMask)-1, int(v>>claimBits&claimMask)
		if c >= n {
			return
		}
		st := &ws.chunks[c]
		st.carry = carry
		ws.runChunk(c)
		if ws.phase == phaseMax && ws.k1 > 0 && len(st.heap) == ws.k1 {
			carry = max(carry, st.heap[0].X)
		}
		if int(ws.done.Add(1)) == n {
			ws.finished <- struct{}{}
		}
	}
}

// runChunk processes chunk c: the raw logits between penalised tokens, and
// each penalised token with its penalised value.
func (ws *workspace) runChunk(c int) {
	lo := c * chunkSize
	hi := min(lo+chunkSize, len(ws.x))
	st := &ws.chunks[c]
	if ws.phase == phaseWiden {
		src, dst := ws.src16[lo:hi], ws.x[lo:hi]
		tab := f16Table()
		for i, h := range src {
			dst[i] = tab[h.Bits()]
		}
		return
	}
	ws.begin(st, c)
	pos := lo
	k := sort.Search(len(ws.pen), func(j int) bool { return int(ws.pen[j]) >= lo })
	for ; k < len(ws.pen) && int(ws.pen[k]) < hi; k++ {
		t := int(ws.pen[k])
		ws.segment(st, c, pos, ws.x[pos:t])
		ws.single(st, c, t, ws.penVal[k])
		pos = t + 1
	}
	ws.segment(st, c, pos, ws.x[pos:hi])
}

// begin resets a chunk's partial result for the current phase.
func (ws *workspace) begin(st *chunkState, c int) {
	switch ws.phase {
	case phaseMax:
		st.maxV, st.maxI = negInf, -1
		if ws.k1 > 0 {
			if cap(st.heap) < ws.k1 {
				st.heap = make([]entry, 0, heapMax)
			}
			st.heap = st.heap[:0]
		}
	case phaseCount:
		st.count = 0
	case phaseMass:
		st.n = 0
	case phaseArgmax:
		st.bestV, st.bestI = ws.seedV, ws.seedI
	}
}

// segment processes xs = logits[base : base+len(xs)], none penalised.
func (ws *workspace) segment(st *chunkState, c, base int, xs []float32) {
	switch ws.phase {
	case phaseMax:
		ws.maxSegment(st, base, xs)
	case phaseCount:
		n := 0
		mid := ws.mid
		for _, x := range xs {
			if x > mid {
				n++
			}
		}
		st.count += n
	case phaseMass:
		floor, m := ws.floor, ws.m
		off := c*chunkSize + st.n
		for _, x := range xs {
			if x >= floor {
				ws.massX[off] = x
				ws.massT[off] = massTerm(x, m)
				off++
			}
		}
		st.n = off - c*chunkSize
	case phaseArgmax:
		ws.argmaxSegment(st, base, xs)
	}
}

// single processes one penalised token t with logit x.
func (ws *workspace) single(st *chunkState, c, t int, x float32) {
	xs := [1]float32{x}
	ws.segment(st, c, t, xs[:])
}

// maxSegment tracks the maximum (lowest index on ties, NaN ignored) or,
// for a small top-k, the k+1 largest in a min-heap (one loop: the maximum
// is then the heap's largest entry, see kthLargest). Both only look at
// logits above the running bar, which firstAbove finds 16 at a time.
func (ws *workspace) maxSegment(st *chunkState, base int, xs []float32) {
	if ws.k1 == 0 {
		mv, mi := st.maxV, st.maxI
		for i := 0; ; {
			j := i + firstAbove(xs[i:], mv)
			if j >= len(xs) {
				break
			}
			mv, mi = xs[j], base+j
			i = j + 1
		}
		st.maxV, st.maxI = mv, mi
		return
	}
	h := st.heap
	i := 0
	// Fill: only logits above the carried floor (this drops NaN and -Inf).
	floor := st.carry
	for len(h) < ws.k1 {
		j := i + firstAbove(xs[i:], floor)
		if j >= len(xs) {
			i = j
			break
		}
		h = append(h, entry{X: xs[j], I: int32(base + j)})
		minheap.Up(h, len(h)-1)
		i = j + 1
	}
	if len(h) == ws.k1 {
		thr := h[0].X
		for {
			j := i + firstAbove(xs[i:], thr)
			if j >= len(xs) {
				break
			}
			h[0] = entry{X: xs[j], I: int32(base + j)}
			minheap.Down(h, 0)
			thr = h[0].X
			i = j + 1
		}
	}
	st.heap = h
}

// argmaxSegment finds the best noised logit among x ≥ θ. Cheap bounds rule
// most tokens out before any logarithm: a scan bar below which x + T·gmax
// cannot reach the best (with a generous margin for rounding), then the
// exact bound x + T·gmax, then x + T·gumbelBound[top bits of the hash
// word]. The bounds are upper bounds of the exact value because float32
// (and float16) rounding is monotone.
func (ws *workspace) argmaxSegment(st *chunkState, base int, xs []float32) {
	bestV, bestI := st.bestV, st.bestI
	theta, tg, temp, es, f16 := ws.theta, ws.tg, ws.temp, ws.es, ws.f16
	thetaBar := math.Nextafter32(theta, negInf) // x > thetaBar ⇔ x ≥ θ
	bar := scanBar(thetaBar, bestV, tg)
	for i := 0; ; {
		j := i + firstAbove(xs[i:], bar)
		if j >= len(xs) {
			break
		}
		i = j + 1
		x, idx := xs[j], base+j
		if ub := x + tg; ub < bestV && idx > bestI || !f16 && beaten(ub, idx, bestV, bestI) || f16 && loses(ub, idx, bestV, bestI, f16) {
			continue
		}
		w := pcgWord(es + uint32(idx))
		if ub := x + float32(temp*gumbelBound[w>>(32-noiseBucketBits)]); !f16 && beaten(ub, idx, bestV, bestI) || f16 && loses(ub, idx, bestV, bestI, f16) {
			continue
		}
		v := x + float32(temp*gumbel(uniform(w)))
		if f16 {
			v = f16Round(v)
		}
		if v > bestV || (v == bestV && idx < bestI) {
			bestV, bestI = v, idx
			bar = scanBar(thetaBar, bestV, tg)
		}
	}
	st.bestV, st.bestI = bestV, bestI
}

// scanBar is a logit bar for the argmax scan: every x whose bound
// x + tg (rounded, even to float16) can reach bestV is above it. The margin
// (2⁻⁹ relative) exceeds any float32 or float16 rounding.
func scanBar(thetaBar, bestV, tg float32) float32 {
	b := float64(bestV) - float64(tg)
	b -= (math.Abs(float64(bestV)) + math.Abs(float64(tg))) * (1.0 / 512)
	if !(b > float64(thetaBar)) { // also NaN (infinite T)
		return thetaBar
	}
	return float32(b)
}

// beaten reports whether value v at index i loses to (bestV, bestI).
func beaten(v float32, i int, bestV float32, bestI int) bool {
	return v < bestV || (v == bestV && i > bestI)
}

// loses reports whether a token at index i whose value is at most ub
// (before float16 rounding when f16) cannot beat (bestV, bestI).
func loses(ub float32, i int, bestV float32, bestI int, f16 bool) bool {
	if ub < bestV && i > bestI {
		return true // rounding cannot lift it above bestV; a tie loses on index
	}
	if f16 {
		ub = f16Round(ub)
	}
	return ub < bestV || (ub == bestV && i > bestI)
}

// f16Table maps every float16 bit pattern to its float32 value (256 KiB,
// built on first use): one load per logit instead of x448/float16's
// bit-by-bit conversion.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for b := range t {
		t[b] = float16.Frombits(uint16(b)).Float32()
	}
	return &t
})
