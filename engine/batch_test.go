package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/structgen/structgen/engine"
)

// A request of the batched tests: what to generate and how.
type request struct {
	name string
	opts []engine.Option
}

// mixedRequests are generations of every kind the loop has: a schema, a
// grammar, a lazy trigger, a small budget that closes out, no grammar, a
// flexible-whitespace schema and one without jump-forward.
func mixedRequests() []request {
	return []request{
		{"schema", []engine.Option{engine.WithSchema([]byte(personSchema)), engine.WithMaxTokens(60)}},
		{"grammar", []engine.Option{engine.WithGrammar(`root ::= "[" [0-9]+ ("," [0-9]+)* "]"`), engine.WithMaxTokens(30)}},
		{"lazy", []engine.Option{engine.WithSchema([]byte(personSchema)), engine.WithLazyTrigger("{"), engine.WithMaxTokens(50)}},
		{"budget", []engine.Option{engine.WithSchema([]byte(personSchema)), engine.WithMaxTokens(16)}},
		{"free", []engine.Option{engine.WithMaxTokens(12)}},
		{"flexible", []engine.Option{engine.WithSchema([]byte(personSchema)), engine.WithWhitespace(engine.Flexible), engine.WithMaxTokens(70)}},
		{"nojump", []engine.Option{engine.WithGrammar(`root ::= "{\"id\":" [0-9]{1,4} "}"`), engine.WithJumpForward(false)}},
	}
}

// runRequest generates req on e, three choices at once for "choices",
// checks each result and returns the text (of choices: each followed by
// "|"), stop reason and tokens, and the result (nil for choices).
func runRequest(t *testing.T, e *engine.Engine, req request, prompt string, opts []engine.Option) (text string, stop engine.StopReason, toks []int32, one *engine.Result) {
	t.Helper()
	if req.name == "choices" {
		res, err := e.GenerateN(context.Background(), prompt, 3, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			checkResult(t, r)
			text += r.Text + "|"
			toks = append(toks, r.Tokens...)
		}
		return text, "", toks, nil
	}
	res, err := e.Generate(context.Background(), prompt, opts...)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res)
	return res.Text, res.Stop, res.Tokens, res
}

