//go:build !amd64 || purego

package gpu

// firstAbove returns the index of the first x > thr in xs (NaN never is),
// or len(xs).
func firstAbove(xs []float32, thr float32) int { return firstAboveGo(xs, thr) }
