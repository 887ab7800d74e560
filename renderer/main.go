// Command strata-helm-renderer renders Helm releases for strata, byte for
// byte as `helm template` of the same helm version renders them, without
// starting a process per release. strata starts it once per run, writes
// render requests to its standard input and reads responses from its standard
// output; README.md describes the protocol.
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("strata-helm-renderer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jobs := fs.Int("j", runtime.NumCPU(), "how many releases to render at once")
	timeout := fs.Duration("timeout", 120*time.Second, "deadline of a request that names none")
	abandoned := fs.Int("max-abandoned", 4, "renders past their deadline to leave running before exiting")
	entries := fs.Int("cache-charts", 64, "chart archives to keep unpacked in memory (0: none)")
	cacheMiB := fs.Int64("cache-mib", 256, "MiB of unpacked chart archives to keep in memory")
	version := fs.Bool("version", false, "print helm's build information and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || *jobs < 1 || *timeout <= 0 || *abandoned < 0 || *entries < 0 || *cacheMiB < 0 {
		fmt.Fprintln(stderr, "strata-helm-renderer: bad arguments (see -h)")
		return 2
	}
	if *version {
		fmt.Fprintln(stdout, helmBuild())
		return 0
	}
	if err := dieWithParent(); err != nil {
		fmt.Fprintf(stderr, "strata-helm-renderer: cannot tie to parent: %v\n", err)
	}
	prepareSDK(stderr)
	s := &server{
		jobs:         *jobs,
		timeout:      *timeout,
		maxAbandoned: *abandoned,
		helm:         helmBuild(),
		charts:       newChartCache(*entries, *cacheMiB<<20),
		render:       render,
		out:          newFrameWriter(stdout),
		log:          stderr,
		exit:         os.Exit,
		inflight:     map[string]bool{},
	}
	return s.serve(stdin)
}

// helmBuild is helm's build information as `helm version` prints it.
func helmBuild() string {
	return fmt.Sprintf("%#v", common.DefaultCapabilities.HelmVersion)
}

// prepareSDK makes sure helm's SDK can render from many goroutines at once,
// and sends its warnings to standard error as the binary does.
//
// Every client-only install appends the requested API versions to the list
// of the shared default capabilities (action.Install.RunWithContext). Helm
// v4.3.2 builds that list with no spare capacity, so each append copies; the
// list is clipped here so that this stays true whatever builds it, since two
// renders appending into one spare array would write over each other.
func prepareSDK(stderr io.Writer) {
	caps := common.DefaultCapabilities
	caps.APIVersions = slices.Clip(caps.APIVersions)
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}
