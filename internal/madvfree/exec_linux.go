package madvfree

import (
	"os"
	"strings"
	"syscall"
)

const supported = true

// reexec runs the running program again with GODEBUG set to godebug.
func reexec(godebug string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	env := os.Environ()
	kept := env[:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GODEBUG=") {
			kept = append(kept, kv)
		}
	}
	return syscall.Exec(exe, os.Args, append(kept, "GODEBUG="+godebug))
}
