// Package gpu is the Gumbel-max sampler: it picks a token from logits with
// no sort and no softmax, by adding Gumbel noise to the logits that pass
// the filters and taking the argmax. Its semantics are the device kernel's
// (akunu's gumbel_topk_f16), fixed to the bit so that a device kernel and
// this Go code agree token for token: the Go code is the reference.
//
//	tok := gpu.Sample(logits, prev, position, gpu.Params{Temperature: 0.8, TopK: 40, SeedOffset: seed})
//
// The randomness is a counter-based hash of (position, seed offset, token):
// there is no state, the same call gives the same token, and positions
// give independent draws.
//
// # Semantics
//
// For V = len(logits) logits x_i (all arithmetic float32 unless stated,
// each operation rounded — a product is rounded before it is added, no
// fused multiply-add):
//
//	pcg_float(s): s = s·747796405 + 2891336453; w = ((s >> ((s>>28)+4)) ^ s)·277803737
//	              w = (w>>22) ^ w; return float32(w) / 2³²            (uint32 arithmetic)
//	element_seed = (position + SeedOffset) · 2654435761               (uint32)
//	u_i = clamp(pcg_float(element_seed + i), float32(1e-7), float32(1-1e-7))
//	g_i = float32(-ln(-ln(float64(u_i))))                             (logs in float64)
//
//	phase 0  repetition penalty r (RepeatPenalty; on iff r > 0 and r ≠ 1): once per
//	         distinct token t of prev with 0 ≤ t < V: x_t = x_t > 0 ? x_t/r : x_t·r
//	phase 1  M = max x_i (NaN ignored). No x_i above -Inf: return -1.
//	         Temperature ≤ 0 (or NaN), or M = +Inf: return the lowest i with x_i = M.
//	phase 2  top-k (0 < k < V): lo = M-30, hi = M; 12×: mid = (lo+hi)/2;
//	         n = #{x > mid}; n > k ? lo = mid : hi = mid.  θ = hi   (else θ = -Inf)
//	phase 2b top-p (0 < p < 1): with q(x) = floor(e^(x-M)·2³⁷) (exp in float64, an
//	         integer), S = Σ_{x≥θ} q(x); lo = max(θ, M-30), hi = M; 8×: mid = (lo+hi)/2;
//	         m = Σ_{x≥mid} q(x); float64(m) > float64(p)·float64(S) ? lo = mid : hi = mid.
//	         θ = max(θ, hi)
//	phase 2c min-p (0 < min_p < 1): θ = max(θ, M + float32(ln(float64(min_p))))
//	phase 3  x_i < θ → -Inf, else v_i = x_i + float32(T·g_i); SampleF16 rounds v_i
//	         to float16 (nearest, ties to even). token = argmax v_i, lowest index on ties.
//
// The filters see the raw (penalised) logits; temperature scales only the
// noise. With no filter the result follows softmax(x/T) (up to the float32
// resolution of the noise and the clamp of u); with
// filters, softmax(x/T) over the kept set {x ≥ θ}.
//
// The top-p masses are integers (fixed point, 37 fractional bits) so that
// their sums are exact whatever the order or the parallel split — a device
// kernel can add them with integer atomics and get the same bits; logits
// more than 25.7 below M contribute 0 (MaxVocab keeps the sum in 63 bits).
//
// # Deviations of the bisections (the kernel's contract, kept on purpose)
//
// Top-k keeps {x ≥ θ} with #{x > θ} ≤ k: at most k tokens (more only with
// exact ties at θ), and θ is within 30/4096 ≈ 0.0073 of the exact (k+1)-th
// logit, so tokens within that distance above it are dropped too. Top-p
// keeps a mass of at most p of the mass above θ (llama.cpp keeps at least
// p), short of p by at most the mass of one 30/256 ≈ 0.12-wide step. Both
// searches start at M-30: logits below M-30 are never kept by top-k or top-p.
// Measured on 128k logits ~ N(0, 3²) (TestBisectionDeviation): top-k 40
// keeps 39–40 tokens (mean 39.9); top-p 0.9 keeps a mass of 0.893–0.900
// (mean 0.8965).
//
// Degenerate input: NaN logits are never picked; -1 is returned for no
// logits, more than MaxVocab, nothing above -Inf after phase 0, or no
// noised value above -Inf in phase 3 (possible only at the edges of the
// float ranges: a bisection midpoint (lo+hi)/2 overflowing float32 for
// logits beyond ±1.7e38, x + T·g overflowing, or a value below -65504 on
// the float16 path). Temperature and RepeatPenalty are expected finite.
//
// # Implementation, cost and concurrency
//
// Sample streams over the vocabulary (O(V) per pass, nothing sorted, no
// softmax) in chunks of 16k logits, run by a persistent worker pool
// (GOMAXPROCS-1 goroutines) when V is large enough (parallelMin); the result
// never depends on the split (counts, integer sums and argmax with the
// lowest-index rule are exact). Top-k with k < 1024 finds the (k+1)-th
// largest logit with per-chunk heaps in the same pass as M — n > k ⇔ that
// logit > mid — so its 12 steps cost nothing more; larger k counts in 12
// passes. The argmax evaluates the logarithms only for tokens that can still
// win: x + T·g is bounded first by x + T·gmax, then by a 1024-entry table of
// the noise's upper bound per top 10 bits of the hash word (float rounding
// is monotone, so the bounds are exact). Top-p without top-k costs one exp
// per logit within 25.7 of the maximum. On amd64 the scans for "the next
// logit above a bar" (max, top-k heap, argmax) compare 16 logits per step
// with SSE (scan_amd64.s); elsewhere, or with the build tag purego, a Go
// loop does (TestFirstAbove checks that they agree).
//
// Sample and SampleF16 are safe for concurrent use and allocate nothing
// after warm-up (workspaces are pooled). They do not modify their inputs.
//
// The device kernel (CUDA) is not built yet: see README.md.
package gpu
