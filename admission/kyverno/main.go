// Command strata-kyverno runs, for strata, the validate rules of the Kyverno
// ClusterPolicies and Policies one environment applies on every object it
// applies, with Kyverno's own engine, as Kyverno's admission webhook would
// when the GitOps engine creates them. strata writes one request (JSON) on
// its standard input and reads one response (JSON) on its standard output;
// ../README.md describes both.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"sort"

	"github.com/go-logr/logr"
	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	kyvernov2 "github.com/kyverno/kyverno/api/kyverno/v2"
	"github.com/kyverno/kyverno/pkg/config"
	"github.com/kyverno/kyverno/pkg/engine"
	engineapi "github.com/kyverno/kyverno/pkg/engine/api"
	"github.com/kyverno/kyverno/pkg/engine/factories"
	"github.com/kyverno/kyverno/pkg/engine/jmespath"
	"github.com/kyverno/kyverno/pkg/exceptions"
	imageverifycache "github.com/kyverno/kyverno/pkg/image/verification/cache"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
)

// Protocol is the version of the request and response this program speaks.
const Protocol = 1

const maxRequest = 512 << 20

// Request is what strata sends: one environment's objects.
type Request struct {
	Protocol int `json:"protocol"`
	// Username is who applies the objects, as request.userInfo shows it.
	Username string           `json:"username"`
	Objects  []map[string]any `json:"objects"`
}

// Response is what the program writes.
type Response struct {
	Protocol int      `json:"protocol"`
	Kyverno  string   `json:"kyverno"`
	Results  []Result `json:"results"`
	Notes    []Note   `json:"notes"`
}

// Result is one validate rule that failed (or could not run) on one object.
type Result struct {
	Object int    `json:"object"`
	Policy string `json:"policy"`
	// Namespace of a Policy; empty for a ClusterPolicy.
	Namespace string `json:"namespace,omitempty"`
	Rule      string `json:"rule"`
	// Status is fail or error, as Kyverno reports it.
	Status string `json:"status"`
	// Action is Enforce (the object is refused) or Audit (it is admitted
	// and reported), as Kyverno resolves it for the rule.
	Action  string `json:"action"`
	Message string `json:"message"`
	// Path is the field a pattern failed at, when Kyverno names one.
	Path string `json:"path,omitempty"`
}

