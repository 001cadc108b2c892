package engine

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/structgen/structgen/mask"
	"github.com/structgen/structgen/mask/jsonkeys"
)

// The phases of a generation: a reasoning model's thinking block (free
// text up to the end-of-thinking marker), then the answer: free text
// (with stop strings and lazy triggers), a grammar's output, tool calls.
// In this file r is always the *run.

// Part says which part of the output a streamed piece belongs to
// (WithPartStream).
type Part uint8

const (
	// PartContent is the answer: free text or a grammar's output.
	PartContent Part = iota
	// PartReasoning is the thinking of a reasoning model (Result.Reasoning).
	PartReasoning
	// PartToolCall is the text of tool calls, markers included (the calls
	// come parsed in Result.ToolCalls).
	PartToolCall
	// PartMarker is the end-of-thinking marker and the whitespace after it.
	PartMarker
)

func (p Part) String() string {
	return [...]string{"content", "reasoning", "tool_call", "marker"}[p]
}

// partSpan is a run of n bytes of one part in a stream buffer.
type partSpan struct {
	part Part
	n    int
}

// StopString: a stop string (WithStop) appeared in the answer's free text;
// the output ends before it.
const StopString StopReason = "stop_string"

// checkThinkEnd looks for the end-of-thinking marker in the text the last
// commit added; at the marker, the answer begins.
func (r *run) checkThinkEnd(k mark) error {
	end := []byte(r.o.thinkEnd)
	from := max(0, k.out-len(end)+1)
	i := bytes.Index(r.out[from:], end)
	if i < 0 {
		return nil
	}
	r.thinking = false
	r.thinkEnd = from + i
	return r.beginAnswer(k, r.thinkEnd+len(end))
}

// endThinking writes the end-of-thinking marker itself (the thinking
// budget is spent, or only the room for the answer is left).
func (r *run) endThinking() error {
	text := r.o.thinkEnd
	if len(r.out) > 0 && r.out[len(r.out)-1] != '\n' {
		text = "\n" + text
	}
	toks, err := r.tokenizeMarker([]byte(text))
	if err != nil {
		return err
	}
	k := r.mark()
	r.push(toks...)
	r.stats.Forced += len(toks)
	if err := r.checkThinkEnd(k); err != nil {
		return err
	}
	if r.thinking {
		return fmt.Errorf("engine: the tokens of the end-of-thinking marker %q do not spell it", r.o.thinkEnd)
	}
	return r.settle(k, false)
}

// tokenizeMarker tokenizes a marker with the model's special tokens (a
// marker such as </think> is one special token in the models that use
// it), checking that the tokens spell it.
func (r *run) tokenizeMarker(text []byte) ([]int32, error) {
	toks, err := r.m.Tokenize(text, false, true)
	if err == nil {
		var b []byte
		for _, t := range toks {
			b = append(b, r.v.Token(t)...)
		}
		if bytes.Equal(b, text) {
			return toks, nil
		}
	}
	return r.tokenize(text)
}

// beginAnswer starts the answer at offset pos of the output (after the
// end-of-thinking marker): a grammar applies from there (or from a lazy
// trigger on), stop strings too.
func (r *run) beginAnswer(k mark, pos int) error {
	r.answer = pos
	switch {
	case r.con == nil:
		r.sstart = pos
		r.checkStop(k)
		return nil
	case len(r.o.triggers) > 0:
		if r.checkStop(k) {
			return nil
		}
		return r.checkTrigger(k)
	}
	if r.tools != nil {
		r.toolStart = pos
	}
	return r.grammarFrom(k, pos, pos)
}

// grammarFrom activates the grammar at offset pos of the output. The text
// committed since k ends at or after end (a trigger's or marker's end);
// if the grammar rejects what follows pos, the committed tokens are
// replaced by the tokens of their text up to end. When the grammar's
// shortest output no longer fits the budget, the generation ends with the
// text before the commit.
func (r *run) grammarFrom(k mark, pos, end int) error {
	r.newMatcher()
	r.sstart = pos
	if tail := r.out[pos:]; len(tail) > 0 {
		if err := r.acceptBytes(tail); err != nil {
			var re *mask.RejectError
			var se *jsonkeys.SyntaxError
			if !errors.As(err, &re) && !errors.As(err, &se) {
				return fmt.Errorf("engine: %w", err)
			}
			// Keep the trigger (or marker), drop what the grammar rejects.
			head := slices.Clone(r.out[k.out:end])
			r.gen, r.out = r.gen[:k.gen], r.out[:k.out]
			toks, err := r.tokenizeMarker(head)
			if err != nil {
				return err
			}
			r.push(toks...)
			r.stats.Forced += len(toks) - 1
			r.newMatcher()
			if pos < end {
				if err := r.acceptBytes(r.out[pos:end]); err != nil {
					return fmt.Errorf("engine: the grammar does not accept its own trigger %q: %w", r.out[pos:end], err)
				}
			}
		}
	}
	ok, err := r.fits()
	if err != nil {
		return err
	}
	if !ok {
		// No room for the grammar: end with the free text before the
		// commit.
		r.mt, r.gk = nil, nil
		if err := r.restore(k); err != nil {
			return err
		}
		r.dropSampled()
		r.stop = StopBudget
		return nil
	}
	if !r.o.noJump {
		return r.jumpForward(false)
	}
	return nil
}

