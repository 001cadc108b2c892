//go:build !linux

package gcfloor

// reserveAllowed is false off Linux: where the system charges mapped
// memory against a commit limit (Windows) the reserve would cost it, and
// it was measured on Linux only.
func reserveAllowed(int64) bool { return false }

func dropPages([]byte) {}
