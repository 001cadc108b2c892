package engine

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Stats describes a generation. Token counts are of generated tokens
// unless named otherwise.
type Stats struct {
	PromptTokens int
	CachedTokens int // of which kept in the cache by an earlier generation (WithPromptCache), not decoded again
	// Tokens = Sampled + Forced + CloseOut (minus a sampled
	// end-of-generation token, which is not part of the output).
	Tokens      int
	Sampled     int // drawn by a sampler (the end-of-generation token included)
	Gumbel      int // of which by Gumbel-max (unconstrained spans)
	Constrained int // of which by the CPU chain under a grammar mask
	Forced      int // committed by jump-forward without sampling
	CloseOut    int // committed by the budget close-out

	DecodeCalls   int // model Decode calls after the prefill that carried tokens of this generation
	DecodedTokens int // this generation's tokens they decoded

	Queue            time.Duration // waiting for a sequence of the model (admission)
	Prefill          time.Duration // from admission to the prompt's logits (chunks interleaved with other sequences' steps; the last token waits for the grammar's compile (WithCompileOverlap) and precomputation)
	Decode           time.Duration // model time after the prefill (whole batches, shared with the other sequences in them)
	Mask             time.Duration // grammar work: masks, jump-forward, budget checks
	Sample           time.Duration // samplers
	Total            time.Duration // the whole generation
	TimeToFirstToken time.Duration // from the call to the first sampled token

	// Entropy[i] is the entropy (nats) of the model's distribution (before
	// the mask, temperature 1) at the i-th sampled token, Surprisal[i] that
	// token's surprisal -ln p (nats). Only with WithTokenMetrics.
	Entropy   []float32
	Surprisal []float32

	// StepTimes[i] is when the i-th token was sampled, from the call
	// (its jump-forward tokens come with it). Only with WithStepTimes.
	StepTimes []time.Duration
}

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// generating is the time after the prompt's logits.
func (s *Stats) generating() time.Duration { return s.Total - s.Queue - s.Prefill }

// PrefillTokensPerSecond is the prompt processing speed.
func (s *Stats) PrefillTokensPerSecond() float64 { return perSecond(s.PromptTokens, s.Prefill) }

// TokensPerSecond is the generation speed seen by a caller: output tokens
// per second after the prefill (jump-forward raises it; masks and
// samplers lower it).
func (s *Stats) TokensPerSecond() float64 { return perSecond(s.Tokens, s.generating()) }

// DecodeTokensPerSecond is the model's speed on the tokens it decoded
// after the prefill.
func (s *Stats) DecodeTokensPerSecond() float64 { return perSecond(s.DecodedTokens, s.Decode) }

// ForcedShare is the share of output tokens jump-forward committed.
func (s *Stats) ForcedShare() float64 {
	if s.Tokens == 0 {
		return 0
	}
	return float64(s.Forced) / float64(s.Tokens)
}

// MaskShare is the grammar work as a share of the time after the prefill.
func (s *Stats) MaskShare() float64 { return share(s.Mask, s.generating()) }

// SampleShare is the sampler time as a share of the time after the prefill.
func (s *Stats) SampleShare() float64 { return share(s.Sample, s.generating()) }

// MaskOverhead is the grammar work relative to the model's decode time:
// what constraining costs on top of decoding.
func (s *Stats) MaskOverhead() float64 { return share(s.Mask, s.Decode) }

func share(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// MeanEntropy is the mean of Entropy (NaN without WithTokenMetrics).
func (s *Stats) MeanEntropy() float64 { return mean(s.Entropy) }

// Perplexity is exp of the mean surprisal of the sampled tokens (NaN
// without WithTokenMetrics).
func (s *Stats) Perplexity() float64 { return math.Exp(mean(s.Surprisal)) }

func mean(x []float32) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	var t float64
	for _, v := range x {
		t += float64(v)
	}
	return t / float64(len(x))
}

// String summarizes the stats on one line.
func (s *Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "prompt %d tok (%.0f tok/s), output %d tok (%.1f tok/s; model %.1f tok/s), ttft %v, sampled %d (gumbel %d, masked %d), forced %d (%.0f%%), close-out %d, mask %.1f%% sampler %.1f%% of decode phase",
		s.PromptTokens, s.PrefillTokensPerSecond(), s.Tokens, s.TokensPerSecond(), s.DecodeTokensPerSecond(),
		s.TimeToFirstToken.Round(time.Microsecond), s.Sampled, s.Gumbel, s.Constrained, s.Forced, 100*s.ForcedShare(), s.CloseOut,
		100*s.MaskShare(), 100*s.SampleShare())
	if len(s.Surprisal) > 0 {
		fmt.Fprintf(&b, ", entropy %.3f nats, perplexity %.3f", s.MeanEntropy(), s.Perplexity())
	}
	return b.String()
}
