//go:build !llamacpp

package main

// llamaBuild reports whether the tests (and the binary they build) have
// llama.cpp linked in.
const llamaBuild = false
