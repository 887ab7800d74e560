package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// dieWithParent asks the kernel to kill this process when the process that
// started it ends, so that a renderer never outlives a killed strata. The
// signal is tied to the thread that started this process: a client should
// start the renderer from a thread that lives as long as it needs the
// renderer.
func dieWithParent() error {
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