// waitIdle waits until the engine's scheduler has no work and its
// goroutines had time to exit.
func waitIdle(t *testing.T, e *engine.Engine) {
	t.Helper()
	for range 1000 {
		if st := e.SchedulerStats(); st.Active == 0 && st.Queued == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("scheduler still busy: %+v", e.SchedulerStats())
}

// openWhenQueued lets every decode of f through once n generations are
// queued or running.
func openWhenQueued(e *engine.Engine, f *fakeModel, n int) {
	for st := e.SchedulerStats(); st.Queued+st.Active < n; st = e.SchedulerStats() {
		time.Sleep(100 * time.Microsecond)
	}
	close(f.gate)
}

// heldModel is a fake model of nseq sequences whose generations never
// end by themselves (no end-of-sequence token) and whose decodes wait
// for f.gate to close: what the queue and cancellation tests hold.
func heldModel(nseq int) *fakeModel {
	f := newFakeModel()
	f.nseq = nseq
	f.noEOS = true
	f.gate = make(chan struct{})
	return f
}

// checkNoLeak fails if goroutines started after base are still running.
func checkNoLeak(t *testing.T, base int) {
	t.Helper()
	for range 1000 {
		if runtime.NumGoroutine() <= base {
			return
		}
		time.Sleep(time.Millisecond)
	}
	buf := make([]byte, 1<<16)
	t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
}

// Many generations of every kind, started at random moments over many
// steps, some cancelled: each one that is not cancelled gives exactly
// what it gives alone; the cache ends empty and no goroutine is left.
func TestBatchedEqualsAlone(t *testing.T) {
	base := runtime.NumGoroutine()
	reqs := mixedRequests()
	const n = 48
	type job struct {
		req    request
		seed   uint32
		prompt string
		cancel int           // cancel after this many streamed pieces (0: never)
		delay  time.Duration // before the call
	}
	rng := rand.New(rand.NewPCG(1, 2))
	jobs := make([]job, n)
	for i := range jobs {
		jobs[i] = job{req: reqs[i%len(reqs)], seed: uint32(i), prompt: strings.Repeat("x", 1+rng.IntN(40)),
			delay: time.Duration(rng.IntN(200)) * 10 * time.Microsecond}
		if i%7 == 3 {
			jobs[i].cancel = 1 + rng.IntN(3)
		}
	}

	// Alone: one engine, one generation at a time, each mask filled
	// before its decode (batched, the default: during it).
	want := make([]string, n)
	{
		f := newFakeModel()
		e := newEngine(t, f, engine.WithBatchTokens(16), engine.WithMaskOverlap(false))
		for i, j := range jobs {
			res, err := e.Generate(context.Background(), j.prompt, append(j.req.opts, engine.WithSeed(j.seed))...)
			if err != nil {
				t.Fatalf("%s alone: %v", j.req.name, err)
			}
			checkResult(t, res)
			want[i] = res.Text
		}
		if f.maxSeqs != 1 {
			t.Fatalf("alone: %d sequences in one decode", f.maxSeqs)
		}
	}

	// Together: 48 callers on one engine of 4 sequences, a batch budget
	// of 16 entries (so that prompts are read in chunks between steps).
	// The first decode waits until 8 generations are in, so that they
	// overlap however slow the machine; later ones come at random moments.
	f := newFakeModel()
	f.gate = make(chan struct{})
	e := newEngine(t, f, engine.WithBatchTokens(16))
	go openWhenQueued(e, f, 8)
	got := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(j.delay)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts := append(j.req.opts, engine.WithSeed(j.seed))
			if j.cancel > 0 {
				pieces := 0
				opts = append(opts, engine.WithStream(func([]byte) error {
					if pieces++; pieces == j.cancel {
						cancel()
					}
					return nil
				}))
			}
			res, err := e.Generate(ctx, j.prompt, opts...)
			if err != nil {
				errs[i] = err
				return
			}
			checkResult(t, res)
			got[i] = res.Text
		}()
	}
	wg.Wait()
	cancelled := 0
	for i, j := range jobs {
		switch {
		case errs[i] != nil && j.cancel > 0 && errors.Is(errs[i], context.Canceled):
			cancelled++
		case errs[i] != nil:
			t.Errorf("job %d (%s): %v", i, j.req.name, errs[i])
		case got[i] != want[i]:
			t.Errorf("job %d (%s, seed %d): batched %q, alone %q", i, j.req.name, j.seed, got[i], want[i])
		}
	}
	t.Logf("%d cancelled; %d decodes, up to %d sequences each, %d mixing a prompt with others' outputs", cancelled, len(f.batches), f.maxSeqs, f.mixed)
	if f.maxSeqs < 2 {
		t.Errorf("never more than %d sequence in a decode", f.maxSeqs)
	}
	if f.mixed == 0 {
		t.Error("no decode held a prompt chunk beside another sequence's output")
	}
	for _, b := range f.batches {
		if b > 16 {
			t.Fatalf("a decode of %d entries, budget 16", b)
		}
	}
	waitIdle(t, e)
	if c := f.usedCells(); c != 0 {
		t.Errorf("%d cells still used", c)
	}
	st := e.SchedulerStats()
	if st.Admitted < int64(n-cancelled) || st.Finished != st.Admitted {
		t.Errorf("admitted %d finished %d of %d (%d cancelled)", st.Admitted, st.Finished, n, cancelled)
	}
	checkNoLeak(t, base)
}

