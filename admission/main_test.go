package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// talos is the cluster-wide PodSecurity configuration Talos writes
// (siderolabs/talos pkg/machinery/config/generate/init.go).
const talos = `{"apiVersion":"pod-security.admission.config.k8s.io/v1alpha1","kind":"PodSecurityConfiguration",
"defaults":{"enforce":"baseline","enforce-version":"latest","audit":"restricted","audit-version":"latest","warn":"restricted","warn-version":"latest"},
"exemptions":{"usernames":[],"runtimeClasses":[],"namespaces":["kube-system"]}}`

func obj(t *testing.T, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func ns(name, labels string) string {
	return `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + name + `","labels":{` + labels + `}}}`
}

func deployment(name, namespace, podSecurity, container string) string {
	return `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"` + name + `","namespace":"` + namespace + `"},
"spec":{"replicas":3,"selector":{"matchLabels":{"app":"` + name + `"}},"template":{"metadata":{"labels":{"app":"` + name + `"}},
"spec":{"securityContext":{` + podSecurity + `},"containers":[{"name":"app","image":"registry.example/app:1",` + container + `}]}}}}`
}

const restrictedContainer = `"securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}`
const restrictedPod = `"runAsNonRoot":true,"seccompProfile":{"type":"RuntimeDefault"}`

func judgeAll(t *testing.T, config string, objects ...string) *Response {
	t.Helper()
	req := &Request{Protocol: Protocol, Username: "system:serviceaccount:flux-system:kustomize-controller", KubernetesVersion: "v1.35.0"}
	if config != "" {
		req.PodSecurity = json.RawMessage(config)
	}
	for _, o := range objects {
		req.Objects = append(req.Objects, obj(t, o))
	}
	resp, err := judge(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func verdict(t *testing.T, r *Response, object int) PodVerdict {
	t.Helper()
	for _, v := range r.PodSecurity {
		if v.Object == object {
			return v
		}
	}
	t.Fatalf("no pod verdict for object %d: %+v", object, r.PodSecurity)
	return PodVerdict{}
}

func ids(v PodVerdict, mode string) string {
	var out []string
	for _, c := range v.Checks {
		if c.Mode == mode {
			out = append(out, c.ID)
		}
	}
	return strings.Join(out, ",")
}

func TestRestrictedRefusesAPodThatDoesNotHardenAndAdmitsOneThatDoes(t *testing.T) {
	r := judgeAll(t, "",
		ns("apps", `"pod-security.kubernetes.io/enforce":"restricted"`),
		deployment("loose", "apps", "", `"ports":[{"containerPort":80}]`),
		deployment("hard", "apps", restrictedPod, restrictedContainer),
	)
	loose := verdict(t, r, 1)
	if loose.Allowed || loose.Enforce != "restricted:latest" || !loose.Template {
		t.Fatalf("restricted admitted an unhardened pod: %+v", loose)
	}
	if got := ids(loose, "enforce"); got != "allowPrivilegeEscalation,capabilities_restricted,runAsNonRoot,seccompProfile_restricted" {
		t.Fatalf("checks: %s", got)
	}
	if !strings.Contains(loose.Message, `violates PodSecurity "restricted:latest"`) {
		t.Fatalf("message: %s", loose.Message)
	}
	if hard := verdict(t, r, 2); !hard.Allowed || len(hard.Checks) != 0 {
		t.Fatalf("restricted refused a hardened pod: %+v", hard)
	}
}

func TestBaselineRefusesHostAccessAndOnlyWarnsRestrictedOnTalos(t *testing.T) {
	r := judgeAll(t, talos,
		ns("apps", ``),
		deployment("host", "apps", "", `"securityContext":{"privileged":true}`),
		deployment("plain", "apps", "", `"ports":[{"containerPort":80}]`),
		deployment("system", "kube-system", "", `"securityContext":{"privileged":true}`),
	)
	host := verdict(t, r, 1)
	if host.Allowed || host.Enforce != "baseline:latest" || ids(host, "enforce") != "privileged" {
		t.Fatalf("baseline admitted a privileged pod: %+v", host)
	}
	plain := verdict(t, r, 2)
	if !plain.Allowed || len(plain.Warnings) != 1 || ids(plain, "enforce") != "" || ids(plain, "warn") == "" {
		t.Fatalf("baseline should admit and restricted warn: %+v", plain)
	}
	if system := verdict(t, r, 3); !system.Allowed || system.Exempt != "namespace" {
		t.Fatalf("kube-system is exempt on Talos: %+v", system)
	}
}

func TestANamespaceWithABadLevelIsRefused(t *testing.T) {
	r := judgeAll(t, "", ns("apps", `"pod-security.kubernetes.io/enforce":"restrictd"`))
	if len(r.Namespaces) != 1 || !strings.Contains(r.Namespaces[0].Message, "restrictd") {
		t.Fatalf("%+v", r.Namespaces)
	}
}

const maxReplicas = `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"max-replicas"},
"spec":{"paramKind":{"apiVersion":"v1","kind":"ConfigMap"},
"matchConstraints":{"resourceRules":[{"apiGroups":["apps"],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["deployments"]}]},
"validations":[{"expression":"object.spec.replicas <= int(params.data.max)","messageExpression":"'at most ' + params.data.max + ' replicas'"}]}}`

func binding(name, actions, selector string) string {
	return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"` + name + `"},
"spec":{"policyName":"max-replicas","validationActions":[` + actions + `],
"paramRef":{"name":"limits","parameterNotFoundAction":"Deny"},
"matchResources":{"namespaceSelector":{"matchLabels":` + selector + `}}}}`
}

func TestAPolicyDeniesWarnsAndAuditsAsItsBindingsSay(t *testing.T) {
	r := judgeAll(t, "",
		ns("apps", `"tier":"apps"`),
		ns("tools", `"tier":"tools"`),
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"limits","namespace":"apps"},"data":{"max":"2"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"limits","namespace":"tools"},"data":{"max":"5"}}`,
		maxReplicas,
		binding("apps-deny", `"Deny"`, `{"tier":"apps"}`),
		binding("all-warn", `"Warn","Audit"`, `{}`),
		deployment("web", "apps", restrictedPod, restrictedContainer),
		deployment("tool", "tools", restrictedPod, restrictedContainer),
	)
	var got []string
	for _, v := range r.Policies {
		got = append(got, v.Binding+" "+v.Action+" "+itoa(v.Object)+" "+v.Message)
	}
	want := []string{
		"apps-deny Deny 7 ValidatingAdmissionPolicy 'max-replicas' with binding 'apps-deny' denied request: at most 2 replicas",
		"all-warn Warn 7 Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'all-warn': at most 2 replicas",
		"all-warn Audit 7 at most 2 replicas",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestAPolicyWithoutABindingIsNamed(t *testing.T) {
	r := judgeAll(t, "", maxReplicas)
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0].Message, "has no binding") {
		t.Fatalf("%+v", r.Notes)
	}
}

func TestTheProgramAnswersOneRequest(t *testing.T) {
	req := `{"protocol":1,"username":"u","objects":[` + ns("apps", `"pod-security.kubernetes.io/enforce":"baseline"`) + `]}`
	var out, errs bytes.Buffer
	if code := run(nil, strings.NewReader(req), &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	var resp Response
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil || resp.Protocol != Protocol {
		t.Fatalf("%v %s", err, out.String())
	}
	if code := run(nil, strings.NewReader(`{"protocol":2,"objects":[]}`), &out, &errs); code != 2 {
		t.Fatalf("another protocol: exit %d", code)
	}
	if code := run(nil, strings.NewReader(`{"protocol":1,"objects":[],"extra":1}`), &out, &errs); code != 2 {
		t.Fatalf("an unknown field: exit %d", code)
	}
}
