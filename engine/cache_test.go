package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// testCache is a grammar cache whose entries are sized by their text's
// length and built as constraints holding only that text.
func testCache(max int64) (*grammarCache, *[]string) {
	var evicted []string
	c := newGrammarCache(max, func(con *constraint) { evicted = append(evicted, con.src) })
	c.sizeOf = func(con *constraint) int64 { return int64(len(con.src)) }
	return c, &evicted
}

func get(c *grammarCache, src string) (*constraint, error) {
	return c.get(context.Background(), cacheKey{grammar: src}, 0, func(<-chan struct{}) (*constraint, error) {
		return &constraint{src: src}, nil
	})
}

func TestCacheLRU(t *testing.T) {
	c, evicted := testCache(10)
	for _, src := range []string{"aaaa", "bbb", "cc"} { // 9 bytes
		if _, err := get(c, src); err != nil {
			t.Fatal(err)
		}
	}
	get(c, "aaaa")  // a hit: aaaa is now the most recent
	get(c, "ddddd") // 14 bytes: bbb then cc go (least recently used)
	// The compile goroutine evicts under c.mu after the entry is ready:
	// read what it evicted under c.mu too.
	c.mu.Lock()
	got := append([]string(nil), *evicted...)
	c.mu.Unlock()
	if len(got) != 2 || got[0] != "bbb" || got[1] != "cc" {
		t.Errorf("evicted %q, want [bbb cc]", got)
	}
	st := c.Stats()
	if st.Entries != 2 || st.Bytes != 9 || st.Hits != 1 || st.Misses != 4 || st.Evictions != 2 {
		t.Errorf("stats %+v", st)
	}
	// An entry larger than the bound alone stays, alone.
	get(c, "eeeeeeeeeeee")
	if st := c.Stats(); st.Entries != 1 || st.Bytes != 12 {
		t.Errorf("a large entry: %+v", st)
	}
}

// Concurrent lookups of a key being built wait for that one build; one
// whose context ends stops waiting, and the build goes on for the rest.
func TestCacheOneBuild(t *testing.T) {
	c, _ := testCache(1 << 20)
	release := make(chan struct{})
	builds := 0
	build := func(<-chan struct{}) (*constraint, error) {
		builds++
		<-release
		return &constraint{src: "g"}, nil
	}
	key := cacheKey{grammar: "g"}
	var wg sync.WaitGroup
	results := make([]*constraint, 5)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = c.get(context.Background(), key, 0, build)
		}()
	}
	for {
		c.mu.Lock()
		n := c.stats.Hits + c.stats.Misses
		c.mu.Unlock()
		if n == 5 {
			break
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.get(ctx, key, 0, build); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiter: %v", err)
	}
	close(release)
	wg.Wait()
	if builds != 1 {
		t.Errorf("%d builds", builds)
	}
	for i, r := range results {
		if r == nil || r != results[0] {
			t.Errorf("caller %d got %v", i, r)
		}
	}
	// A failed build is not kept: the next lookup builds again.
	fail := errors.New("bad grammar")
	for range 2 {
		if _, err := c.get(context.Background(), cacheKey{grammar: "bad"}, 0, func(<-chan struct{}) (*constraint, error) { return nil, fail }); !errors.Is(err, fail) {
			t.Errorf("failed build: %v", err)
		}
	}
	if st := c.Stats(); st.Misses != 3 || st.Entries != 1 {
		t.Errorf("stats %+v", st)
	}
}
