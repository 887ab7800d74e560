package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/apiserver/pkg/warning"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/component-base/featuregate"
)

var (
	vapKind     = admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy")
	bindingKind = admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding")
)

// How long the plugin's informers may take to fill from the objects.
const syncTimeout = 30 * time.Second

// policies runs Kubernetes' ValidatingAdmissionPolicy admission plugin on
// every object, once per binding, so that every binding's decision shows
// (the plugin reports only the first refusal of a request).
func policies(ctx context.Context, c *cluster, username string, resp *Response) {
	var vaps []*admissionregistrationv1.ValidatingAdmissionPolicy
	var bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for i, u := range c.objects {
		gvk := u.GroupVersionKind()
		switch {
		case gvk == vapKind:
			var p admissionregistrationv1.ValidatingAdmissionPolicy
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
				c.note(i, "the ValidatingAdmissionPolicy could not be read: %v", err)
				continue
			}
			defaultPolicy(&p)
			vaps = append(vaps, &p)
		case gvk == bindingKind:
			var b admissionregistrationv1.ValidatingAdmissionPolicyBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil {
				c.note(i, "the ValidatingAdmissionPolicyBinding could not be read: %v", err)
				continue
			}
			defaultBinding(&b)
			bindings = append(bindings, &b)
		case gvk.Group == vapKind.Group && (gvk.Kind == vapKind.Kind || gvk.Kind == bindingKind.Kind):
			c.note(i, "%s %s is not judged: only admissionregistration.k8s.io/v1 policies and bindings are", gvk.Kind, gvk.Version)
		}
	}
	byName := map[string]*admissionregistrationv1.ValidatingAdmissionPolicy{}
	for _, p := range vaps {
		byName[p.Name] = p
	}
	type run struct {
		policy  *admissionregistrationv1.ValidatingAdmissionPolicy
		binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	}
	var runs []run
	bound := map[string]bool{}
	for _, b := range bindings {
		p, ok := byName[b.Spec.PolicyName]
		if !ok {
			c.note(indexOf(c, bindingKind, b.Name), "ValidatingAdmissionPolicyBinding %s names policy %q, which the environment does not apply: it judges nothing", b.Name, b.Spec.PolicyName)
			continue
		}
		bound[p.Name] = true
		runs = append(runs, run{p, b})
	}
	for _, p := range vaps {
		if !bound[p.Name] {
			c.note(indexOf(c, vapKind, p.Name), "ValidatingAdmissionPolicy %s has no binding in the environment: it judges nothing", p.Name)
		}
	}
	results := make([][]PolicyVerdict, len(runs))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for k, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[k], errs[k] = judgeBinding(ctx, c, r.policy, r.binding, username)
		}()
	}
	wg.Wait()
	for k, r := range runs {
		if errs[k] != nil {
			c.note(indexOf(c, bindingKind, r.binding.Name), "ValidatingAdmissionPolicyBinding %s could not be judged: %v", r.binding.Name, errs[k])
		}
		resp.Policies = append(resp.Policies, results[k]...)
	}
}

func indexOf(c *cluster, gvk schema.GroupVersionKind, name string) int {
	for i, u := range c.objects {
		if u.GroupVersionKind() == gvk && u.GetName() == name {
			return i
		}
	}
	return -1
}

// noOpinion answers every authorization check of a policy's CEL
// `authorizer` with no opinion: a preview knows no RBAC of the cluster.
func noOpinion(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, "a preview knows no RBAC", nil
}

// judgeBinding sets up the plugin as the API server does (its initializer,
// informers over the namespaces, the policy and its binding, and the
// binding's parameters), then admits every object.
func judgeBinding(
	ctx context.Context,
	c *cluster,
	p *admissionregistrationv1.ValidatingAdmissionPolicy,
	b *admissionregistrationv1.ValidatingAdmissionPolicyBinding,
	username string,
) ([]PolicyVerdict, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	native := []runtime.Object{p.DeepCopy(), b.DeepCopy()}
	for _, ns := range c.namespaceList() {
		native = append(native, ns.DeepCopy())
	}
	client := fake.NewClientset(native...)
	factory := informers.NewSharedInformerFactory(client, 0)
	mapper, dynamic, err := paramsClient(c, p)
	if err != nil {
		return nil, err
	}
	plugin, err := validating.NewPlugin(nil)
	if err != nil {
		return nil, err
	}
	initializer.New(
		client,
		dynamic,
		factory,
		authorizer.AuthorizerFunc(noOpinion),
		featuregate.NewFeatureGate(),
		compatibility.DefaultBuildEffectiveVersion(),
		ctx.Done(),
		mapper,
	).Initialize(plugin)
	if err := plugin.ValidateInitialization(); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	synced, syncCancel := context.WithTimeout(ctx, syncTimeout)
	defer syncCancel()
	for _, ok := range factory.WaitForCacheSync(synced.Done()) {
		if !ok {
			return nil, errors.New("the plugin's informers did not fill in time")
		}
	}
	if !plugin.WaitForReady() {
		return nil, errors.New("the plugin did not become ready in time")
	}
	interfaces := admission.NewObjectInterfacesFromScheme(unstructuredScheme())
	var out []PolicyVerdict
	who := &user.DefaultInfo{Name: username}
	for i, u := range c.objects {
		out = append(out, admit(ctx, c, plugin, interfaces, i, false, u, who)...)
		if pd, template, err := pod(u); err == nil && pd != nil && template {
			content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pd)
			if err != nil {
				continue
			}
			out = append(out, admit(ctx, c, plugin, interfaces, i, true, &unstructured.Unstructured{Object: content}, who)...)
		}
	}
	for k := range out {
		out[k].Policy, out[k].Binding = p.Name, b.Name
	}
	return out, nil
}

