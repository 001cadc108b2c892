package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// In this file s is always the *scheduler, g a *group and r a *run.

// Scheduler defaults and limits.
const (
	// DefaultBatchTokens bounds the entries of one decode: the committed
	// tokens of every running sequence come first, prompt chunks fill the
	// rest. llama.cpp's own default batch (n_batch, n_ubatch) is 512; a
	// larger chunk makes running sequences wait longer for their next
	// token while a long prompt is read (on a CPU a 512-token chunk of an
	// 8B model takes seconds, of the 128k-vocabulary test model ~30 ms).
	DefaultBatchTokens = 512
	// MaxChoices bounds the completions of one prompt (GenerateN): each
	// takes a sequence of the model's cache for the whole generation.
	MaxChoices = 128
	// minPromptReuse is the shortest prompt prefix WithPromptCache keeps
	// and reuses: below it, the decode saved is a fraction of one step.
	minPromptReuse = 8
)

// ErrQueueFull reports a generation refused because WithMaxQueue
// generations are already waiting for a sequence of the model.
var ErrQueueFull = errors.New("engine: queue full: too many generations waiting for the model")

// SchedulerStats describes the work of an engine's scheduler since the
// engine was made (counters) and now (gauges).
type SchedulerStats struct {
	Steps   int64         // decodes
	Entries int64         // batch entries decoded (prompt and generated tokens)
	Sampled int64         // steps of sequences (one sampled token each)
	Decode  time.Duration // in Model.Decode
	Grammar time.Duration // wall time of the parallel phase after each decode: masks, samplers, jump-forward
	// Overlapped counts the masks filled while the model decoded
	// (WithMaskOverlap); MaskWait is the wall time the scheduler waited
	// for them after the decode had returned: the part of their cost the
	// model's time did not hide.
	Overlapped int64
	MaskWait   time.Duration
	Admitted   int64 // generations admitted
	Finished   int64 // generations ended (done, failed or cancelled)
	Queued     int   // generations waiting for admission now
	Active     int   // sequences running now
	Cells      int   // cells of the cache reserved now (kept prompts included)

	PromptReuses int64 // generations that reused a kept prompt (WithPromptCache)
	ReusedTokens int64 // prompt tokens they did not decode again
}

// GrammarShare is the share of the step time spent after the decodes:
// what masks and samplers add to the model's time.
func (st SchedulerStats) GrammarShare() float64 {
	g := st.Grammar + st.MaskWait
	return share(g, st.Decode+g)
}

// group is one call of Generate or GenerateN: runs that share a prompt.
// With several runs the prompt's first len(prompt)-1 positions are
// decoded once, in the first run's sequence, and copied to the others
// (the cells are shared); each run then decodes the last prompt token
// itself and goes on alone.
type group struct {
	ctx    context.Context
	prompt []int32
	runs   []*run
	shared int // prompt positions decoded once and shared (0 with one run)
	sdone  int // of which in the cache (in runs[0]'s sequence)
	addS   int // of which in the batch being decoded
	copied bool
	live   int // runs not released yet
	stream func(i int, part Part, piece []byte) error

	ready chan struct{} // capacity 1: a run has stream text
	done  chan struct{} // closed when every run is released
	err   error         // a failure of the whole group (queue, admission)
}

// scheduler runs the model for every generation of an engine: it admits
// groups at step boundaries while there are sequences and cells for them,
// decodes one batch per step with the committed tokens of every running
// sequence and prompt chunks of admitted ones, then runs each sequence's
// step (mask, sample, commit) in parallel, and releases ended sequences at
// once. Its goroutine runs while there is work and exits when idle.
type scheduler struct {
	m           Model
	nseq        int
	cells       int
	batchToks   int
	maxQueue    int
	promptCache bool

	mu      sync.Mutex
	queue   []*group
	running bool
	stats   SchedulerStats
	wake    chan struct{} // a group was queued (ends the loop's wait for a compile)

	// Owned by the loop goroutine (prefixes also by admit, under mu).
	groups   []*group
	seqs     []*run    // by sequence id; nil: free
	prefixes []*prefix // by sequence id: the prompt a free sequence keeps (WithPromptCache)
	used     int       // cells reserved by admitted runs and kept prompts
	batch    Batch
	work     []*run // runs with logits this step
	due      []*run // runs whose masks are filled during this step's decode
	begins   []*run // runs whose grammars start during this step's decode (beginDue)
	jobs     chan *run
	wg       sync.WaitGroup
}

