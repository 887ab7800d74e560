//! ADM001: a pod its namespace's Pod Security level refuses, judged by the
//! admission stage ([`crate::admission`]) with Kubernetes' own PodSecurity
//! admission code.

pub const NAME: &str = "pod-security-refused";

doc!(
    r#"## What it does
Judges every pod the environment makes — each Pod, and the pod of each
Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController, Job,
CronJob and PodTemplate — as Kubernetes' PodSecurity admission will when
the pod is created, with Kubernetes' own admission code
(`k8s.io/pod-security-admission`, run by the `strata-admission` program).
The level of each namespace comes from its `pod-security.kubernetes.io/enforce`,
`warn` and `audit` labels (each with its `-version`), as strata writes them
from `config.yaml`'s namespace labels or a manifest's Namespace; a mode
without a label takes the substrate's cluster-wide default
(`pod_security:` in `substrates/<type>.yaml`: on talos, Talos' own
`enforce: baseline`, `warn`/`audit: restricted`, `kube-system` exempt; on
kind, Kubernetes' default, `privileged`).

A pod the `enforce` level refuses is an error, at the values line or
manifest line that sets the offending field where one does (for a field
that must be set and is not, at the object). A pod only the `warn` level
fails is a warning, one only `audit` fails a note. A Namespace whose
Pod Security labels Kubernetes refuses (an unknown level or version) is an
error at the Namespace.

## Why is this bad?
A Deployment whose pods break their namespace's `enforce` level is
accepted, and then every pod its ReplicaSet creates is refused: the
rollout never starts, and Flux or Argo CD report the Deployment as
progressing until they time out. `warn` and `audit` levels admit the pod
and say so in the apply's output and the audit log; on Talos they announce
the `restricted` level a namespace may be moved to.

## Example
```yaml
# config.yaml
namespace:
  name: web
  labels:
    pod-security.kubernetes.io/enforce: restricted
```
```yaml
# values.yaml
securityContext:
  privileged: true
```

Use instead:
```yaml
podSecurityContext:
  runAsNonRoot: true
  seccompProfile: {type: RuntimeDefault}
securityContext:
  allowPrivilegeEscalation: false
  capabilities: {drop: [ALL]}
```
or give the namespace the level its pods need
(`pod-security.kubernetes.io/enforce: privileged` for a CNI or a storage
driver), or waive ADM001 for the object with a reason.
"#
);
