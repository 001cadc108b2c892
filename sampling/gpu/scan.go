package gpu

// firstAboveGo is the portable firstAbove (and its reference in tests).
func firstAboveGo(xs []float32, thr float32) int {
	for i, x := range xs {
		if x > thr {
			return i
		}
	}
	return len(xs)
}
