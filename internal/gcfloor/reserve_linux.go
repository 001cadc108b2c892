package gcfloor

import (
	"os"
	"strings"
	"syscall"
	"unsafe"
)

// reserveAllowed reports whether a reserve of n bytes of address space
// can be had without risk: a 64-bit process without the race detector
// (raceEnabled), not under strict overcommit
// (vm.overcommit_memory 2 charges mapped memory whether written or not),
// n at most half the machine's memory (the heuristic overcommit refuses
// a mapping larger than memory and swap, and Go cannot recover from a
// refused heap mapping), and an address-space limit (ulimit -v) of at
// least four times n.
func reserveAllowed(n int64) bool {
	if unsafe.Sizeof(uintptr(0)) < 8 || raceEnabled {
		return false
	}
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil || uint64(si.Totalram)*uint64(si.Unit)/2 < uint64(n) {
		return false
	}
	if b, err := os.ReadFile("/proc/sys/vm/overcommit_memory"); err != nil || strings.TrimSpace(string(b)) == "2" {
		return false
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err != nil {
		return false
	}
	return lim.Cur == ^uint64(0) || lim.Cur/4 >= uint64(n)
}

// dropPages gives b's pages back to the system (MADV_DONTNEED): a piece
// of the reserve Go cleared (see reserveChunk) holds no memory after.
// The reserve is never read or written, and holds no pointers.
func dropPages(b []byte) {
	_ = syscall.Madvise(b, syscall.MADV_DONTNEED)
}