// Note says what could not be judged.
type Note struct {
	Object  int    `json:"object"`
	Message string `json:"message"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("strata-kyverno", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.Bool("version", false, "print the protocol and Kyverno's version, and exit")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return 2
	}
	if *version {
		fmt.Fprintf(stdout, "strata-kyverno protocol=%d kyverno=%s\n", Protocol, kyvernoVersion())
		return 0
	}
	klog.SetLogger(logr.Discard())
	data, err := io.ReadAll(io.LimitReader(stdin, maxRequest+1))
	if err != nil || len(data) > maxRequest {
		fmt.Fprintf(stderr, "strata-kyverno: the request could not be read whole (%v)\n", err)
		return 2
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		fmt.Fprintf(stderr, "strata-kyverno: the request is not valid JSON: %v\n", err)
		return 2
	}
	if req.Protocol != Protocol {
		fmt.Fprintf(stderr, "strata-kyverno: the request speaks protocol %d; this program speaks %d\n", req.Protocol, Protocol)
		return 2
	}
	if err := json.NewEncoder(stdout).Encode(judge(context.Background(), &req)); err != nil {
		return 1
	}
	return 0
}

func kyvernoVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/kyverno/kyverno" {
				return d.Version
			}
		}
	}
	return "unknown"
}

// noExceptions: PolicyExceptions are not read (a preview names them in a
// note instead).
type noExceptions struct{}

func (noExceptions) List(labels.Selector) ([]*kyvernov2.PolicyException, error) { return nil, nil }

var failedAt = regexp.MustCompile(`failed at path (/\S*)`)

// The label the API server gives every namespace, its own name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

func judge(ctx context.Context, req *Request) *Response {
	resp := &Response{Protocol: Protocol, Kyverno: kyvernoVersion(), Results: []Result{}, Notes: []Note{}}
	objects := make([]unstructured.Unstructured, len(req.Objects))
	nsLabels := map[string]map[string]string{}
	var policies []kyvernov1.PolicyInterface
	for i, o := range req.Objects {
		u := unstructured.Unstructured{Object: o}
		objects[i] = u
		gvk := u.GroupVersionKind()
		switch {
		case gvk.Group == "" && gvk.Kind == "Namespace":
			l := map[string]string{}
			for k, v := range u.GetLabels() {
				l[k] = v
			}
			l[namespaceNameLabel] = u.GetName()
			nsLabels[u.GetName()] = l
		case gvk.Group == "kyverno.io" && gvk.Kind == "ClusterPolicy":
			var p kyvernov1.ClusterPolicy
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o, &p); err != nil {
				resp.Notes = append(resp.Notes, Note{i, fmt.Sprintf("the ClusterPolicy could not be read: %v", err)})
				continue
			}
			policies = append(policies, &p)
		case gvk.Group == "kyverno.io" && gvk.Kind == "Policy":
			var p kyvernov1.Policy
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o, &p); err != nil {
				resp.Notes = append(resp.Notes, Note{i, fmt.Sprintf("the Policy could not be read: %v", err)})
				continue
			}
			policies = append(policies, &p)
		case gvk.Group == "kyverno.io" && gvk.Kind == "PolicyException",
			gvk.Group == "policies.kyverno.io":
			resp.Notes = append(resp.Notes, Note{i, fmt.Sprintf("%s %s is not run: strata runs the validate rules of ClusterPolicies and Policies only", gvk.Kind, u.GetName())})
		}
	}
	cfg := config.NewDefaultConfiguration(false)
	jp := jmespath.New(cfg)
	offline := false
	eng := engine.NewEngine(cfg, jp, nil, factories.DefaultRegistryClientFactory(nil, nil),
		imageverifycache.DisabledImageVerifyCache(), factories.DefaultContextLoaderFactory(nil),
		exceptions.New(noExceptions{}), &offline)
	who := &kyvernov2.RequestInfo{AdmissionUserInfo: authenticationv1.UserInfo{Username: req.Username}}
	for _, p := range policies {
		if !p.GetSpec().HasValidate() {
			continue
		}
		for i := range objects {
			u := objects[i]
			// A Policy judges only what is created in its own namespace.
			if p.IsNamespaced() && u.GetNamespace() != p.GetNamespace() {
				continue
			}
			resp.Results = append(resp.Results, validate(ctx, eng, jp, cfg, p, u, i, nsLabels, who, resp)...)
		}
	}
	sort.SliceStable(resp.Results, func(a, b int) bool { return resp.Results[a].Object < resp.Results[b].Object })
	return resp
}

func validate(
	ctx context.Context,
	eng engineapi.Engine,
	jp jmespath.Interface,
	cfg config.Configuration,
	p kyvernov1.PolicyInterface,
	u unstructured.Unstructured,
	i int,
	nsLabels map[string]map[string]string,
	who *kyvernov2.RequestInfo,
	resp *Response,
) []Result {
	pc, err := engine.NewPolicyContext(jp, u, kyvernov1.Create, who, cfg)
	if err != nil {
		resp.Notes = append(resp.Notes, Note{i, fmt.Sprintf("Kyverno could not take the object: %v", err)})
		return nil
	}
	labels := nsLabels[u.GetNamespace()]
	if labels == nil && u.GetNamespace() != "" {
		labels = map[string]string{namespaceNameLabel: u.GetNamespace()}
	}
	pc = pc.WithPolicy(p).WithNamespaceLabels(labels).WithResourceKind(u.GroupVersionKind(), "")
	er := eng.Validate(ctx, pc)
	var out []Result
	for _, rr := range er.PolicyResponse.Rules {
		status := rr.Status()
		if status != engineapi.RuleStatusFail && status != engineapi.RuleStatusError {
			continue
		}
		// The rule's own action, as Kyverno resolves it to block or not:
		// the response narrowed to this one rule.
		one := er
		one.PolicyResponse.Rules = []engineapi.RuleResponse{rr}
		action := "Audit"
		if status == engineapi.RuleStatusError || one.HasEnforcedFailure() {
			action = "Enforce"
		}
		if status == engineapi.RuleStatusError && !p.GetSpec().HasValidateEnforce() {
			action = "Audit"
		}
		r := Result{Object: i, Policy: p.GetName(), Rule: rr.Name(), Status: string(status), Action: action, Message: rr.Message()}
		if p.IsNamespaced() {
			r.Namespace = p.GetNamespace()
		}
		if m := failedAt.FindStringSubmatch(rr.Message()); m != nil {
			r.Path = m[1]
		}
		out = append(out, r)
	}
	return out
}
