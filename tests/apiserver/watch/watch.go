// Package watch ends a test server when the test that started it goes
// away: the test holds the server's standard input open, and when that
// pipe closes (the test finished, panicked or was killed) the server exits.
package watch

import (
	"io"
	"os"
)

// Variable is the environment variable that turns the watch on; a server
// started by hand, with a terminal on its standard input, runs as usual.
const Variable = "STRATA_TEST_EXIT_WITH_STDIN"

// ExitWhenStdinCloses exits the process once standard input reaches its
// end, when Variable is set to 1.
func ExitWhenStdinCloses() {
	if os.Getenv(Variable) != "1" {
		return
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
}