// checkStop ends the generation at the first stop string in the answer's
// free text that the last commit completed; the output is cut before it.
func (r *run) checkStop(k mark) bool {
	if len(r.o.stops) == 0 {
		return false
	}
	from := max(r.answer, k.out-MaxStopLen+1)
	at := -1
	for _, s := range r.o.stops {
		if i := bytes.Index(r.out[from:], []byte(s)); i >= 0 && (at < 0 || from+i < at) {
			at = from + i
		}
	}
	if at < 0 {
		return false
	}
	r.out = r.out[:at]
	r.stop = StopString
	return true
}

// final is how much of the output is final for the stream: everything,
// but for the longest suffix of free text that may still become a marker,
// trigger or stop string.
func (r *run) final() int {
	n := len(r.out)
	if r.stop != "" || r.mt != nil {
		return n
	}
	hold := 0
	watch := func(lo int, ws []string) {
		for _, w := range ws {
			for l := min(len(w)-1, n-lo); l > hold; l-- {
				if bytes.HasSuffix(r.out, []byte(w[:l])) {
					hold = l
					break
				}
			}
		}
	}
	switch {
	case r.thinking:
		watch(0, []string{r.o.thinkEnd})
	case r.sstart < 0:
		watch(r.answer, r.o.stops)
		watch(r.answer, r.o.triggers)
	case r.con == nil:
		watch(r.answer, r.o.stops)
	}
	return n - hold
}

// partAt returns the part of the output byte at offset i and the offset
// where that part ends (or n, the end of the final text).
func (r *run) partAt(i, n int) (Part, int) {
	if r.o.thinkEnd != "" {
		if r.thinking || i < r.thinkEnd {
			return PartReasoning, bound(r.thinkEnd, n, r.thinking)
		}
		if c := r.contentStart(n); i < c {
			return PartMarker, c
		}
	}
	if r.toolStart >= 0 && i >= r.toolStart {
		return PartToolCall, n
	}
	if r.toolStart >= 0 {
		return PartContent, min(r.toolStart, n)
	}
	return PartContent, n
}

func bound(end, n int, open bool) int {
	if open {
		return n
	}
	return min(end, n)
}

// contentStart is where the answer's content starts within out[:n]: after
// the end-of-thinking marker and the whitespace after it.
func (r *run) contentStart(n int) int {
	i := r.answer
	for i < n && (r.out[i] == ' ' || r.out[i] == '\n' || r.out[i] == '\r' || r.out[i] == '\t') {
		i++
	}
	return i
}

// split returns the reasoning, the content and the tool-call text of the
// output.
func (r *run) split() (reasoning, content, calls string) {
	n := len(r.out)
	for i := 0; i < n; {
		p, end := r.partAt(i, n)
		switch p {
		case PartReasoning:
			reasoning += string(r.out[i:end])
		case PartContent:
			content += string(r.out[i:end])
		case PartToolCall:
			calls += string(r.out[i:end])
		}
		i = end
	}
	return reasoning, content, calls
}

// reserveAnswer computes the tokens a thinking generation keeps for
// ending its thinking block and for the shortest output of a grammar that
// starts right after it, so that a token budget never ends it inside the
// thinking with no answer.
func (r *run) reserveAnswer() error {
	toks, err := r.tokenizeMarker([]byte("\n" + r.o.thinkEnd))
	if err != nil {
		return err
	}
	r.thinkKeep = len(toks)
	if r.con != nil && len(r.o.triggers) == 0 {
		m := r.con.compiled.NewMatcher()
		sc, ok := m.ShortestCompletion()
		if !ok {
			r.thinkKeep += m.MinCompletion()
			return nil
		}
		t, err := r.tokenize(sc)
		if err != nil {
			return err
		}
		r.thinkKeep += len(t)
	}
	return nil
}
