package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Protocol is the version of the request and response this program speaks.
const Protocol = 1

// maxRequest bounds what the program reads from its standard input.
const maxRequest = 512 << 20

// Request is what strata sends on standard input: one environment.
type Request struct {
	Protocol int `json:"protocol"`
	// Username is who applies the objects (the GitOps engine's service
	// account), as PodSecurity exemptions and CEL's request.userInfo see it.
	Username string `json:"username"`
	// PodSecurity is the cluster-wide PodSecurity admission configuration:
	// a PodSecurityConfiguration object, as a cluster's admission
	// configuration file holds it. Absent: Kubernetes' own defaults
	// (privileged at every mode, no exemptions).
	PodSecurity json.RawMessage `json:"pod_security,omitempty"`
	// KubernetesVersion is the cluster's version (`v1.35.0`): what the
	// PodSecurity version `latest` means there.
	KubernetesVersion string `json:"kubernetes_version,omitempty"`
	// Objects are every object the environment applies, as JSON.
	Objects []map[string]any `json:"objects"`
}

// Response is what the program writes on standard output.
type Response struct {
	Protocol int `json:"protocol"`
	// Kubernetes is the version of Kubernetes' admission code that judged.
	Kubernetes  string             `json:"kubernetes"`
	PodSecurity []PodVerdict       `json:"pod_security"`
	Namespaces  []NamespaceVerdict `json:"namespaces"`
	Policies    []PolicyVerdict    `json:"policies"`
	// Notes are what could not be judged, and why.
	Notes []Note `json:"notes"`
}

// PodVerdict is PodSecurity admission's answer for one pod: a Pod object,
// or the pod a workload's template makes.
type PodVerdict struct {
	// Object is the index of the object in the request.
	Object int `json:"object"`
	// Template is true when the pod is made from a workload's template.
	Template bool `json:"template"`
	// Namespace is the pod's namespace, and Known whether the request holds
	// that Namespace object (else it is judged as a namespace without labels).
	Namespace string `json:"namespace"`
	Known     bool   `json:"known"`
	// Exempt names the exemption that admitted the pod unjudged:
	// "namespace", "username" or "runtimeClass".
	Exempt string `json:"exempt,omitempty"`
	// Enforce, Warn and Audit are the level:version of each mode.
	Enforce string `json:"enforce"`
	Warn    string `json:"warn"`
	Audit   string `json:"audit"`
	// Allowed is the enforce decision; Message the refusal's text.
	Allowed  bool     `json:"allowed"`
	Message  string   `json:"message,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// AuditViolation is the audit annotation's text.
	AuditViolation string `json:"audit_violation,omitempty"`
	// Checks are the failed checks of each mode that failed.
	Checks []CheckFailure `json:"checks,omitempty"`
}

// CheckFailure is one failed PodSecurity check.
type CheckFailure struct {
	// Mode is enforce, warn or audit.
	Mode   string `json:"mode"`
	ID     string `json:"id"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// NamespaceVerdict is PodSecurity admission's answer for a Namespace
// object, when it refuses its labels.
type NamespaceVerdict struct {
	Object  int    `json:"object"`
	Message string `json:"message"`
}

// PolicyVerdict is one ValidatingAdmissionPolicy binding's decision on one
// object (or the pod a workload's template makes).
type PolicyVerdict struct {
	Object   int    `json:"object"`
	Template bool   `json:"template"`
	Policy   string `json:"policy"`
	Binding  string `json:"binding"`
	// Action is Deny, Warn or Audit.
	Action  string `json:"action"`
	Message string `json:"message"`
}

// Note says what could not be judged.
type Note struct {
	// Object is the index of the object concerned, or -1.
	Object  int    `json:"object"`
	Message string `json:"message"`
}

func readRequest(r io.Reader) (*Request, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxRequest+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read the request: %w", err)
	}
	if len(data) > maxRequest {
		return nil, fmt.Errorf("the request is over %d MiB", maxRequest>>20)
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("the request is not valid JSON: %w", err)
	}
	if req.Protocol != Protocol {
		return nil, fmt.Errorf("the request speaks protocol %d; this program speaks %d", req.Protocol, Protocol)
	}
	return &req, nil
}
