//go:build amd64 && !purego

package gpu

// firstAbove returns the index of the first x > thr in xs (NaN never is),
// or len(xs). Implemented in scan_amd64.s with SSE.
//
//go:noescape
func firstAbove(xs []float32, thr float32) int
