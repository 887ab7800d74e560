//! ADM002: an object a ValidatingAdmissionPolicy the environment applies
//! refuses, judged by the admission stage ([`crate::admission`]) with
//! Kubernetes' own admission plugin and CEL libraries.

pub const NAME: &str = "admission-policy-refused";

doc!(
    r#"## What it does
Runs every ValidatingAdmissionPolicy (`admissionregistration.k8s.io/v1`) and
ValidatingAdmissionPolicyBinding the environment applies, with Kubernetes'
own ValidatingAdmissionPolicy admission plugin (`k8s.io/apiserver`, run by
the `strata-admission` program), on every object the environment applies
and on the pod each workload's template makes, as if each were created:
`matchConstraints`, each binding's `matchResources` (its
`namespaceSelector` against the labels of the Namespaces strata writes),
`matchConditions`, `paramKind` and `paramRef` (the parameter objects the
environment applies), `variables`, `validations` with their messages, and
`failurePolicy`. A binding whose `validationActions` has `Deny` makes a
failed validation an error; `Warn` a warning; `Audit` a note. Each binding
is judged on its own, so every binding that refuses an object is named.

The CEL `authorizer` has no opinion on any check (a preview knows no RBAC),
and `request.userInfo` is the GitOps engine's service account.

## Why is this bad?
The API server refuses the object when Flux or Argo CD apply it, and the
whole apply of its Kustomization or Application fails with it: nothing
after the refusal is applied until the object or the policy changes.

## Example
```yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replica-limit}
spec:
  matchConstraints:
    resourceRules:
      - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  validations:
    - expression: object.spec.replicas <= 5
```
with a Deployment of `replicas: 7` in a namespace its binding selects.

Use instead: `replicas: 5`, a binding that leaves the namespace out, or a
waiver of ADM002 for the object with a reason.
"#
);
