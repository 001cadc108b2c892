package engine

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/structgen/structgen/engine/nomodel"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// DefaultGrammarCacheBytes bounds the compiled grammars an Engine keeps
// (WithGrammarCacheBytes): the automaton of a typical schema is 0.5–5 MB
// on a 128k vocabulary (the bench's order schema: 4.8 MB), so 256 MiB
// holds from fifty to several hundred schemas, the working set of a busy
// server, at a fraction of a model's own memory.
const DefaultGrammarCacheBytes = 256 << 20

// DefaultCompileTimeout bounds the conversion and compilation of one
// grammar or schema (WithCompileTimeout). The slowest schema of the
// JSONSchemaBench sample takes 2.1 s and a grammar that reaches
// mask.MaxStates about 2 s on the development machine; 10 s lets every
// real schema compile on a loaded machine while a pathological one cannot
// hold a server's goroutine and CPU for long.
const DefaultCompileTimeout = 10 * time.Second

// ErrCompileTimeout reports a grammar or schema whose compilation took
// longer than WithCompileTimeout allows.
var ErrCompileTimeout = errors.New("engine: grammar compilation exceeded its time limit")

// CacheStats describes a grammar cache.
type CacheStats struct {
	Hits      int64 // lookups answered from the cache (or by a compile already running)
	Misses    int64 // lookups that compiled
	Evictions int64 // entries dropped to stay within the bound
	Entries   int   // compiled grammars held now
	Bytes     int64 // their size (automata, mask caches, grammar text)
	MaxBytes  int64 // the bound
}

// cacheKey identifies a constraint: the grammar or schema text, the
// conversion options and the vocabulary it is compiled against.
type cacheKey struct {
	grammar    string
	schema     string
	whitespace Whitespace
	lenient    bool
	strictObj  bool
	anyOrder   bool
	tools      string // a tool constraint (toolSpec.key)
	vocab      *mask.Vocab
}

// cacheEntry is a constraint being compiled or compiled.
type cacheEntry struct {
	key   cacheKey
	ready chan struct{} // closed when con or err is set
	con   *constraint
	err   error
	size  int64
	elem  *list.Element // in lru while cached

	waiters int                // callers waiting for the compile
	cancel  context.CancelFunc // stops the compile
}

// grammarCache holds compiled constraints, least recently used out, bounded
// by their bytes. Concurrent lookups of a key that is being compiled wait
// for that one compile. Failures are not kept (they cost what the limits
// of conversion and compilation allow, and the next request may differ
// only in what the caller fixed).
type grammarCache struct {
	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry
	lru     list.List // front: most recently used
	bytes   int64
	max     int64
	stats   CacheStats
	onEvict func(*constraint)
	sizeOf  func(*constraint) int64 // (*constraint).size; tests replace it
}

// refreshEvery is how many compiles pass between two re-measurements of
// every entry (mask caches filled on first use grow an entry after it was
// added): a re-measurement walks each entry's caches (tens of µs each).
const refreshEvery = 16

func newGrammarCache(max int64, onEvict func(*constraint)) *grammarCache {
	return &grammarCache{entries: make(map[cacheKey]*cacheEntry), max: max, onEvict: onEvict, sizeOf: (*constraint).size}
}

// peek returns the constraint of key if the cache holds it compiled (a
// hit, as get counts it); ok is false when it is missing or being
// compiled.
func (c *grammarCache) peek(key cacheKey) (con *constraint, err error, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	if e == nil {
		return nil, nil, false
	}
	select {
	case <-e.ready:
	default:
		return nil, nil, false
	}
	c.hit(e)
	return e.con, e.err, true
}

// hit counts a lookup answered by e and marks e the most recently used
// (under mu).
func (c *grammarCache) hit(e *cacheEntry) {
	c.stats.Hits++
	if e.elem != nil {
		c.lru.MoveToFront(e.elem)
	}
}