// prefix is a prompt a free sequence keeps in the cache for the next
// generation that starts the same way.
type prefix struct {
	toks []int32
	used time.Time
}

func newScheduler(m Model, batchToks, maxQueue int, promptCache bool) (*scheduler, error) {
	nseq, cells, mb := m.Sequences(), m.ContextSize(), m.BatchSize()
	switch {
	case nseq < 1:
		return nil, fmt.Errorf("engine: the model holds %d sequences", nseq)
	case cells < 2:
		return nil, fmt.Errorf("engine: the model's context holds %d positions", cells)
	case mb < 1:
		return nil, fmt.Errorf("engine: the model's batch size is %d", mb)
	}
	if batchToks == 0 {
		batchToks = DefaultBatchTokens
	}
	batchToks = min(batchToks, mb)
	return &scheduler{m: m, nseq: nseq, cells: cells, batchToks: batchToks, maxQueue: maxQueue,
		promptCache: promptCache, seqs: make([]*run, nseq), prefixes: make([]*prefix, nseq), wake: make(chan struct{}, 1)}, nil
}

// idleWaitPoll bounds how long the loop, with nothing to decode, waits
// for a grammar's compile or precomputation before it looks again at its
// runs: one whose caller went away ends then (a compile may take up to
// WithCompileTimeout).
const idleWaitPoll = 5 * time.Millisecond

// budget is the default token budget of a run with a prompt of n tokens:
// the context left after the prompt within one sequence's share of the
// cache, or all the context left when the prompt alone fills its share.
func (s *scheduler) budget(n int) int {
	if b := s.cells/s.nseq - n; b > 0 {
		return b
	}
	return s.cells - n
}

// reserve is what a run holds in the cache at most.
func (r *run) reserve() int { return len(r.prompt) + r.budget }

// submit queues g and makes sure the loop runs. It fails at once when g
// can never be admitted or the queue is full.
func (s *scheduler) submit(g *group) error {
	need := 0
	for _, r := range g.runs {
		need += r.reserve()
	}
	switch {
	case len(g.runs) > s.nseq:
		return fmt.Errorf("engine: %d completions need %d sequences, the model holds %d", len(g.runs), len(g.runs), s.nseq)
	case need > s.cells:
		return fmt.Errorf("engine: the generation needs %d positions (%d prompt tokens + a budget of %d tokens, × %d), the model's cache holds %d: %w",
			need, len(g.prompt), g.runs[0].budget, len(g.runs), s.cells, ErrContextFull)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Queued groups that free sequences will take at the next step do not
	// count: a burst into an idle engine is not refused while the loop has
	// yet to admit it.
	if s.maxQueue > 0 && len(s.queue) >= s.maxQueue+max(0, s.nseq-s.stats.Active) {
		return ErrQueueFull
	}
	now := time.Now()
	for _, r := range g.runs {
		r.queued = now
	}
	s.queue = append(s.queue, g)
	s.stats.Queued = len(s.queue)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	if !s.running {
		s.running = true
		go s.loop()
	}
	return nil
}

// withdraw takes g out of the queue; false if it was admitted already.
func (s *scheduler) withdraw(g *group) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, q := range s.queue {
		if q == g {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			s.stats.Queued = len(s.queue)
			return true
		}
	}
	return false
}