// unstructuredScheme converts nothing: objects reach the plugin as they
// are written, in the version they are written in.
func unstructuredScheme() *runtime.Scheme {
	return runtime.NewScheme()
}

// recorder keeps the warnings and audit annotations of one request.
type recorder struct {
	admission.Attributes
	mu       sync.Mutex
	warnings []string
	audit    map[string]string
}

func (r *recorder) AddWarning(_, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, text)
}

func (r *recorder) AddAnnotation(key, value string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.audit == nil {
		r.audit = map[string]string{}
	}
	r.audit[key] = value
	return nil
}

func (r *recorder) AddAnnotationWithLevel(key, value string, _ auditinternal.Level) error {
	return r.AddAnnotation(key, value)
}

// admit creates one object through the plugin and reads its decision.
func admit(
	ctx context.Context,
	c *cluster,
	plugin *validating.Plugin,
	interfaces admission.ObjectInterfaces,
	i int,
	template bool,
	u *unstructured.Unstructured,
	who user.Info,
) []PolicyVerdict {
	gvk := u.GroupVersionKind()
	attrs := admission.NewAttributesRecord(u, nil, gvk, u.GetNamespace(), u.GetName(), c.resource(gvk), "", admission.Create, nil, false, who)
	rec := &recorder{Attributes: attrs}
	err := plugin.Validate(warning.WithWarningRecorder(ctx, rec), rec, interfaces)
	var out []PolicyVerdict
	if err != nil {
		msg := err.Error()
		var status apierrors.APIStatus
		if errors.As(err, &status) && len(status.Status().Details.Causes) > 0 {
			msg = status.Status().Details.Causes[0].Message
		}
		out = append(out, PolicyVerdict{Object: i, Template: template, Action: "Deny", Message: msg})
	}
	for _, w := range rec.warnings {
		out = append(out, PolicyVerdict{Object: i, Template: template, Action: "Warn", Message: w})
	}
	if v, ok := rec.audit["validation.policy.admission.k8s.io/validation_failure"]; ok {
		var failures []validating.ValidationFailureValue
		if json.Unmarshal([]byte(v), &failures) == nil {
			for _, f := range failures {
				out = append(out, PolicyVerdict{Object: i, Template: template, Action: "Audit", Message: f.Message})
			}
		}
	}
	return out
}

// paramsClient is the REST mapper and dynamic client the plugin finds a
// policy's parameters with: every object of the policy's paramKind.
func paramsClient(c *cluster, p *admissionregistrationv1.ValidatingAdmissionPolicy) (meta.RESTMapper, *dynamicfake.FakeDynamicClient, error) {
	mapper := meta.NewDefaultRESTMapper(nil)
	listKinds := map[schema.GroupVersionResource]string{}
	var params []*unstructured.Unstructured
	var paramGVR schema.GroupVersionResource
	if pk := p.Spec.ParamKind; pk != nil {
		gv, err := schema.ParseGroupVersion(pk.APIVersion)
		if err != nil {
			return nil, nil, fmt.Errorf("paramKind apiVersion %q: %w", pk.APIVersion, err)
		}
		gvk := gv.WithKind(pk.Kind)
		paramGVR = c.resource(gvk)
		scope := meta.RESTScopeNamespace
		if n, ok := c.crds[gvk.Group+"/"+gvk.Kind]; ok && n.cluster {
			scope = meta.RESTScopeRoot
		}
		for _, u := range c.objects {
			if u.GroupVersionKind() == gvk {
				params = append(params, u.DeepCopy())
				if u.GetNamespace() == "" {
					scope = meta.RESTScopeRoot
				}
			}
		}
		singular := strings.ToLower(gvk.Kind)
		mapper.AddSpecific(gvk, paramGVR, gv.WithResource(singular), scope)
		listKinds[paramGVR] = gvk.Kind + "List"
	}
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		return nil, nil, err
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(s, listKinds)
	sort.SliceStable(params, func(a, b int) bool { return params[a].GetName() < params[b].GetName() })
	for _, o := range params {
		if err := client.Tracker().Create(paramGVR, o, o.GetNamespace()); err != nil {
			return nil, nil, err
		}
	}
	return mapper, client, nil
}
