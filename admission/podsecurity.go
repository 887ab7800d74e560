package main

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	psaadmission "k8s.io/pod-security-admission/admission"
	psaapi "k8s.io/pod-security-admission/admission/api"
	"k8s.io/pod-security-admission/admission/api/load"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/metrics"
	"k8s.io/pod-security-admission/policy"
)

// podSecurity is Kubernetes' PodSecurity admission plugin, configured as
// the cluster's admission configuration file configures it, over the
// namespaces of one environment.
type podSecurity struct {
	admission *psaadmission.Admission
	// single holds one evaluator per check, to name the check behind each
	// failure the plugin's own evaluator reports.
	single map[string]policy.Evaluator
}

func newPodSecurity(config []byte, kubeVersion string, c *cluster) (*podSecurity, error) {
	var cfg *psaapi.PodSecurityConfiguration
	var err error
	if len(config) == 0 || string(config) == "null" {
		// What the API server runs without a configuration file: every
		// mode at privileged:latest, nothing exempt.
		cfg, err = load.LoadFromData(nil)
	} else {
		cfg, err = load.LoadFromData(config)
	}
	if err != nil {
		return nil, fmt.Errorf("the PodSecurity configuration is refused by Kubernetes' own loader: %w", err)
	}
	var emulation *api.Version
	if kubeVersion != "" {
		v, err := api.ParseVersion(majorMinor(kubeVersion))
		if err != nil {
			return nil, fmt.Errorf("kubernetes_version %q: %w", kubeVersion, err)
		}
		emulation = &v
	}
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), emulation)
	if err != nil {
		return nil, err
	}
	single := map[string]policy.Evaluator{}
	for _, check := range policy.DefaultChecks() {
		e, err := policy.NewEvaluator([]policy.Check{check}, emulation)
		if err != nil {
			return nil, err
		}
		single[string(check.ID)] = e
	}
	a := &psaadmission.Admission{
		Configuration:    cfg,
		Evaluator:        evaluator,
		Metrics:          noMetrics{},
		PodSpecExtractor: psaadmission.DefaultPodSpecExtractor{},
		NamespaceGetter:  namespaceGetter{c},
		PodLister:        noPods{},
	}
	if err := a.CompleteConfiguration(); err != nil {
		return nil, err
	}
	if err := a.ValidateConfiguration(); err != nil {
		return nil, fmt.Errorf("the PodSecurity configuration is refused by Kubernetes' own validation: %w", err)
	}
	return &podSecurity{admission: a, single: single}, nil
}

// majorMinor is `v1.35` of `v1.35.0`.
func majorMinor(v string) string {
	v = strings.TrimPrefix(v, "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) >= 2 {
		return "v" + parts[0] + "." + parts[1]
	}
	return "v" + v
}

type noMetrics struct{}

func (noMetrics) RecordEvaluation(metrics.Decision, api.LevelVersion, metrics.Mode, api.Attributes) {}
func (noMetrics) RecordExemption(api.Attributes)                                                    {}
func (noMetrics) RecordError(bool, api.Attributes)                                                  {}

// noPods: a preview creates namespaces empty, so a namespace's new labels
// have no running pods to warn about.
type noPods struct{}

func (noPods) ListPods(context.Context, string) ([]*corev1.Pod, error) { return nil, nil }

type namespaceGetter struct{ c *cluster }

