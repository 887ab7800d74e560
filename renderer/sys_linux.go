package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// parentDeathErr is why the kernel could not be asked to end this process
// with its parent.
var parentDeathErr error

// The request is made while packages initialise: Go runs initialisation on
// the main thread, which lives as long as the process, and the kernel sends
// the signal only while the thread that asked for it is alive.
func init() {
	parentDeathErr = tieToParent()
}

// tieToParent asks the kernel to kill this process when the process that
// started it ends, so that a renderer never outlives a killed strata. The
// kernel ties this to the thread of the parent that started the renderer: a
// client should start the renderer from a thread that lives as long as it
// needs the renderer.
func tieToParent() error {
	parent := os.Getppid()
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return err
	}
	// The parent may have ended before the request took effect.
	if os.Getppid() != parent {
		os.Exit(1)
	}
	return nil
}

// dieWithParent reports whether the process is tied to its parent.
func dieWithParent() error { return parentDeathErr }
