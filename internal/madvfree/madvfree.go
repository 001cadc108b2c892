// Package madvfree makes a long-running process give memory back to the
// system lazily (MADV_FREE) instead of at once (MADV_DONTNEED, Go's
// default on Linux), by running the program again with
// GODEBUG=madvdontneed=0.
//
// Why: Go's background scavenger returns free heap pages beyond about
// 110% of what the heap used at the last collection. A process whose
// live heap is small next to what one compilation needs (a server with
// a few grammars cached, compiling a large schema) returns those pages
// between compilations and takes a page fault for each of them on the
// next large one. On the virtual machines this project is measured on a
// fault costs about 9 µs: in a run over the JSONSchemaBench sample, the
// 1% slowest convert+parse+compile took 27% of their time in the
// kernel (102,500 faults of 111,400 in all compilations). Pages given
// back with MADV_FREE stay mapped until the system needs the memory, so
// taking them again costs no fault. The price is what Go's runtime
// documents for the setting: the process's resident size as reported
// stays higher until the kernel reclaims the pages.
//
// The setting is read once, at process start, so it cannot be changed
// from inside a running program (it is not one of the settings a
// //go:debug line or go.mod may set either); Reexec runs the program
// anew with it. An explicit madvdontneed in GODEBUG, either value, is
// kept: GODEBUG=madvdontneed=1 turns this off.
//
// Pretouch goes one step further for the first growth of the heap: it
// touches heap pages at start and drops them, so that no compilation
// later faults them in (pages given back with MADV_FREE stay).
package madvfree

import (
	"os"
	"strings"
)

// Setting is the GODEBUG setting Reexec adds.
const Setting = "madvdontneed=0"

// madvSetting returns the value GODEBUG gives madvdontneed (the last
// one, as the runtime reads it) and whether it gives one.
func madvSetting(godebug string) (string, bool) {
	v, ok := "", false
	for _, f := range strings.Split(godebug, ",") {
		if k, val, _ := strings.Cut(f, "="); strings.TrimSpace(k) == "madvdontneed" {
			v, ok = val, true
		}
	}
	return v, ok
}

// godebugWith returns GODEBUG with Setting added, and false when GODEBUG
// already decides madvdontneed (then it is returned unchanged).
func godebugWith(godebug string) (string, bool) {
	if _, ok := madvSetting(godebug); ok {
		return godebug, false
	}
	if godebug == "" {
		return Setting, true
	}
	return godebug + "," + Setting, true
}

// Reexec replaces the process by the same program with the same
// arguments and environment, GODEBUG extended by Setting, unless
// GODEBUG already sets madvdontneed or the system is not Linux (Go
// uses MADV_FREE only there). It returns only when it does not run the
// program again: nil when nothing was to be done, else why the exec
// failed (the process then goes on with Go's default).
func Reexec() error {
	godebug, ok := godebugWith(os.Getenv("GODEBUG"))
	if !ok || !supported {
		return nil
	}
	return reexec(godebug)
}

// Mode names how the runtime gives free heap pages back to the system,
// as this process's GODEBUG decides it: "MADV_FREE" for madvdontneed=0,
// "MADV_DONTNEED" (Go's default) otherwise; "" where the choice does not
// exist (not Linux).
func Mode() string {
	if !supported {
		return ""
	}
	v, _ := madvSetting(os.Getenv("GODEBUG"))
	if v == "0" {
		return "MADV_FREE"
	}
	return "MADV_DONTNEED"
}
