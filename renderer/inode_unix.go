//go:build unix

package main

import (
	"os"
	"syscall"
)

// inodeOf tells apart two files written at the same path with the same size
// and time (a chart store that replaces archives by renaming gives each a new
// inode).
func inodeOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
