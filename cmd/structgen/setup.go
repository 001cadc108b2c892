package main

import (
	"fmt"

	"github.com/structgen/structgen/internal/llamasetup"
)

type setupCmd struct {
	NoInstall bool `help:"Do not install missing system headers (apt-get); report them as an error."`
	Portable  bool `help:"Build llama.cpp for any CPU of the architecture (no -march=native): several times slower."`
}

// Run prepares the machine for building with the llamacpp tag and prints
// the CGO_CPPFLAGS that build needs (see package llamasetup); progress
// goes to stderr.
func (c *setupCmd) Run(e *env) error {
	flags, err := llamasetup.Run(e.ctx, llamasetup.Options{NoInstall: c.NoInstall, Portable: c.Portable, Log: e.stderr})
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	_, err = fmt.Fprintln(e.stdout, flags)
	return err
}