// Stats returns the scheduler's counters and gauges.
func (s *scheduler) Stats() SchedulerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (s *scheduler) loop() {
	workers := min(runtime.GOMAXPROCS(0), s.nseq)
	// Room for a job per sequence: the masks are handed out without
	// waiting for a worker, before the decode.
	jobs := make(chan *run, s.nseq)
	s.jobs = jobs
	for range workers {
		go s.worker(jobs)
	}
	defer close(jobs)
	for {
		blocked := s.admit()
		if h := afterAdmitHook.Load(); h != nil {
			(*h)(s)
		}
		if len(s.groups) == 0 {
			s.mu.Lock()
			if len(s.queue) == 0 {
				s.running = false
				s.mu.Unlock()
				return
			}
			if !blocked {
				// Queued after admit looked (the caller of a generation
				// that just ended, submitting the next): admit it now.
				// It used to fail here as not fitting an idle cache
				// (TestStatsSettledWhenDone, once in a few hundred
				// runs under load).
				s.mu.Unlock()
				continue
			}
			// An idle cache admits any group submit accepted; should the
			// head still not fit, fail it rather than spin.
			g := s.queue[0]
			s.queue = s.queue[1:]
			s.stats.Queued = len(s.queue)
			s.mu.Unlock()
			g.err = errors.New("engine: scheduler: the generation does not fit the idle cache")
			close(g.done)
			continue
		}
		s.cancel()
		s.fill()
		if s.batch.Len() == 0 {
			if s.beginNow() {
				continue
			}
			if emptyBatchHook != nil {
				emptyBatchHook(s)
			}
			if ch := s.precomputing(); ch != nil {
				// Every run with something to decode waits for its
				// grammar's compile or precomputation
				// (run.precomputed); a new group, or a while (a
				// compile can take long; a cancelled run ends at the
				// next pass), ends the wait too.
				t := time.NewTimer(idleWaitPoll)
				select {
				case <-ch:
				case <-s.wake:
				case <-t.C:
				}
				t.Stop()
				continue
			}
			// The precomputations fill waited for may have ended since:
			// start the grammars that were waiting for theirs, fill
			// again before giving up.
			if s.beginNow() {
				continue
			}
			s.fill()
		}
		if s.batch.Len() == 0 {
			// Every run is waiting for a prefix that nothing decodes:
			// cannot happen (the first run of a group decodes it).
			s.failAll(errors.New("engine: scheduler: nothing to decode"))
			s.reap()
			continue
		}
		s.startMasks()
		t := time.Now()
		err := s.m.Decode(&s.batch)
		dt := time.Since(t)
		wait := s.waitMasks()
		if err != nil {
			s.decodeFailed(err)
			s.reap()
			continue
		}
		s.decoded(dt)
		s.share()
		t = time.Now()
		s.steps()
		gt := time.Since(t)
		// The step's counters before reap ends its generations: a caller
		// woken then reads them with its own steps counted.
		s.mu.Lock()
		s.stats.Steps++
		s.stats.Entries += int64(s.batch.Len())
		s.stats.Sampled += int64(len(s.work))
		s.stats.Decode += dt
		s.stats.Grammar += gt
		s.stats.MaskWait += wait
		s.stats.Overlapped += int64(len(s.due))
		s.mu.Unlock()
		s.reap()
	}
}

func (s *scheduler) worker(jobs <-chan *run) {
	for r := range jobs {
		switch {
		case r.beginDue:
			r.beginRow()
		case r.maskDue:
			r.maskRow()
		default:
			r.stepRow()
		}
		s.wg.Done()
	}
}

// startMasks hands the runs whose masks are due (run.prepare), and those
// whose grammars start (beginDue), to the workers, which fill them while
// the loop decodes.
func (s *scheduler) startMasks() {
	s.due, s.begins = s.due[:0], s.begins[:0]
	for _, g := range s.groups {
		for _, r := range g.runs {
			switch {
			case r.ended():
			case r.beginDue:
				s.begins = append(s.begins, r)
			case r.maskDue:
				s.due = append(s.due, r)
			}
		}
	}
	s.wg.Add(len(s.due) + len(s.begins))
	for _, r := range s.due {
		s.jobs <- r
	}
	for _, r := range s.begins {
		s.jobs <- r
	}
}

// beginNow starts, on the loop, the grammars of the runs whose
// constraints have compiled, when nothing is to be decoded:
// nobody waits for the loop then. It reports whether there were any.
func (s *scheduler) beginNow() bool {
	any := false
	for _, g := range s.groups {
		for _, r := range g.runs {
			if r.beginDue && !r.ended() {
				r.beginRow()
				any = true
			}
		}
	}
	return any
}

