//go:build !linux

package main

// dieWithParent has no portable equivalent outside Linux; there the renderer
// ends when its standard input closes, which a parent's end also brings.
func dieWithParent() error { return nil }