func (g namespaceGetter) GetNamespace(_ context.Context, name string) (*corev1.Namespace, error) {
	if ns, ok := g.c.namespaces[name]; ok {
		return ns, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
}

// judgePods asks the plugin about every pod the objects make, and every
// Namespace's labels, as the API server asks it when each is created.
func (p *podSecurity) judge(ctx context.Context, c *cluster, username string, resp *Response) {
	for i, u := range c.objects {
		gvk := u.GroupVersionKind()
		if gvk.Group == "" && gvk.Kind == "Namespace" {
			p.judgeNamespace(ctx, c, i, username, resp)
			continue
		}
		pd, template, err := pod(u)
		if err != nil {
			c.note(i, "its pod template could not be read as Kubernetes reads it: %v", err)
			continue
		}
		if pd == nil {
			continue
		}
		resp.PodSecurity = append(resp.PodSecurity, p.judgePod(ctx, c, i, template, pd, username))
	}
}

func (p *podSecurity) judgeNamespace(ctx context.Context, c *cluster, i int, username string, resp *Response) {
	u := c.objects[i]
	ns, ok := c.namespaces[u.GetName()]
	if !ok {
		return
	}
	attrs := &api.AttributesRecord{
		Name:      ns.Name,
		Kind:      corev1.SchemeGroupVersion.WithKind("Namespace"),
		Resource:  corev1.SchemeGroupVersion.WithResource("namespaces"),
		Operation: admissionv1.Create,
		Object:    ns,
		Username:  username,
	}
	r := p.admission.Validate(ctx, attrs)
	if !r.Allowed {
		resp.Namespaces = append(resp.Namespaces, NamespaceVerdict{Object: i, Message: resultMessage(r)})
	}
}

func (p *podSecurity) judgePod(ctx context.Context, c *cluster, i int, template bool, pd *corev1.Pod, username string) PodVerdict {
	v := PodVerdict{Object: i, Template: template, Namespace: pd.Namespace, Known: c.known[pd.Namespace]}
	var labels map[string]string
	if ns, ok := c.namespaces[pd.Namespace]; ok {
		labels = ns.Labels
	}
	nsPolicy, _ := p.admission.PolicyToEvaluate(labels)
	v.Enforce, v.Warn, v.Audit = nsPolicy.Enforce.String(), nsPolicy.Warn.String(), nsPolicy.Audit.String()
	attrs := &api.AttributesRecord{
		Name:      pd.Name,
		Namespace: pd.Namespace,
		Kind:      corev1.SchemeGroupVersion.WithKind("Pod"),
		Resource:  podsResource,
		Operation: admissionv1.Create,
		Object:    runtime.Object(pd),
		Username:  username,
	}
	r := p.admission.Validate(ctx, attrs)
	v.Allowed = r.Allowed
	v.Exempt = r.AuditAnnotations[api.ExemptionReasonAnnotationKey]
	if !r.Allowed {
		v.Message = resultMessage(r)
		v.Checks = append(v.Checks, p.failures("enforce", nsPolicy.Enforce, &pd.ObjectMeta, &pd.Spec)...)
	}
	v.Warnings = r.Warnings
	if len(r.Warnings) > 0 {
		v.Checks = append(v.Checks, p.failures("warn", nsPolicy.Warn, &pd.ObjectMeta, &pd.Spec)...)
	}
	if a := r.AuditAnnotations[api.AuditViolationsAnnotationKey]; a != "" {
		v.AuditViolation = a
		v.Checks = append(v.Checks, p.failures("audit", nsPolicy.Audit, &pd.ObjectMeta, &pd.Spec)...)
	}
	return v
}

// failures are the checks the plugin's evaluator fails at a level, each
// named by the check that reports it: a check's result counts when the
// whole evaluator reports the same failure (a restricted check that
// replaces a baseline one leaves the baseline one out).
func (p *podSecurity) failures(mode string, lv api.LevelVersion, m *metav1.ObjectMeta, spec *corev1.PodSpec) []CheckFailure {
	all := map[string]bool{}
	for _, r := range p.admission.Evaluator.EvaluatePod(lv, m, spec) {
		if !r.Allowed {
			all[r.ForbiddenReason+"\x00"+r.ForbiddenDetail] = true
		}
	}
	var out []CheckFailure
	for _, check := range policy.DefaultChecks() {
		for _, r := range p.single[string(check.ID)].EvaluatePod(lv, m, spec) {
			if !r.Allowed && all[r.ForbiddenReason+"\x00"+r.ForbiddenDetail] {
				out = append(out, CheckFailure{Mode: mode, ID: string(check.ID), Reason: r.ForbiddenReason, Detail: r.ForbiddenDetail})
			}
		}
	}
	return out
}

func resultMessage(r *admissionv1.AdmissionResponse) string {
	if r.Result != nil {
		return r.Result.Message
	}
	return "refused"
}
