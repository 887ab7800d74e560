//! SUB001: the substrate and the platform disagree on what runs at bootstrap.

use serde_json::Value as J;

use crate::invariants::{Ctx, Finding, Sink};
use crate::render::substrate::{Bootstrap, KIND_CONFIG, TALOS_PATCH, contract_bootstrap};
use crate::yaml::Origin;

pub const NAME: &str = "substrate-platform-mismatch";

doc!(
    r#"## What it does
Compares what the substrate stack says it configured — the contract's
optional outputs `cni` (`none`, or the plugin it installed), `kube_proxy`
and `coredns` (whether it runs them) — with what the platform deploys: its
CNI component, whether Cilium replaces kube-proxy, and a CoreDNS component.
Flags a CNI on both sides or on neither, kube-proxy running beside Cilium's
replacement or missing without one, and CoreDNS on both sides or on
neither. A contract without these outputs is not judged.

## Why is this bad?
Two CNIs fight over every pod's network, and a `cni: none` cluster without
the platform's CNI has no pod network at all, so no engine ever starts.
kube-proxy beside Cilium's kube-proxy replacement programs every Service
twice; neither leaves Services unreachable. Talos's own CoreDNS and the
platform's are both the `coredns` Deployment in `kube-system`: the two
owners overwrite each other, and without either the cluster has no DNS.

## Example
```json
{"substrate": {"value": "talos"}, "cni": {"value": "flannel"}, "coredns": {"value": true}}
```
with a `cilium` and a `coredns` component in the platform.

Use instead: apply strata's `rendered/<env>/substrate/talos-patch.yaml`
(or `kind-config.yaml`) in the substrate stack, which turns off what the
platform replaces, and print what it configured:
```json
{"cni": {"value": "none"}, "kube_proxy": {"value": false}, "coredns": {"value": false}}
```
"#
);

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    let said = contract_bootstrap(ctx.env);
    let boot = &ctx.render.bootstrap;
    let file = match ctx.platform.substrate(ctx.env).and_then(|s| s.bootstrap.as_deref()) {
        Some("kind-config") => KIND_CONFIG,
        _ => TALOS_PATCH,
    };
    let remedy = format!(
        "apply rendered/{}/substrate/{file} in the substrate stack, then write the contract again from its outputs",
        ctx.env.name
    );
    if let Some((cni, at)) = said.get("cni") {
        check_cni(sink, boot, cni, at, &remedy);
    }
    if let Some((J::Bool(kube_proxy), at)) = said.get("kube_proxy") {
        let replaced = boot.kube_proxy_replacement;
        let problem = match (*kube_proxy, replaced) {
            (true, true) => Some(
                "the substrate runs kube-proxy, and the platform's Cilium replaces it: every Service is programmed twice",
            ),
            (false, false) => Some(
                "the substrate runs no kube-proxy, and nothing in the platform replaces it: Services are unreachable",
            ),
            _ => None,
        };
        if let Some(p) = problem {
            sink.push(finding(at, p, "kube_proxy", &remedy));
        }
    }
    if let Some((J::Bool(coredns), at)) = said.get("coredns") {
        let problem = match (*coredns, &boot.coredns) {
            (true, Some(c)) => Some(format!(
                "the substrate runs its own CoreDNS, and component `{c}` deploys CoreDNS too: both own the `coredns` Deployment in kube-system"
            )),
            (false, None) => {
                Some("the substrate runs no CoreDNS, and no component deploys one: the cluster has no DNS".to_owned())
            }
            _ => None,
        };
        if let Some(p) = problem {
            sink.push(finding(at, &p, "coredns", &remedy));
        }
    }
}

fn check_cni(sink: &mut Sink, boot: &Bootstrap, cni: &J, at: &Origin, remedy: &str) {
    let substrate_has = cni.as_str().is_some_and(|c| c != "none");
    let problem = match (substrate_has, &boot.cni) {
        (true, Some(c)) => Some(format!(
            "the substrate installs the CNI {}, and component `{c}` is the platform's CNI: two CNIs fight over every pod's network",
            cni.as_str().unwrap_or("")
        )),
        (false, None) => {
            Some("the substrate starts the cluster without a CNI, and no component of the platform is one: there is no pod network".to_owned())
        }
        _ => None,
    };
    if let Some(p) = problem {
        sink.push(finding(at, &p, "cni", remedy));
    }
}

fn finding(at: &Origin, problem: &str, output: &str, remedy: &str) -> Finding {
    Finding::new(at.clone(), problem.to_owned())
        .label(format!("the substrate's `{output}`"))
        .help(remedy.to_owned())
        .object(format!("contract/{output}"))
}