// waitMasks waits for the masks (and grammar starts) startMasks handed
// out and returns how long it waited for masks.
func (s *scheduler) waitMasks() time.Duration {
	if len(s.due)+len(s.begins) == 0 {
		return 0
	}
	t := time.Now()
	s.wg.Wait()
	if len(s.due) == 0 {
		return 0 // (MaskWait counts masks)
	}
	return time.Since(t)
}

// admit moves groups from the head of the queue to the running set while
// the cache has sequences and cells for them (first come, first served: a
// large request is not overtaken by smaller ones behind it). With the
// prompt cache, the group's first sequence is the free one whose kept
// prompt shares the longest prefix with the group's, and kept prompts are
// dropped, least recently used first, when their cells or sequences are
// needed. It reports whether it stopped at a group that did not fit
// (false: the queue is empty).
func (s *scheduler) admit() (blocked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The gauges, however the loop ends: submit's queue bound reads
	// Active (a stale 0 after two admissions let a burst past
	// WithMaxQueue, TestQueueBurst).
	defer func() {
		s.stats.Queued = len(s.queue)
		s.stats.Active = s.active()
		s.stats.Cells = s.used
	}()
	for len(s.queue) > 0 {
		g := s.queue[0]
		need, free := 0, 0
		for _, r := range g.runs {
			need += r.reserve()
		}
		for _, r := range s.seqs {
			if r == nil {
				free++
			}
		}
		if len(g.runs) > free {
			return true
		}
		// Kept prompts give their cells back as needed (the reused one
		// hands its cells to the run that reuses it).
		kept := 0
		for _, p := range s.prefixes {
			if p != nil {
				kept += len(p.toks)
			}
		}
		if s.used-kept+need > s.cells {
			return true
		}
		s.queue = s.queue[1:]
		reuse, n := s.bestPrefix(g.prompt)
		for s.used+need-s.keptBy(reuse) > s.cells && s.dropPrefix(reuse) {
		}
		now := time.Now()
		for i, r := range g.runs {
			if i == 0 && reuse >= 0 {
				r.seq = reuse
				n = s.reusePrefix(reuse, n)
				if g.shared > 0 {
					g.sdone = min(n, g.shared)
				} else {
					r.pdone = n
				}
				r.stats.CachedTokens = n
			} else {
				r.seq = s.takeSeq(reuse)
			}
			s.seqs[r.seq] = r
			r.admit = now
			r.stats.Queue = now.Sub(r.queued)
			s.used += r.reserve()
		}
		g.live = len(g.runs)
		s.groups = append(s.groups, g)
		s.stats.Admitted++
	}
	return false
}

// keptBy is the cells the prompt kept in seq holds (0 for none or -1).
func (s *scheduler) keptBy(seq int) int {
	if seq < 0 || s.prefixes[seq] == nil {
		return 0
	}
	return len(s.prefixes[seq].toks)
}

// bestPrefix returns the free sequence whose kept prompt shares the
// longest prefix with prompt (at least minPromptReuse tokens, and never
// the whole prompt: its last token is decoded again for its logits), and
// that length; -1 if none.
func (s *scheduler) bestPrefix(prompt []int32) (seq, n int) {
	seq = -1
	for i, p := range s.prefixes {
		if p == nil || s.seqs[i] != nil {
			continue
		}
		l := 0
		for l < len(p.toks) && l < len(prompt)-1 && p.toks[l] == prompt[l] {
			l++
		}
		if l >= minPromptReuse && l > n {
			seq, n = i, l
		}
	}
	return seq, n
}

// reusePrefix trims the prompt kept in seq to its first n positions for a
// run that starts with them, and returns how many it keeps (0 if the model
// cannot trim: then the sequence is emptied).
func (s *scheduler) reusePrefix(seq, n int) int {
	s.used -= len(s.prefixes[seq].toks)
	s.prefixes[seq] = nil
	if err := s.m.Remove(seq, n); err != nil {
		_ = s.m.Remove(seq, 0) // removing a whole sequence never fails
		return 0
	}
	s.stats.PromptReuses++
	s.stats.ReusedTokens += int64(n)
	return n
}