// With the mask filled during the decode (WithMaskOverlap, the default),
// every kind of generation samples the same tokens and decodes the same
// entries as with the mask filled before it: a run that stops at its
// mask stops before decoding its last token either way.
func TestMaskOverlap(t *testing.T) {
	reqs := append(mixedRequests(),
		request{"ends", []engine.Option{engine.WithGrammar(`root ::= "{\"a\":" [0-9]{1,3} "}" [ ]?`)}},
		request{"number", []engine.Option{engine.WithGrammar(`root ::= [1-9] [0-9]{0,6}`)}},
		request{"choices", []engine.Option{engine.WithSchema([]byte(personSchema)), engine.WithMaxTokens(60)}},
	)
	type outcome struct {
		text    string
		stop    engine.StopReason
		toks    []int32
		entries int
		st      engine.SchedulerStats
	}
	gen := func(t *testing.T, req request, seed uint32, overlap bool) outcome {
		f := newFakeModel()
		e := newEngine(t, f, engine.WithMaskOverlap(overlap))
		opts := append(req.opts, engine.WithSeed(seed))
		var o outcome
		o.text, o.stop, o.toks, _ = runRequest(t, e, req, "x", opts)
		waitIdle(t, e)
		for _, b := range f.batches {
			o.entries += b
		}
		o.st = e.SchedulerStats()
		return o
	}
	for _, req := range reqs {
		t.Run(req.name, func(t *testing.T) {
			overlapped := int64(0)
			for seed := range uint32(4) {
				on, off := gen(t, req, seed, true), gen(t, req, seed, false)
				if on.text != off.text || on.stop != off.stop || !slices.Equal(on.toks, off.toks) {
					t.Fatalf("seed %d: overlapped %q (%s), not %q (%s)", seed, on.text, on.stop, off.text, off.stop)
				}
				if on.entries != off.entries {
					t.Errorf("seed %d: %d entries decoded overlapped, %d not", seed, on.entries, off.entries)
				}
				if off.st.Overlapped != 0 || off.st.MaskWait != 0 {
					t.Errorf("seed %d: with the overlap off, %d masks overlapped, waited %v", seed, off.st.Overlapped, off.st.MaskWait)
				}
				overlapped += on.st.Overlapped
			}
			if constrained := req.name != "free"; constrained != (overlapped > 0) {
				t.Errorf("%d masks filled during decodes", overlapped)
			}
		})
	}
}

// Where a byte can follow the output but no token of the vocabulary
// starts with it, the mask filled during the decode is the one that stops
// the run: it decodes one token more than with the overlap off, and stops
// with the same output, without a step on that decode's logits.
func TestMaskOverlapStopsAfterDecode(t *testing.T) {
	for seed := range uint32(4) {
		var texts [2]string
		var entries [2]int
		for i, overlap := range []bool{true, false} {
			f := newFakeModel()
			f.toks['~'] = []byte("~~~") // no token is "~" alone
			e := newEngine(t, f, engine.WithMaskOverlap(overlap))
			res := generate(t, e, "x", engine.WithGrammar(`root ::= [a-c] "~"?`), engine.WithSeed(seed))
			if res.Stop != engine.StopGrammar || len(res.Tokens) != 1 {
				t.Fatalf("overlap %v: %q, %d tokens, stop %s", overlap, res.Text, len(res.Tokens), res.Stop)
			}
			waitIdle(t, e)
			texts[i] = res.Text
			for _, b := range f.batches {
				entries[i] += b
			}
			if st := e.SchedulerStats(); overlap != (st.Overlapped == 1) {
				t.Errorf("overlap %v: %d masks filled during decodes", overlap, st.Overlapped)
			}
		}
		if texts[0] != texts[1] || entries[0] != entries[1]+1 {
			t.Errorf("seed %d: overlapped %q, %d entries; not %q, %d entries", seed, texts[0], entries[0], texts[1], entries[1])
		}
	}
}

