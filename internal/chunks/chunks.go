// Package chunks hands out slices cut from larger allocations: a parser
// or a lowering that makes thousands of small nodes and lists allocates
// a few chunks instead (gbnf's parse tree, mask's lowered expressions).
package chunks

// Chunks hands out slices of T cut from chunks that grow from 16 to 1024
// elements as they are used up: small for small inputs. The zero value
// is ready to use.
type Chunks[T any] struct {
	free []T
	n    int // chunks allocated
}

// Take cuts k elements (zeroed). The slice's capacity is its length, so
// that appending to it never writes into a neighbour's; k larger than a
// chunk gets a chunk of its own size.
func (c *Chunks[T]) Take(k int) []T {
	if len(c.free) < k {
		c.n++
		c.free = make([]T, max(k, 16<<min(c.n/2, 6)))
	}
	out := c.free[:k:k]
	c.free = c.free[k:]
	return out
}