// dropPrefix empties the free sequence with the least recently used kept
// prompt other than keep; false if there is none.
func (s *scheduler) dropPrefix(keep int) bool {
	oldest := -1
	for i, p := range s.prefixes {
		if p != nil && i != keep && (oldest < 0 || p.used.Before(s.prefixes[oldest].used)) {
			oldest = i
		}
	}
	if oldest < 0 {
		return false
	}
	_ = s.m.Remove(oldest, 0)
	s.used -= len(s.prefixes[oldest].toks)
	s.prefixes[oldest] = nil
	return true
}

// takeSeq returns a free sequence other than not, preferring one that
// keeps no prompt; one that does is emptied first.
func (s *scheduler) takeSeq(not int) int {
	pick := -1
	for i, r := range s.seqs {
		if r != nil || i == not {
			continue
		}
		if s.prefixes[i] == nil {
			return i
		}
		if pick < 0 || s.prefixes[i].used.Before(s.prefixes[pick].used) {
			pick = i
		}
	}
	if pick < 0 {
		panic("engine: scheduler: no free sequence") // admit checked
	}
	_ = s.m.Remove(pick, 0)
	s.used -= len(s.prefixes[pick].toks)
	s.prefixes[pick] = nil
	return pick
}

func (s *scheduler) active() int {
	n := 0
	for _, r := range s.seqs {
		if r != nil {
			n++
		}
	}
	return n
}

// cancel ends the runs whose context is done or whose stream failed.
func (s *scheduler) cancel() {
	for _, g := range s.groups {
		err := g.ctx.Err()
		for _, r := range g.runs {
			if r.ended() {
				continue
			}
			if err != nil {
				r.err = err
			} else if p := r.streamErr.Load(); p != nil {
				r.err = fmt.Errorf("engine: stream: %w", *p)
			}
		}
	}
}

// ended reports whether the run has its outcome.
func (r *run) ended() bool { return r.stop != "" || r.err != nil }

// waiting reports whether r waits for its group's shared prefix.
func (r *run) waiting() bool { return r.g.shared > 0 && !r.g.copied }

// pending is the number of tokens r has to decode before its next step.
func (r *run) pending() int {
	return len(r.prompt) - r.pdone + len(r.gen) - r.decoded
}

// fill builds the batch of this step: first the committed tokens of the
// runs that are generating (so that they keep streaming while prompts are
// read), then prompt chunks, oldest group first, up to the batch budget.
func (s *scheduler) fill() {
	s.batch.Reset()
	room := s.batchToks
	for _, g := range s.groups {
		for _, r := range g.runs {
			r.row, r.addP, r.addG = -1, 0, 0
		}
	}
	for pass := range 2 {
		for _, g := range s.groups {
			if pass == 1 && g.shared > 0 && g.sdone < g.shared && room > 0 {
				// The shared prefix, into the first run's sequence.
				k := min(g.shared-g.sdone, room)
				seq := g.runs[0].seq
				for i := range k {
					s.batch.Add(seq, g.sdone+i, g.prompt[g.sdone+i], false)
				}
				g.addS = k
				room -= k
			}
			for _, r := range g.runs {
				if r.ended() || r.waiting() || (pass == 0) != (r.pdone == len(r.prompt)) {
					continue
				}
				room -= r.add(&s.batch, room)
			}
		}
	}
}

// add puts up to room of r's pending tokens into b and returns how many.
// The logits are wanted after the last pending one, which waits while
// r's grammar is being precomputed (see precomputed).
func (r *run) add(b *Batch, room int) int {
	ready := r.precomputed()
	if r.ended() {
		return 0 // (its compile or precomputation failed)
	}
	// Not ready (also while a pending constraint's grammar has not
	// started: run.begin may add forced tokens), all but the last token.
	n := min(r.pending(), room)
	if n > 0 && n == r.pending() && !ready {
		n--
	}
	for i := range n {
		if p := r.pdone + i; p < len(r.prompt) {
			b.Add(r.seq, p, r.prompt[p], false)
			r.addP++
		} else {
			j := r.decoded + r.addG
			b.Add(r.seq, len(r.prompt)+j, r.gen[j], false)
			r.addG++
		}
	}
	if n > 0 && n == r.pending() {
		r.row = b.Len() - 1
		b.Logits[r.row] = true
	}
	return n
}

