// Command substrate-check judges the substrate files strata writes with the
// substrates' own code: a Talos machine-configuration patch with Talos'
// machinery, a kind cluster config with kind's config package.
//
// Usage:
//
//	substrate-check talos-patch FILE...
//	substrate-check kind-config FILE...
//
// Each invalid file prints one `FILE: reason` line per reason on stdout.
// Exit status: 0 every file is valid, 1 some file is invalid, 2 usage error.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/siderolabs/talos/pkg/machinery/constants"
)

const usage = `usage: substrate-check talos-patch FILE...
       substrate-check kind-config FILE...`

// maxFileBytes bounds how much of one file is read: Talos' own API takes no
// message larger than this, so no larger machine config can reach a node; no
// kind config comes near it.
const maxFileBytes = constants.GRPCMaxMessageSize

// checker judges one file's bytes and returns every reason it is invalid.
type checker func(raw []byte) []string

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	var check checker
	switch args[0] {
	case "talos-patch":
		c, err := newTalosChecker()
		if err != nil {
			fmt.Fprintf(stderr, "substrate-check: cannot build the baseline Talos config: %v\n", err)
			return 2
		}
		check = c
	case "kind-config":
		if err := kindSelfCheck(); err != nil {
			fmt.Fprintf(stderr, "substrate-check: %v\n", err)
			return 2
		}
		check = checkKindConfig
	default:
		fmt.Fprintf(stderr, "substrate-check: unknown subcommand %q\n%s\n", args[0], usage)
		return 2
	}
	for _, path := range args[1:] {
		if strings.HasPrefix(path, "-") {
			fmt.Fprintf(stderr, "substrate-check: unknown flag %q (no flags are taken)\n%s\n", path, usage)
			return 2
		}
	}
	status := 0
	for _, path := range args[1:] {
		reasons := judge(path, check)
		for _, reason := range reasons {
			fmt.Fprintf(stdout, "%s: %s\n", path, reason)
		}
		if len(reasons) > 0 {
			status = 1
		}
	}
	return status
}

// judge reads one file, within maxFileBytes, and hands it to check.
func judge(path string, check checker) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{oneLine(err.Error())}
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return []string{oneLine(err.Error())}
	}
	if len(raw) > maxFileBytes {
		return []string{fmt.Sprintf("larger than %d bytes (Talos' API message limit), not read", maxFileBytes)}
	}
	return check(raw)
}

// reasons flattens an error tree (errors.Join, hashicorp multierror, kind's
// aggregate) into one single-line message per leaf error.
func reasons(err error) []string {
	if err == nil {
		return nil
	}
	var children []error
	switch e := err.(type) {
	case interface{ WrappedErrors() []error }:
		children = e.WrappedErrors()
	case interface{ Errors() []error }:
		children = e.Errors()
	case interface{ Unwrap() []error }:
		children = e.Unwrap()
	}
	if len(children) == 0 {
		// A wrapper such as "v1alpha1.Config: %w" around a list: keep its
		// prefix on each of the list's reasons.
		if inner := errors.Unwrap(err); inner != nil {
			if prefix, ok := strings.CutSuffix(err.Error(), inner.Error()); ok {
				if leaves := reasons(inner); len(leaves) > 1 || leaves[0] != oneLine(inner.Error()) {
					return prefixed(oneLine(prefix)+" ", leaves)
				}
			}
		}
		return []string{oneLine(err.Error())}
	}
	var out []string
	for _, child := range children {
		out = append(out, reasons(child)...)
	}
	return out
}

// maxReasonBytes bounds one reason: an unknown-key error quotes the YAML it
// could not place, which for an inline manifest can be the whole manifest.
const maxReasonBytes = 400

// oneLine folds a message onto one line, so each reason is one output line,
// and cuts it at maxReasonBytes.
func oneLine(msg string) string {
	line := strings.Join(strings.Fields(msg), " ")
	if len(line) <= maxReasonBytes {
		return line
	}
	cut := maxReasonBytes
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut] + " …"
}

// prefixed puts prefix before each reason.
func prefixed(prefix string, reasons []string) []string {
	out := make([]string, len(reasons))
	for i, reason := range reasons {
		out[i] = prefix + reason
	}
	return out
}
