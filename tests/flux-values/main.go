// Command flux-values prints the values helm-controller hands to Helm for
// the HelmRelease of a rendered component folder, computed by the function
// helm-controller itself calls, so that a test can see what survives the way
// Flux reads the values strata writes (a `null` above all).
//
// Usage:
//
//	flux-values FOLDER
//
// FOLDER is a rendered Flux component folder: its top-level `*.yaml` files
// hold one HelmRelease (helm.toolkit.fluxcd.io/v2) and the ConfigMaps and
// Secrets its `spec.valuesFrom` names; other kinds are passed over.
//
// On success the merged values are printed as one line of JSON on stdout,
// with a null value printed as `null`. Exit status: 0 printed; 1
// helm-controller refuses the values (a missing reference, a key that is
// not YAML), so the release would fail; 2 usage error or a folder that is
// not a rendered component folder. The reason is on stderr.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fluxcd/pkg/chartutil"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

const usage = "usage: flux-values FOLDER"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	found, err := readFolder(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "flux-values: %v\n", err)
		return 2
	}
	values, err := mergedValues(context.Background(), found, stderrLogger(stderr))
	if err != nil {
		fmt.Fprintf(stderr, "flux-values: helm-controller refuses the values of HelmRelease %s/%s: %v\n",
			found.release.Namespace, found.release.Name, err)
		return 1
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(values); err != nil {
		fmt.Fprintf(stderr, "flux-values: the merged values cannot be written as JSON: %v\n", err)
		return 2
	}
	if _, err := stdout.Write(out.Bytes()); err != nil {
		fmt.Fprintf(stderr, "flux-values: %v\n", err)
		return 2
	}
	return 0
}

// mergedValues serves the folder's ConfigMaps and Secrets from a fake
// Kubernetes client and asks helm-controller's merge for the release's
// values, with the arguments helm-controller v1.6.3 passes
// (internal/controller/helmrelease_controller.go, the call of
// chartutil.ChartValuesFromReferences): the release's namespace, its inline
// `spec.values` through the API type's own GetValues, and its
// `spec.valuesFrom` in order.
func mergedValues(ctx context.Context, found *folder, log logr.Logger) (map[string]any, error) {
	client := fake.NewClientBuilder().WithObjects(found.sources...).Build()
	hr := found.release
	values, err := chartutil.ChartValuesFromReferences(ctx, log, client, hr.Namespace,
		hr.GetValues(), hr.Spec.ValuesFrom...)
	if err != nil {
		return nil, err
	}
	return values.AsMap(), nil
}

// stderrLogger writes what helm-controller logs while merging (an optional
// reference it skipped) to stderr, so it is seen but never mixed into the
// JSON.
func stderrLogger(stderr io.Writer) logr.Logger {
	return funcr.New(func(prefix, args string) {
		fmt.Fprintf(stderr, "flux-values: helm-controller: %s\n", args)
	}, funcr.Options{})
}