// precomputed reports whether r's grammar has compiled and run its eager
// precomputation (mask.Compiled.Precompute, started by the grammar cache
// right after the compile). Until then r reads its prompt but is not
// sampled, so that no step of the batch waits for a first use that the
// precomputation would have done (and the states precomputed are those
// of a plain compile). A run whose constraint was pending
// (WithCompileOverlap) starts its grammar once it compiled (beginDue:
// run.begin, its forced start and first mask, while the precomputation
// runs, as newRun does without the overlap): on a worker while the model
// decodes the batch (startMasks), or at once when the batch is empty
// (beginNow), never on the loop while others wait for their step. A
// compile or precomputation that failed fails r.
func (r *run) precomputed() bool {
	if r.fut != nil {
		select {
		case <-r.fut.ready:
		default:
			return false
		}
		if r.fut.err != nil {
			r.err, r.fut = r.fut.err, nil
			return true
		}
		r.beginDue = true // (started by startMasks or beginNow)
		return false
	}
	if r.ready || r.con == nil {
		return true
	}
	select {
	case <-r.con.compiled.Precomputed():
	default:
		return false
	}
	r.ready = true
	if err := r.con.compiled.Precompute(nil); err != nil {
		r.err = err
	}
	return true
}

// afterAdmitHook, when set (tests), is called after each admit, before the
// loop looks at the queue. (Atomic: a test's cleanup clears it while the
// loop may still be on its way out.)
var afterAdmitHook atomic.Pointer[func(s *scheduler)]

// emptyBatchHook, when set (tests), is called when fill found nothing to
// decode, before the scheduler looks for a precomputation to wait for.
var emptyBatchHook func(s *scheduler)

// precomputing returns the channel of a run that waits for its grammar's
// compile (WithCompileOverlap) or precomputation, nil if none does.
func (s *scheduler) precomputing() <-chan struct{} {
	for _, g := range s.groups {
		for _, r := range g.runs {
			if !r.ended() && !r.precomputed() {
				switch {
				case r.fut == nil:
					return r.con.compiled.Precomputed()
				case !r.beginDue:
					return r.fut.ready
				}
			}
		}
	}
	return nil
}

// decoded books a successful decode: what each run has in the cache, the
// rows of the runs that step now, and their stats.
func (s *scheduler) decoded(dt time.Duration) {
	s.work = s.work[:0]
	for _, g := range s.groups {
		g.sdone += g.addS
		g.addS = 0
		for _, r := range g.runs {
			if r.addP+r.addG == 0 {
				continue
			}
			prefill := r.pdone < len(r.prompt)
			r.pdone += r.addP
			r.decoded += r.addG
			if prefill {
				if r.pdone == len(r.prompt) {
					r.stats.Prefill = time.Since(r.admit)
				}
			} else {
				r.stats.Decode += dt
				r.stats.DecodeCalls++
				r.stats.DecodedTokens += r.addG
			}
			if r.row >= 0 && !r.ended() {
				// (A run whose mask, filled during the decode, stopped it
				// has no step.)
				r.logits = s.m.Logits(r.row)
				s.work = append(s.work, r)
			}
		}
	}
}

// share copies each group's decoded prefix to the group's other
// sequences. A model that cannot share (ErrUnsupported) makes each
// sequence read the prefix itself (the cells were reserved for that).
func (s *scheduler) share() {
	for _, g := range s.groups {
		if g.shared == 0 || g.copied || g.sdone < g.shared {
			continue
		}
		g.copied = true
		first := g.runs[0]
		first.pdone = g.shared
		for _, r := range g.runs[1:] {
			if r.ended() {
				continue
			}
			err := s.m.Copy(first.seq, r.seq, g.shared)
			switch {
			case err == nil:
				r.pdone = g.shared
			case errors.Is(err, ErrUnsupported):
				r.pdone = 0
			default:
				r.err = fmt.Errorf("engine: share the prompt: %w", err)
			}
		}
	}
}

// steps runs the step of every run with logits, in parallel.
func (s *scheduler) steps() {
	if len(s.work) == 1 {
		s.work[0].stepRow()
		return
	}
	s.wg.Add(len(s.work))
	for _, r := range s.work {
		s.jobs <- r
	}
	s.wg.Wait()
}

