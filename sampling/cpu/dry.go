package cpu

import (
	"math"
	"strings"
)

// dryStep is llama_sampler_dry ("Don't Repeat Yourself", ported by
// llama.cpp from koboldcpp): a token that would extend a repetition of
// length L ≥ allowed gets logit -= mult·base^(L-allowed). Sequence breakers
// (token sequences) cut the repetition search short.
type dryStep struct {
	totalCtx    int
	mult, base  float32
	allowed     int
	lastN       int
	breakers    map[int32][][]int32 // head token → tails (the rest of each sequence)
	repeatCount []int
	maxRepeat   maxMap
	last        ring
}

func newDRY(mult, base float32, allowed, lastN int, breakers [][]int32) *dryStep {
	s := &dryStep{
		totalCtx: MaxHistory,
		mult:     mult,
		base:     base,
		allowed:  allowed,
		lastN:    lastN,
		breakers: map[int32][][]int32{},
	}
	if !s.enabled() {
		return s
	}
	eff := s.effLastN()
	for _, seq := range breakers {
		if len(seq) == 0 {
			continue
		}
		s.breakers[seq[0]] = append(s.breakers[seq[0]], seq[1:])
	}
	s.repeatCount = make([]int, eff)
	s.maxRepeat.init(eff)
	s.last.init(eff)
	return s
}

func (s *dryStep) enabled() bool {
	return s.mult != 0 && s.base >= 1 && s.lastN != 0
}

func (s *dryStep) effLastN() int {
	if s.lastN == -1 {
		return s.totalCtx
	}
	return max(s.lastN, 0)
}

func (s *dryStep) accept(tok int32) {
	if !s.enabled() {
		return
	}
	s.last.push(tok)
}

func (s *dryStep) reset() {
	s.last.clear()
	s.maxRepeat.clear()
}

// dryFloatMaxLog is ln(math.MaxFloat32), llama.cpp's FLOAT_MAX_LOG: the
// penalty exponent is clamped so that base^exp stays finite.
const dryFloatMaxLog = float32(88.7228391)

func (s *dryStep) apply(c *candidates) {
	if !s.enabled() {
		return
	}
	lastNRepeat := min(s.last.len(), s.effLastN(), s.totalCtx)
	if lastNRepeat <= s.allowed {
		return
	}
	rc := s.repeatCount[:lastNRepeat]
	clear(rc)
	s.maxRepeat.clear()

	// Step 1: the most recent restart sequence limits the repetition length.
	repLimit := lastNRepeat
	for i := 0; i < lastNRepeat; i++ {
		tails, ok := s.breakers[s.last.rat(i)]
		if !ok {
			continue
		}
		longest := -1
		for _, tail := range tails {
			seqLen := len(tail)
			if seqLen > longest && seqLen <= i {
				match := true
				for off := 0; off < seqLen; off++ {
					if tail[off] != s.last.rat(i-off-1) {
						match = false
						break
					}
				}
				if match {
					longest = seqLen
				}
			}
		}
		if longest >= 0 {
			repLimit = i - longest
			break
		}
	}
	if repLimit < s.allowed {
		return
	}

	// Step 2: reverse Z-algorithm: rc[last-k] = length of the suffix that
	// also ends k tokens back (capped at repLimit).
	last := lastNRepeat - 1
	rt, lt := 0, 0
	for k := 1; k < lastNRepeat; k++ {
		if k > rt {
			n := 0
			for n+k < lastNRepeat && s.last.rat(n) == s.last.rat(n+k) {
				n++
			}
			rc[last-k] = min(n, repLimit)
			if n > 0 {
				lt = k
				rt = k + n - 1
			}
		} else {
			p := k - lt
			rightPartLen := rt - k + 1
			if rc[last-p] < rightPartLen {
				rc[last-k] = min(rc[last-p], repLimit)
			} else {
				i := rt + 1
				for i < lastNRepeat && s.last.rat(i) == s.last.rat(i-k) {
					i++
				}
				rc[last-k] = min(i-k, repLimit)
				lt = k
				rt = i - 1
			}
		}
	}

	// Step 3: the token after each repeat would extend it.
	for i := 0; i < lastNRepeat-1; i++ {
		if repeatLen := rc[i]; repeatLen >= s.allowed {
			s.maxRepeat.setMax(s.last.rat(lastNRepeat-2-i), int32(repeatLen))
		}
	}
	if s.maxRepeat.size == 0 {
		c.sorted = false
		return
	}

	// Step 4: penalise.
	maxExp := 0
	if s.base > 1.000001 {
		maxExp = int(dryFloatMaxLog / log32(s.base))
	}
	penalize := func(cd *candidate, maxRep int32) {
		for _, tail := range s.breakers[cd.id] {
			if len(tail) == 0 {
				return // single-token sequence breakers are never penalised
			}
		}
		exp := int(maxRep) - s.allowed
		if maxExp > 0 && exp > maxExp {
			exp = maxExp
		}
		penalty := float32(float64(s.mult) * math.Pow(float64(s.base), float64(exp)))
		cd.logit -= penalty
	}
	if c.identity {
		for _, slot := range s.maxRepeat.used {
			tok := s.maxRepeat.keys[slot]
			if int(tok) < len(c.data) && tok >= 0 {
				penalize(&c.data[tok], s.maxRepeat.vals[slot])
			}
		}
	} else {
		for i := range c.data {
			if v, ok := s.maxRepeat.get(c.data[i].id); ok {
				penalize(&c.data[i], v)
			}
		}
	}
	c.sorted = false
}