// A cancelled generation leaves within a step, frees its sequence and its
// cells, and the next generation runs. The test holds every decode until
// it lets it through, so that "within a step" is exact: after the cancel,
// at most the decode that is already past its check of the context runs.
func TestCancelFreesSequence(t *testing.T) {
	f := heldModel(1)
	e := newEngine(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.Generate(ctx, "x", engine.WithMaxTokens(1000))
		done <- err
	}()
	for range 5 {
		f.gate <- struct{}{}
	}
	cancel()
	extra := 0
	var err error
wait:
	for {
		select {
		case err = <-done:
			break wait
		case f.gate <- struct{}{}:
			extra++
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if extra > 1 {
		t.Errorf("%d decodes after the cancel, want at most 1", extra)
	}
	f.gate = nil
	waitIdle(t, e)
	if c := f.usedCells(); c != 0 {
		t.Errorf("%d cells used after the cancel", c)
	}
	res := generate(t, e, "x", engine.WithMaxTokens(10), engine.WithSeed(1))
	if len(res.Tokens) != 10 {
		t.Errorf("next generation: %d tokens", len(res.Tokens))
	}

	// A stream error ends its generation the same way.
	stop := errors.New("client gone")
	if _, err := e.Generate(context.Background(), "x", engine.WithMaxTokens(1000), engine.WithStream(func([]byte) error { return stop })); !errors.Is(err, stop) {
		t.Errorf("stream error: %v", err)
	}
	waitIdle(t, e)
	if c := f.usedCells(); c != 0 {
		t.Errorf("%d cells used after a stream error", c)
	}
}

// A generation cancelled while it waits for admission leaves the queue.
func TestCancelWhileQueued(t *testing.T) {
	f := heldModel(1)
	e := newEngine(t, f)
	first := make(chan error, 1)
	go func() {
		_, err := e.Generate(context.Background(), "x", engine.WithMaxTokens(5))
		first <- err
	}()
	f.gate <- struct{}{} // the first generation is running
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() {
		_, err := e.Generate(ctx, "y", engine.WithMaxTokens(5))
		second <- err
	}()
	for e.SchedulerStats().Queued == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Errorf("queued and cancelled: %v", err)
	}
	if q := e.SchedulerStats().Queued; q != 0 {
		t.Errorf("%d still queued", q)
	}
	close(f.gate)
	if err := <-first; err != nil {
		t.Error(err)
	}
}

// WithMaxQueue refuses generations beyond the queue at once.
func TestQueueFull(t *testing.T) {
	f := heldModel(1)
	e := newEngine(t, f, engine.WithMaxQueue(1))
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := e.Generate(context.Background(), "x", engine.WithMaxTokens(3))
			errs <- err
		}()
		// The first is admitted (and held in its first decode), the second
		// waits in the queue.
		for st := e.SchedulerStats(); st.Queued+st.Active < i+1; st = e.SchedulerStats() {
			time.Sleep(time.Millisecond)
		}
	}
	if _, err := e.Generate(context.Background(), "x", engine.WithMaxTokens(3)); !errors.Is(err, engine.ErrQueueFull) {
		t.Errorf("third generation: %v, want ErrQueueFull", err)
	}
	close(f.gate)
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A burst into an idle engine fills its free sequences and then the
// queue, whether or not the scheduler has admitted the first ones yet.
// Repeated, since the interleavings differ: the scheduler's gauges were
// once left stale when an admission pass stopped at a group that did not
// fit, and a fourth generation got past the bound (and, its decode held,
// hung).
func TestQueueBurst(t *testing.T) {
	for range 100 {
		f := heldModel(2)
		e := newEngine(t, f, engine.WithMaxQueue(1))
		errs := make(chan error, 3)
		for range 3 {
			go func() {
				_, err := e.Generate(context.Background(), "x", engine.WithMaxTokens(3))
				errs <- err
			}()
		}
		for st := e.SchedulerStats(); st.Queued+st.Active < 3; st = e.SchedulerStats() {
			select {
			case err := <-errs:
				close(f.gate)
				t.Fatalf("a generation of the burst: %v", err)
			case <-time.After(50 * time.Microsecond):
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := e.Generate(ctx, "x", engine.WithMaxTokens(3))
		cancel()
		close(f.gate)
		if !errors.Is(err, engine.ErrQueueFull) {
			t.Fatalf("fourth generation: %v, want ErrQueueFull (stats %+v)", err, e.SchedulerStats())
		}
		for range 3 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	}
}

// Admission waits while the cache has no room for a generation's prompt
// and budget, and a generation that cannot fit at all is an error.
func TestAdmissionByCells(t *testing.T) {
	f := newFakeModel()
	f.ctx = 60
	f.noEOS = true
	f.gate = make(chan struct{})
	e := newEngine(t, f)
	go openWhenQueued(e, f, 6)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// 2 prompt tokens + 24: two fit in 60 cells, not three.
			res, err := e.Generate(context.Background(), "x", engine.WithMaxTokens(24), engine.WithSeed(uint32(i)))
			if err != nil {
				t.Error(err)
				return
			}
			if len(res.Tokens) != 24 {
				t.Errorf("%d tokens", len(res.Tokens))
			}
		}()
	}
	wg.Wait()
	if f.maxSeqs != 2 {
		t.Errorf("up to %d sequences per decode, want 2 (cells for two)", f.maxSeqs)
	}
	if _, err := e.GenerateN(context.Background(), "x", 2, engine.WithMaxTokens(40)); !errors.Is(err, engine.ErrContextFull) {
		t.Errorf("a generation larger than the cache: %v", err)
	}
	if _, err := e.Generate(context.Background(), strings.Repeat("long ", 5)); err != nil {
		t.Errorf("default budget: %v", err)
	}
	if _, err := e.Generate(context.Background(), strings.Repeat("x", 60)); !errors.Is(err, engine.ErrContextFull) {
		t.Errorf("a prompt longer than the context: %v", err)
	}
}

