package engine_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/mask"
)

// blowUp is a grammar whose automaton construction runs into
// mask.MaxStates after about a quarter of a second of work (150–260 ms on
// the development machine): long enough to stop.
var blowUp = `root ::= [ab]* "a"` + strings.Repeat(" [ab]", 20)

// A compile stops at its time limit, and when every generation waiting for
// it has gone; while one still waits, it goes on for that one.
func TestCompileCancel(t *testing.T) {
	e, err := engine.New(nil, engine.WithCompileTimeout(30*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Compile(engine.WithGrammar(blowUp)); !errors.Is(err, engine.ErrCompileTimeout) {
		t.Fatalf("time limit: error %v, want ErrCompileTimeout", err)
	}

	// Two waiters leave: the compile stops (its goroutine ends at once
	// instead of running on for seconds).
	e, err = engine.New(nil, engine.WithCompileTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	errs := make(chan error, 2)
	var cancels []context.CancelFunc
	for range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		go func() {
			_, err := e.Generate(ctx, "", engine.WithGrammar(blowUp))
			errs <- err
		}()
	}
	// Both wait for the one compile; then they leave, one after the other.
	for st := e.CacheStats(); st.Hits+st.Misses < 2; st = e.CacheStats() {
		time.Sleep(time.Millisecond)
	}
	for _, cancel := range cancels {
		cancel()
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Fatalf("waiter: error %v, want its context's", err)
		}
	}
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		t.Errorf("%d goroutines left after every waiter went (%d before): the compile did not stop", n, base)
	}
	if st := e.CacheStats(); st.Entries != 0 || st.Misses != 1 || st.Hits != 1 {
		t.Errorf("cache after an abandoned compile: %+v", st)
	}

	// One waiter leaves, the other stays: the compile goes on until its
	// time limit (well before blowUp's construction fails), and the one
	// who stayed gets that outcome.
	e, err = engine.New(nil, engine.WithCompileTimeout(80*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, err := e.Generate(ctx, "", engine.WithGrammar(blowUp))
		errs <- err
	}()
	stayed := make(chan error, 1)
	go func() {
		_, err := e.Compile(engine.WithGrammar(blowUp))
		stayed <- err
	}()
	for st := e.CacheStats(); st.Hits+st.Misses < 2; st = e.CacheStats() {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Errorf("the waiter that left: error %v, want its context's", err)
	}
	if err := <-stayed; !errors.Is(err, engine.ErrCompileTimeout) || errors.Is(err, mask.ErrCanceled) {
		t.Errorf("the waiter that stayed: error %v, want ErrCompileTimeout", err)
	}
	if _, err := engine.New(nil, engine.WithCompileTimeout(-1)); err == nil {
		t.Error("a negative compile timeout: no error")
	}
}
