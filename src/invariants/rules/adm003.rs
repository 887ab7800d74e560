//! ADM003: an object a Kyverno policy the environment applies refuses,
//! judged by the admission stage ([`crate::admission`]) with Kyverno's own
//! engine.

pub const NAME: &str = "kyverno-policy-refused";

doc!(
    r#"## What it does
Runs the `validate` rules of every Kyverno ClusterPolicy and Policy
(`kyverno.io/v1`) the environment applies, with Kyverno's own engine
(`github.com/kyverno/kyverno`, run by the `strata-kyverno` program), on
every object the environment applies, as Kyverno's admission webhook does
when the GitOps engine creates it: `match` and `exclude` (namespace
selectors against the labels of the Namespaces strata writes), rules
Kyverno generates for pod controllers from rules on Pods, patterns,
`deny` conditions, `podSecurity` and CEL rules. A Policy judges only its
own namespace. A failed rule whose action Kyverno resolves to `Enforce`
(`failureAction`, `validationFailureAction` and their overrides) is an
error; `Audit`, a warning. The finding points at the field Kyverno names
when it can be traced to a values or manifest line.

Rules that need the cluster (API calls in `context`, image verification,
`mutate` and `generate`) are not run, nor PolicyExceptions; a note names
what was left out.

## Why is this bad?
Kyverno's webhook refuses the object when Flux or Argo CD apply it, and the
apply of its Kustomization or Application fails with it.

## Example
```yaml
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: require-team}
spec:
  validationFailureAction: Enforce
  rules:
    - name: team-label
      match: {any: [{resources: {kinds: [Deployment]}}]}
      validate:
        message: every Deployment names its team
        pattern: {metadata: {labels: {team: "?*"}}}
```
with a Deployment without the `team` label.

Use instead: the label on the Deployment, or a waiver of ADM003 for the
object with a reason.
"#
);
