//go:build !linux

package madvfree

const supported = false

func reexec(string) error { return nil }
