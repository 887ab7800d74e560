// Command strata-admission previews, for strata, what a cluster's admission
// would make of the objects one environment applies: Kubernetes' own
// PodSecurity admission on every pod (a Pod, or the pod a workload's
// template makes) and every Namespace, and Kubernetes' own
// ValidatingAdmissionPolicy admission on every object. strata writes one
// request (JSON) on its standard input and reads one response (JSON) on its
// standard output; README.md describes both.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("strata-admission", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.Bool("version", false, "print the protocol and the Kubernetes admission code version, and exit")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return 2
	}
	if *version {
		fmt.Fprintf(stdout, "strata-admission protocol=%d kubernetes=%s\n", Protocol, kubernetesVersion())
		return 0
	}
	// The informers' progress lines are no finding: the response says all.
	klog.SetLogger(logr.Discard())
	req, err := readRequest(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "strata-admission: %v\n", err)
		return 2
	}
	resp, err := judge(context.Background(), req)
	if err != nil {
		fmt.Fprintf(stderr, "strata-admission: %v\n", err)
		return 3
	}
	enc := json.NewEncoder(stdout)
	if err := enc.Encode(resp); err != nil {
		return 1
	}
	return 0
}

// judge runs both plugins over the objects of one request.
func judge(ctx context.Context, req *Request) (*Response, error) {
	c := newCluster(req.Objects)
	psa, err := newPodSecurity(req.PodSecurity, req.KubernetesVersion, c)
	if err != nil {
		return nil, err
	}
	resp := &Response{
		Protocol:    Protocol,
		Kubernetes:  kubernetesVersion(),
		PodSecurity: []PodVerdict{},
		Namespaces:  []NamespaceVerdict{},
		Policies:    []PolicyVerdict{},
	}
	var vap Response
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		policies(ctx, c, req.Username, &vap)
	}()
	psa.judge(ctx, c, req.Username, resp)
	wg.Wait()
	resp.Policies = append(resp.Policies, vap.Policies...)
	resp.Notes = append([]Note{}, c.notes...)
	return resp, nil
}

// kubernetesVersion is the version of k8s.io/apiserver this program is
// built with: the admission code that judges.
func kubernetesVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "k8s.io/apiserver" {
				return d.Version
			}
		}
	}
	return "unknown"
}
