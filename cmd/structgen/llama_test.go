//go:build llamacpp

package main

const llamaBuild = true
