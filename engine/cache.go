package engine

import (
	"container/list"
	"context"
	"sync"

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

// get returns the constraint of key, compiling it with build on a miss.
// A caller whose ctx ends while another caller's compile runs stops
// waiting; the compile goes on for the others and is kept.
func (c *grammarCache) get(ctx context.Context, key cacheKey, build func() (*constraint, error)) (*constraint, error) {
	c.mu.Lock()
	if e := c.entries[key]; e != nil {
		c.stats.Hits++
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
		c.mu.Unlock()
		select {
		case <-e.ready:
			return e.con, e.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	e := &cacheEntry{key: key, ready: make(chan struct{})}
	c.entries[key] = e
	c.stats.Misses++
	c.mu.Unlock()

	con, err := build()
	c.mu.Lock()
	defer c.mu.Unlock()
	e.con, e.err = con, err
	close(e.ready)
	if err != nil {
		delete(c.entries, key)
		return nil, err
	}
	e.size = c.sizeOf(con)
	e.elem = c.lru.PushFront(e)
	c.bytes += e.size
	if c.stats.Misses%refreshEvery == 0 {
		c.remeasure()
	}
	c.evict()
	return con, nil
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

	nmOnce   sync.Once // no-model mode's prepared schema (noModelSchema)
	nmSchema *nomodel.Schema
	nmErr    error
}

// size is what the cache counts for a constraint: the automaton with its
// mask caches, the grammar text and (roughly) the schema and validator.
func (con *constraint) size() int64 {
	return int64(con.compiled.MemoryBytes() + len(con.src) + 4*con.schemaLen)
}
