//! NET001: a LoadBalancer Service announced by Cilium L2 uses externalTrafficPolicy: Local.

use serde_json::Value as J;

use crate::invariants::facts::show_json;
use crate::invariants::selector::{Labels, Selector};
use crate::invariants::{Ctx, Finding, Sink};
use crate::merge::contributions;

pub const NAME: &str = "local-traffic-policy-on-l2";

doc!(
    r#"## What it does
Finds every Service of type `LoadBalancer` that a CiliumL2AnnouncementPolicy
announces (`loadBalancerIPs: true`, and a `serviceSelector` that matches the
Service's labels, or none) — those the charts render, those in
`manifests/`, and, for a component whose chart was not rendered, those its
chart profile describes — and flags `externalTrafficPolicy: Local`. The
finding points at the values line that set it.

The merged value of each environment is judged. In addition, the base
values file that every environment inherits (`values.yaml`) is flagged when
it says `Local`, even where an environment overrides it with `Cluster`:
ADR 007 asks for Cluster "in every environment", and an environment added
later, or one whose override is removed, would silently inherit Local. The
finding then points at the base file's line, with the override as a second
place.

A Gateway API `Gateway` is judged as the LoadBalancer Service its
implementation creates at run time, chosen by its GatewayClass's
`controllerName`:
- Envoy Gateway: the settings of the EnvoyProxy the Gateway references
  (`spec.infrastructure.parametersRef`), else the one its GatewayClass
  references (`spec.parametersRef`), merged over each other only when the
  more specific one asks to (`mergeType`), over the default EnvoyProxy of
  Envoy Gateway's own configuration; what none sets is Envoy Gateway's
  default, type LoadBalancer with `externalTrafficPolicy: Local` — so a
  Gateway fires unless an EnvoyProxy sets `Cluster`. An `envoyService.patch`
  that sets the policy wins.
- Cilium: `cilium-gateway-<name>`, with the policy of the
  CiliumGatewayClassConfig its class references (Cluster when it has a
  `service` without one), else the chart's `gatewayAPI.externalTrafficPolicy`
  (default Cluster).
- Traefik creates no Service per Gateway: the chart's Service carries its
  listeners, and the finding about that Service names the Gateway.

The finding points at the line that set the policy — the EnvoyProxy's or
CiliumGatewayClassConfig's in `manifests/`, or the values line of the chart
that renders it — or, when only Envoy Gateway's default applies, at the
Gateway's `gatewayClassName`, with the EnvoyProxy field to set. A Gateway of
another implementation, or whose class is not in the tree, gets a note.

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

For an Envoy Gateway, give its GatewayClass an EnvoyProxy that says Cluster:
```yaml
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: EnvoyProxy
metadata: {name: edge-proxy, namespace: envoy-gateway-system}
spec:
  provider:
    type: Kubernetes
    kubernetes:
      envoyService:
        externalTrafficPolicy: Cluster
```
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

const HELP: &str = "or waive NET001 for this environment with a reason";

/// The Gateways a component's Service carries (Traefik serves its
/// Gateways' listeners through its own Service), as a note.
fn carried(ctx: &Ctx<'_>, svc: &crate::invariants::facts::Service<'_>) -> Option<String> {
    let gateways = ctx.carried_gateways.get(&svc.component?.name)?;
    Some(format!(
        "it also carries {}: Traefik serves their listeners through this Service, and creates none of its own",
        gateways.join(", ")
    ))
}

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    let policies = announcers(ctx);
    if policies.is_empty() {
        return;
    }
    for svc in &ctx.services {
        let Some(policy) = announced_by(&policies, &svc.labels) else {
            continue;
        };
        let c = svc.component;
        let service = format!("Service {}/{}", svc.namespace, svc.name);
        let note = format!("CiliumL2AnnouncementPolicy {policy} announces it");
        let object = svc
            .gateway
            .as_ref()
            .map_or_else(|| svc.object_id(), |g| g.gateway.clone());
        let base = |origin| {
            let mut f = Finding::new(origin, String::new()).object(object.clone());
            if let Some(c) = c {
                f = f.component(&c.name);
            }
            f
        };
        if let Some(etp) = &svc.etp
            && etp.value == J::String("Local".into())
        {
            let etp = &ctx.located(etp);
            let mut f = base(etp.origin.clone());
            if let Some(g) = &svc.gateway {
                f.message = format!(
                    "{} becomes {service} (created by {}), which uses externalTrafficPolicy: Local; Cilium L2 announcements need Cluster",
                    g.title, g.implementation
                );
                sink.push(
                    f.label(g.label.clone())
                        .notes(g.notes.clone())
                        .note(note)
                        .help(format!("{}\n{HELP}", g.help)),
                );
                continue;
            }
            f.message = format!("{service} uses externalTrafficPolicy: Local; Cilium L2 announcements need Cluster");
            sink.push(
                f.label(Ctx::value_label(etp))
                    .notes(ctx.default_note(c, etp))
                    .note(note)
                    .notes(carried(ctx, svc))
                    .help(format!("{}\n{HELP}", ctx.fix(c, etp, "Cluster"))),
            );
            continue;
        }
        // The base layer every environment inherits.
        let (Some(c), Some(path)) = (c, &svc.etp_path) else {
            continue;
        };
        let base_file = super::base_layer(ctx.platform, &c.dir);
        let contribs = contributions(ctx.platform, c, ctx.env, path);
        if let Some(n) = contribs
            .iter()
            .find(|k| k.layer == base_file)
            .and_then(|k| k.node.as_ref())
            .filter(|n| n.as_str() == Some("Local"))
        {
            let mut f = base(n.origin.clone());
            f.message = format!(
                "{service} uses externalTrafficPolicy: Local in the shared {base_file}; Cilium L2 announcements need Cluster"
            );
            let over = svc.etp.as_ref();
            f = f.label("set here for every environment");
            if let Some(o) = over {
                f = f.related(
                    o.origin.clone(),
                    format!("{} overrides it with {}", ctx.env.name, show_json(&o.value)),
                );
            }
            sink.push(
                f.note(format!(
                    "environment {} overrides it, but every environment that does not inherits Local",
                    ctx.env.name
                ))
                .note(note)
                .help(format!(
                    "set `{path}: Cluster` in {base_file}, or waive NET001 for this environment with a reason"
                )),
            );
        }
    }
}
