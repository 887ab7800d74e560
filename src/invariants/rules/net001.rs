//! NET001: a LoadBalancer Service announced by Cilium L2 uses externalTrafficPolicy: Local.

use serde_json::Value as J;

use crate::invariants::selector::{Labels, Selector};
use crate::invariants::{Ctx, Finding, Sink};
use crate::merge::contributions;

pub const NAME: &str = "local-traffic-policy-on-l2";

doc!(
    r#"## What it does
Finds every Service of type `LoadBalancer` that a CiliumL2AnnouncementPolicy
announces (`loadBalancerIPs: true`, and a `serviceSelector` that matches the
Service's labels, or none) — those the charts render (type and
`externalTrafficPolicy` read through the chart profile) and those in
`manifests/` — and flags `externalTrafficPolicy: Local`.

The merged value of each environment is judged. In addition, the base
values file that every environment inherits (`values.yaml`) is flagged when
it says `Local`, even where an environment overrides it with `Cluster`:
ADR 007 asks for Cluster "in every environment", and an environment added
later, or one whose override is removed, would silently inherit Local. The
finding then points at the base file's line, with the override as a second
place.

## Why is this bad?
Cilium documents `externalTrafficPolicy: Local` as incompatible with L2
announcements: the node that answers ARP for the address need not run a
backend pod, and with Local it drops the traffic. The ingress address then
works only while the leader node happens to run Traefik.

## Example
```yaml
# gitops/platform/traefik/values.yaml
service:
  type: LoadBalancer
  spec:
    externalTrafficPolicy: Local
```

Use instead:
```yaml
service:
  type: LoadBalancer
  spec:
    externalTrafficPolicy: Cluster
```
With Cluster, traffic that reaches a node without a Traefik pod is forwarded
and arrives with a node address as source; keep the client address with the
PROXY protocol or forwarded headers instead.
"#
);

/// The policies' service selectors; `None` when no policy announces LoadBalancer IPs.
fn announcers(ctx: &Ctx<'_>) -> Vec<(String, Option<Selector>)> {
    ctx.objects_of_kind("CiliumL2AnnouncementPolicy")
        .filter(|o| o.value["spec"]["loadBalancerIPs"] == J::Bool(true))
        .map(|o| {
            let sel = &o.value["spec"]["serviceSelector"];
            let s = if sel.is_null() {
                None
            } else {
                Selector::from_label_selector(sel).ok()
            };
            (o.name().to_owned(), s)
        })
        .collect()
}

fn announced_by(policies: &[(String, Option<Selector>)], labels: &Labels) -> Option<String> {
    policies
        .iter()
        .find(|(_, s)| s.as_ref().is_none_or(|s| s.matches(labels)))
        .map(|(n, _)| n.clone())
}

const HELP: &str = "set it to Cluster, or waive NET001 for this environment with a reason";

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    let policies = announcers(ctx);
    if policies.is_empty() {
        return;
    }
    for c in ctx.platform.components.values() {
        let Some(profile) = ctx.profiles.for_component(c) else {
            continue;
        };
        for svc in &profile.services {
            if let Some(e) = &svc.enabled
                && !ctx.value(c, e).truthy()
            {
                continue;
            }
            let Some(t) = &svc.kind else { continue };
            if ctx.value(c, t).value != J::String("LoadBalancer".into()) {
                continue;
            }
            let labels: Labels = profile
                .workloads
                .iter()
                .find(|w| w.id == svc.id)
                .map(|w| {
                    w.pod_labels
                        .iter()
                        .map(|(k, v)| {
                            (
                                k.clone(),
                                v.replace("{release}", &c.name).replace("{namespace}", &c.namespace),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let Some(policy) = announced_by(&policies, &labels) else {
                continue;
            };
            let Some(etp_ref) = &svc.external_traffic_policy else {
                continue;
            };
            let etp = ctx.value(c, etp_ref);
            let service = format!("Service {}/{}", c.namespace, svc.id);
            let object = format!("Service/{}/{}", c.namespace, svc.id);
            let note = format!("CiliumL2AnnouncementPolicy {policy} announces it");
            if etp.value == J::String("Local".into()) {
                sink.push(
                    Finding::new(
                        etp.origin.clone(),
                        format!("{service} uses externalTrafficPolicy: Local; Cilium L2 announcements need Cluster"),
                    )
                    .label(Ctx::value_label(&etp))
                    .notes(ctx.default_note(c, &etp))
                    .note(note.clone())
                    .help(HELP)
                    .component(&c.name)
                    .object(object.clone()),
                );
                continue;
            }
            // The base layer every environment inherits.
            let base = super::base_layer(ctx.platform, &c.dir);
            let contribs = contributions(ctx.platform, c, ctx.env, &etp_ref.path);
            if let Some(n) = contribs
                .iter()
                .find(|k| k.layer == base)
                .and_then(|k| k.node.as_ref())
                .filter(|n| n.as_str() == Some("Local"))
            {
                sink.push(
                    Finding::new(
                        n.origin.clone(),
                        format!(
                            "{service} uses externalTrafficPolicy: Local in the shared {base}; Cilium L2 announcements need Cluster"
                        ),
                    )
                    .label("set here for every environment")
                    .related(etp.origin.clone(), format!("{} overrides it with {}", ctx.env.name, crate::invariants::facts::show_json(&etp.value)))
                    .note(format!(
                        "environment {} overrides it, but every environment that does not inherits Local",
                        ctx.env.name
                    ))
                    .note(note)
                    .help(format!("set it to Cluster in {base}, or waive NET001 for this environment with a reason"))
                    .component(&c.name)
                    .object(object),
                );
            }
        }
    }
    for o in ctx.objects_of_kind("Service") {
        if o.value["spec"]["type"] != J::String("LoadBalancer".into())
            || o.value["spec"]["externalTrafficPolicy"] != J::String("Local".into())
        {
            continue;
        }
        let labels: Labels = o.value["metadata"]["labels"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        let Some(policy) = announced_by(&policies, &labels) else {
            continue;
        };
        let mut f = Finding::new(
            Ctx::field_origin(o, "spec.externalTrafficPolicy"),
            format!(
                "Service {}/{} uses externalTrafficPolicy: Local; Cilium L2 announcements need Cluster",
                o.namespace().unwrap_or(""),
                o.name()
            ),
        )
        .label("set here")
        .note(format!("CiliumL2AnnouncementPolicy {policy} announces it"))
        .help(HELP)
        .object(o.id());
        if let Some(c) = &o.component {
            f = f.component(c);
        }
        sink.push(f);
    }
}