// stepRow runs step on the run's logits row, beginRow starts the grammar
// of a run whose constraint compiled while it read its prompt (run.begin),
// maskRow fills the mask that prepare left to the decode; each records a
// failure (guarded).
func (r *run) stepRow()  { r.guarded("in the step", (*run).stepLogits) }
func (r *run) beginRow() { r.guarded("while starting the grammar", (*run).beginPending) }
func (r *run) maskRow()  { r.guarded("in the mask", (*run).fillDueMask) }

// guarded runs job on r, a worker's or the loop's part of a step, and
// records its error or panic as r's.
func (r *run) guarded(what string, job func(*run) error) {
	defer func() {
		if p := recover(); p != nil {
			r.err = fmt.Errorf("engine: panic %s of a sequence: %v", what, p)
		}
	}()
	if err := job(r); err != nil {
		r.err = err
	}
}

func (r *run) stepLogits() error {
	logits := r.logits
	r.logits = nil
	return r.step(logits)
}

func (r *run) beginPending() error {
	r.beginDue = false
	r.con, r.fut = r.fut.con, nil
	return r.begin()
}

func (r *run) fillDueMask() error {
	r.maskDue = false
	return r.fillMask()
}

// decodeFailed ends the runs that had entries in the failed batch.
func (s *scheduler) decodeFailed(err error) {
	for _, g := range s.groups {
		gerr := error(nil)
		if g.addS > 0 {
			gerr = err
			g.addS = 0
		}
		for _, r := range g.runs {
			if !r.ended() && (gerr != nil || r.addP+r.addG > 0) {
				r.err = fmt.Errorf("engine: decode %d tokens at position %d: %w", r.addP+r.addG, len(r.prompt)+r.decoded, err)
				if r.addG == 0 {
					r.err = fmt.Errorf("engine: prefill: %w", err)
				}
			}
		}
	}
}

func (s *scheduler) failAll(err error) {
	for _, g := range s.groups {
		for _, r := range g.runs {
			if !r.ended() {
				r.err = err
			}
		}
	}
}

// reap releases the sequences of ended runs (their cells at once) and
// signals groups whose runs are all released. The first run of a group
// keeps its sequence until the shared prefix is copied.
func (s *scheduler) reap() {
	kept := s.groups[:0]
	var done []chan struct{}
	for _, g := range s.groups {
		for _, r := range g.runs {
			if r.seq < 0 || !r.ended() || (r == g.runs[0] && r.waitingFirst()) {
				continue
			}
			s.release(r)
			g.live--
		}
		if g.live > 0 {
			kept = append(kept, g)
			continue
		}
		done = append(done, g.done)
	}
	clear(s.groups[len(kept):])
	s.groups = kept
	// The gauges first: a caller woken by done may read them at once.
	s.mu.Lock()
	s.stats.Finished += int64(len(done))
	s.stats.Active = s.active()
	s.stats.Cells = s.used
	s.mu.Unlock()
	for _, d := range done {
		close(d)
	}
}

// waitingFirst reports whether r, the first run of its group, holds the
// shared prefix that other live runs still wait for.
func (r *run) waitingFirst() bool {
	g := r.g
	if g.shared == 0 || g.copied {
		return false
	}
	for _, o := range g.runs[1:] {
		if !o.ended() {
			return true
		}
	}
	return false
}

// release frees r's sequence: its generated positions, and its prompt too
// unless the prompt cache keeps it for a later generation that starts the
// same way.
func (s *scheduler) release(r *run) {
	keep := 0
	if s.promptCache && r.err == nil && len(r.prompt) >= minPromptReuse && r.pdone == len(r.prompt) {
		keep = len(r.prompt)
		if s.m.Remove(r.seq, keep) != nil {
			keep = 0
		}
	}
	if keep == 0 {
		if err := s.m.Remove(r.seq, 0); err != nil && r.err == nil {
			r.err = fmt.Errorf("engine: free the sequence: %w", err)
		}
	} else {
		s.mu.Lock()
		s.prefixes[r.seq] = &prefix{toks: r.prompt, used: time.Now()}
		s.mu.Unlock()
		s.used += keep
	}
	s.seqs[r.seq] = nil
	r.seq = -1
	s.used -= r.reserve()
	r.stats.Total = time.Since(r.start)
}
