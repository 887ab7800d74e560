package main

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	psaadmission "k8s.io/pod-security-admission/admission"
)

// The label the API server gives every namespace, its own name
// (kubernetes/pkg/registry/core/namespace/strategy.go), which selectors
// commonly match.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// cluster is what the objects of one environment make of a cluster: its
// namespaces, and how each kind maps to its API resource.
type cluster struct {
	objects []*unstructured.Unstructured
	// namespaces by name: the Namespace objects of the request, and a bare
	// one for every other namespace an object names.
	namespaces map[string]*corev1.Namespace
	// known: the namespaces the request holds as objects.
	known map[string]bool
	// plurals of custom resources, from the CustomResourceDefinitions of
	// the request: group/Kind -> plural and whether cluster-scoped.
	crds  map[string]crdNames
	notes []Note
}

type crdNames struct {
	plural  string
	cluster bool
}

func newCluster(objects []map[string]any) *cluster {
	c := &cluster{
		namespaces: map[string]*corev1.Namespace{},
		known:      map[string]bool{},
		crds:       map[string]crdNames{},
	}
	for _, o := range objects {
		c.objects = append(c.objects, &unstructured.Unstructured{Object: o})
	}
	for i, u := range c.objects {
		switch u.GroupVersionKind() {
		case corev1.SchemeGroupVersion.WithKind("Namespace"):
			var ns corev1.Namespace
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ns); err != nil {
				c.note(i, "the Namespace could not be read: %v", err)
				continue
			}
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			ns.Labels[namespaceNameLabel] = ns.Name
			c.namespaces[ns.Name] = &ns
			c.known[ns.Name] = true
		case schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}:
			group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
			plural, _, _ := unstructured.NestedString(u.Object, "spec", "names", "plural")
			scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
			if kind != "" && plural != "" {
				c.crds[group+"/"+kind] = crdNames{plural: plural, cluster: scope == "Cluster"}
			}
		}
	}
	for _, u := range c.objects {
		if ns := u.GetNamespace(); ns != "" && c.namespaces[ns] == nil {
			c.namespaces[ns] = &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{namespaceNameLabel: ns}},
			}
		}
	}
	return c
}

func (c *cluster) note(object int, format string, args ...any) {
	c.notes = append(c.notes, Note{Object: object, Message: fmt.Sprintf(format, args...)})
}

// namespaceList is every namespace, sorted by name.
func (c *cluster) namespaceList() []*corev1.Namespace {
	names := make([]string, 0, len(c.namespaces))
	for n := range c.namespaces {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*corev1.Namespace, 0, len(names))
	for _, n := range names {
		out = append(out, c.namespaces[n])
	}
	return out
}

// resource is the API resource of a kind: a custom resource's plural from
// its CRD, else the guess the API machinery's own REST mapper makes from
// the kind (Deployment -> deployments, Ingress -> ingresses).
func (c *cluster) resource(gvk schema.GroupVersionKind) schema.GroupVersionResource {
	if n, ok := c.crds[gvk.Group+"/"+gvk.Kind]; ok {
		return gvk.GroupVersion().WithResource(n.plural)
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural
}

// typed decodes an object into its Kubernetes type, when client-go's scheme
// knows the kind.
func typed(u *unstructured.Unstructured) (runtime.Object, error) {
	obj, err := scheme.Scheme.New(u.GroupVersionKind())
	if err != nil {
		return nil, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(u.GroupVersionKind())
	return obj, nil
}

// podsResource is what PodSecurity admission and policies see a pod as.
var podsResource = corev1.SchemeGroupVersion.WithResource("pods")

// pod is the pod an object makes: itself for a Pod, else the pod its
// template makes (as PodSecurity admission's own extractor reads the
// kinds it knows: ReplicationController, PodTemplate, ReplicaSet,
// Deployment, StatefulSet, DaemonSet, Job, CronJob). The pod takes the
// object's namespace and name, and the template's labels and annotations.
// nil when the object holds no pod.
func pod(u *unstructured.Unstructured) (*corev1.Pod, bool, error) {
	gvk := u.GroupVersionKind()
	if gvk.Group == "" && gvk.Kind == "Pod" {
		obj, err := typed(u)
		if err != nil || obj == nil {
			return nil, false, err
		}
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, false, nil
		}
		return p, false, nil
	}
	extractor := psaadmission.DefaultPodSpecExtractor{}
	resource := schema.GroupResource{Group: gvk.Group, Resource: (&cluster{}).resource(gvk).Resource}
	if !extractor.HasPodSpec(resource) {
		return nil, false, nil
	}
	obj, err := typed(u)
	if err != nil || obj == nil {
		return nil, false, err
	}
	podMeta, spec, err := extractor.ExtractPodSpec(obj)
	if err != nil || spec == nil {
		return nil, false, err
	}
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		Spec:     *spec.DeepCopy(),
	}
	if podMeta != nil {
		p.ObjectMeta = *podMeta.DeepCopy()
	}
	p.Namespace = u.GetNamespace()
	if p.Name == "" {
		p.Name = u.GetName()
	}
	return p, true, nil
}