// maxMap maps tokens to the largest value set for them; cleared in time
// proportional to its use (it is cleared before every DRY step).
type maxMap struct {
	keyTable
	vals []int32
	used []int32 // occupied slots, in insertion order
	size int
}

func (m *maxMap) init(maxDistinct int) {
	n := m.initKeys(maxDistinct)
	m.vals = make([]int32, n)
	m.used = make([]int32, 0, n)
}

func (m *maxMap) clear() {
	for _, i := range m.used {
		m.keys[i] = emptyKey
	}
	m.used = m.used[:0]
	m.size = 0
}

func (m *maxMap) setMax(k, v int32) {
	i, ok := m.slot(k)
	if !ok {
		m.keys[i] = k
		m.vals[i] = v
		m.used = append(m.used, int32(i))
		m.size++
		return
	}
	if m.vals[i] < v {
		m.vals[i] = v
	}
}

func (m *maxMap) get(k int32) (int32, bool) {
	if m.size == 0 {
		return 0, false
	}
	i, ok := m.slot(k)
	if !ok {
		return 0, false
	}
	return m.vals[i], true
}

// DRY breaker limits, as in llama.cpp: longer breaker strings are
// truncated, and the token tail matched after a breaker's first token is
// cut to dryMaxTailTokens to keep the restart scan linear.
const (
	dryMaxBreakerBytes = 40
	dryMaxTailTokens   = 20
)

// DRYSequenceBreakers turns DRY sequence-breaker strings (llama.cpp's
// default is "\n", ":", "\"", "*") into the token sequences
// Params.DRYSequenceBreakers takes, the way llama.cpp does
// (get_overlapping_token_sequences): every token whose text contains a
// breaker is a breaker on its own; a token whose text ends with a prefix of
// a breaker starts a sequence whose tail is the tokenization of the rest.
// pieces[i] is the text of token i; tokenize tokenizes plain text without
// special tokens.
func DRYSequenceBreakers(pieces [][]byte, breakers []string, tokenize func(string) []int32) [][]int32 {
	var out [][]int32
	for _, br := range breakers {
		if br == "" {
			continue
		}
		if len(br) > dryMaxBreakerBytes {
			br = br[:dryMaxBreakerBytes]
		}
		for id, piece := range pieces {
			word := string(piece)
			if strings.Contains(word, br) {
				out = appendUniqueSeq(out, []int32{int32(id)})
				continue
			}
			for pos := strings.IndexByte(word, br[0]); pos >= 0; {
				i := 1
				match := true
				for ; i < len(br) && pos+i < len(word); i++ {
					if word[pos+i] != br[i] {
						match = false
						break
					}
				}
				if match {
					tail := tokenize(br[i:])
					if len(tail) > dryMaxTailTokens {
						tail = tail[:dryMaxTailTokens]
					}
					out = appendUniqueSeq(out, append([]int32{int32(id)}, tail...))
				}
				next := strings.IndexByte(word[pos+1:], br[0])
				if next < 0 {
					break
				}
				pos += 1 + next
			}
		}
	}
	return out
}

func appendUniqueSeq(out [][]int32, seq []int32) [][]int32 {
	for _, s := range out {
		if len(s) == len(seq) {
			same := true
			for i := range s {
				if s[i] != seq[i] {
					same = false
					break
				}
			}
			if same {
				return out
			}
		}
	}
	return append(out, seq)
}