// GenerateN decodes the prompt once and shares it: choice i is what
// Generate gives with seed+i.
func TestGenerateN(t *testing.T) {
	f := newFakeModel()
	opts := []engine.Option{engine.WithSchema([]byte(personSchema)), engine.WithMaxTokens(60), engine.WithSeed(10)}
	e := newEngine(t, f, opts...)
	prompt := "a prompt of several tokens for the choices"
	var want []string
	for i := range 3 {
		want = append(want, generate(t, e, prompt, engine.WithSeed(uint32(10+i))).Text)
	}
	f.inPrompt = 0
	streamed := make([]strings.Builder, 3)
	res, err := e.GenerateN(context.Background(), prompt, 3, engine.WithChoiceStream(func(i int, p []byte) error {
		streamed[i].Write(p)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	ptoks, _ := f.Tokenize([]byte(prompt), true, false)
	for i, r := range res {
		checkResult(t, r)
		if r.Text != want[i] || r.Seed != uint32(10+i) {
			t.Errorf("choice %d: %q seed %d, want %q seed %d", i, r.Text, r.Seed, want[i], 10+i)
		}
		if streamed[i].String() != r.Text {
			t.Errorf("choice %d streamed %q", i, streamed[i].String())
		}
	}
	// The prompt minus its last token once, the last token three times.
	if f.inPrompt != len(ptoks)-1+3 {
		t.Errorf("%d prompt entries decoded for 3 choices of a %d-token prompt, want %d", f.inPrompt, len(ptoks), len(ptoks)+2)
	}
	waitIdle(t, e)
	if c := f.usedCells(); c != 0 {
		t.Errorf("%d cells used", c)
	}
	if _, err := e.GenerateN(context.Background(), prompt, 5); err == nil || !strings.Contains(err.Error(), "5 completions need 5 sequences") {
		t.Errorf("more choices than sequences: %v", err)
	}
	if _, err := e.GenerateN(context.Background(), prompt, 0); err == nil {
		t.Error("GenerateN(0): no error")
	}
	if _, err := e.GenerateN(context.Background(), prompt, 2, engine.WithStream(func([]byte) error { return nil })); err == nil {
		t.Error("WithStream with 2 choices: no error")
	}
}

// A slow stream consumer never holds up the batch: one generation's
// stream blocks; its sequence still runs to its end in the scheduler, and
// another generation runs meanwhile.
func TestSlowStreamDoesNotBlock(t *testing.T) {
	f := newFakeModel()
	f.noEOS = true
	e := newEngine(t, f)
	release := make(chan struct{})
	slow := make(chan error, 1)
	go func() {
		_, err := e.Generate(context.Background(), "x", engine.WithMaxTokens(40), engine.WithStream(func([]byte) error {
			<-release
			return nil
		}))
		slow <- err
	}()
	for e.SchedulerStats().Finished == 0 {
		time.Sleep(time.Millisecond)
	}
	res := generate(t, e, "y", engine.WithMaxTokens(40))
	if len(res.Tokens) != 40 {
		t.Errorf("%d tokens", len(res.Tokens))
	}
	close(release)
	if err := <-slow; err != nil {
		t.Error(err)
	}
}

func TestEngineOptions(t *testing.T) {
	f := newFakeModel()
	for _, tc := range []struct {
		opt  engine.Option
		want string
	}{
		{engine.WithBatchTokens(0), "WithBatchTokens: 0 out of range"},
		{engine.WithMaxQueue(-1), "WithMaxQueue"},
		{engine.WithGrammarCacheBytes(-1), "WithGrammarCacheBytes"},
	} {
		if _, err := engine.New(f, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: %v, want %q", err, tc.want)
		}
	}
	e := newEngine(t, f)
	if _, err := e.Generate(context.Background(), "x", engine.WithBatchTokens(8)); err == nil || !strings.Contains(err.Error(), "engine settings") {
		t.Errorf("an engine setting in Generate: %v", err)
	}
	f.nseq = 0
	if _, err := engine.New(f); err == nil {
		t.Error("a model of 0 sequences: no error")
	}
}

// The grammar cache compiles a schema once for concurrent callers, keeps
// compiled grammars within its byte bound, and counts hits, misses and
// evictions (the least-recently-used order with exact sizes:
// TestCacheLRU).
func TestGrammarCache(t *testing.T) {
	e, err := engine.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.Compile(engine.WithSchema([]byte(personSchema))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	st := e.CacheStats()
	if st.Misses != 1 || st.Hits != 7 || st.Entries != 1 || st.Bytes <= 0 {
		t.Errorf("8 concurrent compiles of one schema: %+v", st)
	}
	// A bound of one byte keeps the newest grammar only.
	small, err := engine.New(nil, engine.WithGrammarCacheBytes(1))
	if err != nil {
		t.Fatal(err)
	}
	schema := func(i int) engine.Option {
		return engine.WithSchema([]byte(strings.Replace(personSchema, `"maxLength": 12`, fmt.Sprintf(`"maxLength": %d`, 10+i), 1)))
	}
	for i := range 4 {
		if _, err := small.Compile(schema(i)); err != nil {
			t.Fatal(err)
		}
	}
	if st := small.CacheStats(); st.Entries != 1 || st.Evictions != 3 || st.Misses != 4 {
		t.Errorf("4 schemas in room for 1: %+v", st)
	}
	if _, err := small.Compile(schema(3)); err != nil {
		t.Fatal(err)
	}
	if st := small.CacheStats(); st.Hits != 1 {
		t.Errorf("the newest is kept: %+v", st)
	}
	// Failures are not kept.
	bad := engine.WithGrammar(`root ::= "a`)
	for range 2 {
		if _, err := small.Compile(bad); err == nil {
			t.Fatal("bad grammar compiled")
		}
	}
	if st3 := small.CacheStats(); st3.Entries != 1 || st3.Misses != 6 {
		t.Errorf("a failure was cached: %+v", st3)
	}
}

// leanModel is a Model that does nothing per decode but hand out
// precomputed logits rows, so that allocation counts show the engine's own.
type leanModel struct {
	*fakeModel
	table [][]float32 // logits rows, chosen by position
	rows  []int       // batch entry → table row; -1: none
	npos  []int
}

func newLeanModel() *leanModel {
	f := newFakeModel()
	f.noEOS = true
	l := &leanModel{fakeModel: f, npos: make([]int, f.nseq)}
	for i := range 64 {
		row := make([]float32, len(f.toks))
		f.compute(row, []int32{int32(i)})
		l.table = append(l.table, row)
	}
	return l
}

func (l *leanModel) Decode(b *engine.Batch) error {
	l.rows = l.rows[:0]
	for i := range b.Len() {
		l.npos[b.Seq[i]]++
		r := -1
		if b.Logits[i] {
			r = int(b.Pos[i]) % len(l.table)
		}
		l.rows = append(l.rows, r)
	}
	return nil
}
func (l *leanModel) Logits(i int) []float32 {
	// A fresh view each time, as llama.cpp's buffer would be: the engine
	// masks it in place.
	return append(l.table[l.rows[i]][:0:0], l.table[l.rows[i]]...)
}
func (l *leanModel) Remove(seq, pos int) error { l.npos[seq] = pos; return nil }
func (l *leanModel) Copy(src, dst, n int) error {
	l.npos[dst] = n
	return nil
}

// The per-token path allocates nothing but amortized buffer growth: a
// generation of 2,000 tokens allocates about as often as one of 200.
func TestStepAllocations(t *testing.T) {
	l := newLeanModel()
	l.ctx = 8192
	// Logits copies are the model's (a real model hands out a view):
	// count them out.
	e, err := engine.New(l, engine.WithGrammar(`root ::= [a-z ]*`), engine.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	allocs := func(n int) float64 {
		return testing.AllocsPerRun(3, func() {
			res, err := e.Generate(context.Background(), "x", engine.WithMaxTokens(n))
			if err != nil || len(res.Tokens) != n {
				t.Fatalf("%d tokens, %v", len(res.Tokens), err)
			}
		})
	}
	a200, a2000 := allocs(200), allocs(2000)
	// One copy of the logits per token is the lean model's own.
	perToken := (a2000 - a200 - 1800) / 1800
	t.Logf("allocations: %.0f for 200 tokens, %.0f for 2000: %.3f per token beyond the model's", a200, a2000, perToken)
	if perToken > 0.02 {
		t.Errorf("%.3f allocations per token", perToken)
	}
}

// With WithPromptCache, a generation whose prompt starts like a finished
// one's reuses the kept prompt: it decodes only the rest, its output is
// the same (the fake model's logits depend only on the sequence), and kept
// prompts give way when their cells or sequences are needed.
func TestPromptCache(t *testing.T) {
	f := newFakeModel()
	f.ctx = 200
	f.noEOS = true
	e := newEngine(t, f, engine.WithPromptCache(true), engine.WithMaxTokens(20))
	system := strings.Repeat("You are a careful assistant. ", 2)
	first := generate(t, e, system+"Question one?", engine.WithSeed(1))
	waitIdle(t, e)
	if c := f.usedCells(); c == 0 {
		t.Fatal("no prompt kept")
	}
	f.inPrompt = 0
	again := generate(t, e, system+"Question one?", engine.WithSeed(1))
	if again.Text != first.Text {
		t.Errorf("with the kept prompt: %q, first %q", again.Text, first.Text)
	}
	if again.Stats.CachedTokens != again.Stats.PromptTokens-1 || f.inPrompt != 1 {
		t.Errorf("same prompt: %d of %d tokens reused, %d decoded", again.Stats.CachedTokens, again.Stats.PromptTokens, f.inPrompt)
	}
	f.inPrompt = 0
	other := generate(t, e, system+"Another question?", engine.WithSeed(1))
	if other.Stats.CachedTokens < 20 || f.inPrompt != other.Stats.PromptTokens-other.Stats.CachedTokens {
		t.Errorf("shared system prompt: %d reused, %d decoded of %d", other.Stats.CachedTokens, f.inPrompt, other.Stats.PromptTokens)
	}
	if st := e.SchedulerStats(); st.PromptReuses != 2 {
		t.Errorf("%d reuses", st.PromptReuses)
	}
	// The kept prompts fill sequences and cells; a generation that needs
	// them all still runs, and with four at once every one runs.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.Generate(context.Background(), fmt.Sprintf("prompt %d of a batch", i), engine.WithMaxTokens(20))
			if err != nil || len(res.Tokens) != 20 {
				t.Errorf("batch %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if _, err := e.Generate(context.Background(), "x", engine.WithMaxTokens(190)); err != nil {
		t.Errorf("a generation that needs the whole cache: %v", err)
	}
	waitIdle(t, e)
	if c, st := f.usedCells(), e.SchedulerStats(); c != st.Cells {
		t.Errorf("the model holds %d cells, the scheduler counts %d", c, st.Cells)
	}
	// Off by default.
	plain := newEngine(t, newFakeModel(), engine.WithMaxTokens(5))
	generate(t, plain, system, engine.WithSeed(1))
	if res := generate(t, plain, system, engine.WithSeed(1)); res.Stats.CachedTokens != 0 {
		t.Error("prompt reused without WithPromptCache")
	}
}

// TestBatchedPrecompute: a grammar's eager precomputation runs while the
// prompt is read. Held back, the generation decodes its whole prompt but
// the last token (whose logits it would sample; the grammar forces no
// start) and waits; released, it
// goes on, with the output of a generation that did not wait.
func TestBatchedPrecompute(t *testing.T) {
	for _, overlap := range []bool{true, false} {
		t.Run(fmt.Sprintf("compile-overlap=%v", overlap), func(t *testing.T) { batchedPrecompute(t, overlap) })
	}
}

func batchedPrecompute(t *testing.T, overlap bool) {
	prompt := strings.Repeat("the cat sat ", 6)
	opts := []engine.Option{engine.WithGrammar(`root ::= ( "yes" | "no" ) " " [0-9]{1,3}`), engine.WithSeed(3), engine.WithCompileOverlap(overlap)}
	want := generate(t, newEngine(t, newFakeModel(), engine.WithBatchTokens(8)), prompt, opts...)
	release := engine.HoldPrecompute(t)
	readsPromptWhileHeld(t, "precomputation", release, want, prompt, opts...)
}

// readsPromptWhileHeld generates prompt (with batches of 8 tokens) while
// the grammar's compile or precomputation (what) is held: the model reads
// all of the prompt but its last token, and no more, the generation does
// not end before release, and after it gives want.
func readsPromptWhileHeld(t *testing.T, what string, release func(), want *engine.Result, prompt string, opts ...engine.Option) {
	t.Helper()
	f := newFakeModel()
	e := newEngine(t, f, engine.WithBatchTokens(8))
	type result struct {
		res *engine.Result
		err error
	}
	out := make(chan result, 1)
	go func() {
		res, err := e.Generate(context.Background(), prompt, opts...)
		out <- result{res, err}
	}()
	inPrompt := func() (n, toks int) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.prompts) > 0 {
			toks = len(f.prompts[len(f.prompts)-1])
		}
		return int(f.promptRead.Load()), toks
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, toks := inPrompt()
		if toks > 0 && n >= toks-1 {
			break
		}
		if time.Now().After(deadline) {
			release()
			t.Fatalf("the prompt was not read during the grammar's %s: %d of %d tokens", what, n, toks)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if n, toks := inPrompt(); n != toks-1 {
		t.Errorf("%d of the prompt's %d tokens decoded before the %s ended, want all but the last", n, toks, what)
	}
	select {
	case r := <-out:
		t.Fatalf("the generation ended (%v) before its grammar's %s", r.err, what)
	default:
	}
	release()
	r := <-out
	if r.err != nil {
		t.Fatal(r.err)
	}
	checkResult(t, r.res)
	if r.res.Text != want.Text || !slices.Equal(r.res.Tokens, want.Tokens) {
		t.Errorf("output %q, without waiting %q", r.res.Text, want.Text)
	}
	waitIdle(t, e)
}

// TestPrecomputeEndsAfterFill: a precomputation that ends after the
// scheduler filled an empty batch (its run held back for it) and before
// it looked for one to wait for used to fail the generation ("nothing to
// decode"; TestGenerateN under -race): the scheduler now fills again.
func TestPrecomputeEndsAfterFill(t *testing.T) {
	for _, overlap := range []bool{true, false} {
		t.Run(fmt.Sprintf("compile-overlap=%v", overlap), func(t *testing.T) { precomputeEndsAfterFill(t, overlap) })
	}
}

func precomputeEndsAfterFill(t *testing.T, overlap bool) {
	prompt := "a prompt for a precomputation that ends at the wrong moment"
	opts := []engine.Option{engine.WithGrammar(`root ::= ( "yes" | "no" ) " " [0-9]{1,3}`), engine.WithSeed(3), engine.WithCompileOverlap(overlap)}
	want := generate(t, newEngine(t, newFakeModel()), prompt, opts...).Text
	release := engine.HoldPrecompute(t)
	var once sync.Once
	hits := 0
	engine.OnEmptyBatch(t, func() {
		hits++
		once.Do(release)
	})
	res, err := newEngine(t, newFakeModel()).Generate(context.Background(), prompt, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != want || hits == 0 {
		t.Errorf("output %q after %d empty batches, want %q after some", res.Text, hits, want)
	}
}

// A generation submitted after the scheduler's admission looked at an
// empty queue and before the loop saw the queue again (the caller of the
// generation that just ended, submitting its next) is admitted: it used
// to fail as not fitting an idle cache (TestStatsSettledWhenDone, once
// in a few hundred runs under load).
func TestSubmitAfterAdmit(t *testing.T) {
	e := newEngine(t, newFakeModel())
	var once sync.Once
	errc := make(chan error, 1)
	engine.AfterAdmit(t, func(groups int) {
		if groups != 0 {
			return
		}
		once.Do(func() {
			go func() {
				_, err := e.Generate(context.Background(), "y", engine.WithMaxTokens(2))
				errc <- err
			}()
			for deadline := time.Now().Add(10 * time.Second); e.SchedulerStats().Queued == 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		})
	})
	if _, err := e.Generate(context.Background(), "x", engine.WithMaxTokens(2)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("the generation queued between admit and the loop's look at the queue: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the generation queued between admit and the loop's look at the queue never ended")
	}
}

// A generation's end is seen in the scheduler's gauges by the time its
// caller has the result: the group used to be closed before Active and
// Cells were updated, and a caller reading SchedulerStats right after
// could see its own generation still active (server's
// TestConcurrentSchemas, under load).
func TestStatsSettledWhenDone(t *testing.T) {
	f := newFakeModel()
	e := newEngine(t, f)
	for i := range 300 {
		if _, err := e.Generate(context.Background(), "x", engine.WithMaxTokens(2)); err != nil {
			t.Fatal(err)
		}
		if st := e.SchedulerStats(); st.Active != 0 || st.Finished != int64(i+1) || st.Cells != 0 {
			t.Fatalf("after generation %d returned: %+v, want nothing active or held and %d finished", i+1, st, i+1)
		}
	}
}