// get returns the constraint of key, compiling it with build on a miss.
// The compile runs on its own goroutine while the callers that want it
// wait: a caller whose ctx ends stops waiting, and when every caller has
// gone the compile is stopped (build's done channel closes) and nothing
// is kept. timeout > 0 bounds the compile (ErrCompileTimeout).
func (c *grammarCache) get(ctx context.Context, key cacheKey, timeout time.Duration, build func(done <-chan struct{}) (*constraint, error)) (*constraint, error) {
	c.mu.Lock()
	e := c.entries[key]
	if e != nil {
		c.hit(e)
	} else {
		e = &cacheEntry{key: key, ready: make(chan struct{})}
		c.entries[key] = e
		c.stats.Misses++
		var bctx context.Context
		if timeout > 0 {
			bctx, e.cancel = context.WithTimeout(context.Background(), timeout)
		} else {
			bctx, e.cancel = context.WithCancel(context.Background())
		}
		go c.compile(e, bctx, timeout, build)
	}
	select {
	case <-e.ready:
		c.mu.Unlock()
		return e.con, e.err
	default:
	}
	e.waiters++
	c.mu.Unlock()
	select {
	case <-e.ready:
		return e.con, e.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e.waiters--
	if e.waiters == 0 && e.elem == nil && c.entries[key] == e {
		// Nobody wants it any more: stop the compile, forget the entry.
		select {
		case <-e.ready:
		default:
			e.cancel()
			delete(c.entries, key)
		}
	}
	return nil, ctx.Err()
}

// compile runs build for e and stores the outcome; then, the callers
// served, it runs the compiled grammar's eager precomputation
// (mask.Compiled.Precompute, bounded by its work budget), which the
// generations overlap with reading their prompts (scheduler.fill).
func (c *grammarCache) compile(e *cacheEntry, bctx context.Context, timeout time.Duration, build func(done <-chan struct{}) (*constraint, error)) {
	if c.store(e, bctx, timeout, build) && e.con.compiled != nil {
		if err := precomputeGrammar(e.con.compiled); err != nil {
			c.drop(e)
		}
	}
}

// precomputeGrammar runs a compiled grammar's eager precomputation (a
// variable: tests hold it back).
var precomputeGrammar = func(c *mask.Compiled) error { return c.Precompute(nil) }

// store runs build for e and stores the outcome; it reports whether e
// holds a constraint that someone wants.
func (c *grammarCache) store(e *cacheEntry, bctx context.Context, timeout time.Duration, build func(done <-chan struct{}) (*constraint, error)) bool {
	con, err := func() (con *constraint, err error) {
		defer func() {
			if p := recover(); p != nil {
				con, err = nil, fmt.Errorf("engine: panic while compiling the grammar: %v", p)
			}
		}()
		return build(bctx.Done())
	}()
	if err != nil && errors.Is(bctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w: more than %v (WithCompileTimeout)", ErrCompileTimeout, timeout)
	}
	e.cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	e.con, e.err = con, err
	close(e.ready)
	if err != nil {
		if c.entries[e.key] == e {
			delete(c.entries, e.key)
		}
		return false
	}
	if c.entries[e.key] != e {
		return false // abandoned by every caller
	}
	e.size = c.sizeOf(con)
	e.elem = c.lru.PushFront(e)
	c.bytes += e.size
	if c.stats.Misses%refreshEvery == 0 {
		c.remeasure()
	}
	c.evict()
	return true
}

// drop forgets e (its grammar failed after it was stored: a limit its
// precomputation ran into); the generations holding it fail with the
// same error.
func (c *grammarCache) drop(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries[e.key] != e {
		return
	}
	delete(c.entries, e.key)
	if e.elem != nil {
		c.lru.Remove(e.elem)
		e.elem = nil
		c.bytes -= e.size
	}
}

// evict drops least recently used entries until the cache is within its
// bound; the entry just added stays even when it alone is larger.
func (c *grammarCache) evict() {
	for c.bytes > c.max && c.lru.Len() > 1 {
		e := c.lru.Back().Value.(*cacheEntry)
		c.lru.Remove(e.elem)
		e.elem = nil
		delete(c.entries, e.key)
		c.bytes -= e.size
		c.stats.Evictions++
		if c.onEvict != nil {
			c.onEvict(e.con)
		}
	}
}

// remeasure re-measures the entries (their lazily filled mask caches grow
// with use).
func (c *grammarCache) remeasure() {
	c.bytes = 0
	for el := c.lru.Front(); el != nil; el = el.Next() {
		e := el.Value.(*cacheEntry)
		e.size = c.sizeOf(e.con)
		c.bytes += e.size
	}
}

func (c *grammarCache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Entries, s.Bytes, s.MaxBytes = c.lru.Len(), c.bytes, c.max
	return s
}

// constraint is a compiled grammar with what it came from.
type constraint struct {
	src       string // GBNF
	compiled  *mask.Compiled
	validator *jsonschema.Schema // schema constraints only
	warnings  []jsonschema2gbnf.Warning
	schemaLen int
	tools     *toolSet // tool calls: their parser and validator

	nmOnce   sync.Once // no-model mode's prepared schema (noModelSchema)
	nmSchema *nomodel.Schema
	nmErr    error
}

// size is what the cache counts for a constraint: the automaton with its
// mask caches, the grammar text and (roughly) the schema and validator.
func (con *constraint) size() int64 {
	return int64(con.compiled.MemoryBytes() + len(con.src) + 4*con.schemaLen)
}
