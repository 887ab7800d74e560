//! The cluster objects a substrate type generates from the contract (on
//! talos: the Cilium L2 announcement policy and load-balancer pool), and
//! what the platform's Cilium turns on, which decides them.

use std::collections::BTreeMap;

use minijinja::Environment as Engine;
use serde_json::{Value as J, json};

use super::generate::{labels, parse_objects, template_path};
use super::{CLUSTER, Object, Source, templates};
use crate::diag::{Diagnostic, codes};
use crate::load::{Environment, Platform};
use crate::merge::Merged;
use crate::yaml::{self, Origin};

/// What the platform's Cilium turns on, read from its merged values: the
/// cluster objects strata generates (the L2 announcement policy and the
/// load-balancer pool) work only with L2 announcements and kube-proxy
/// replacement on, and not under BGP.
pub(super) struct CiliumMode {
    pub(super) l2: bool,
    pub(super) kube_proxy_replacement: bool,
    pub(super) bgp: bool,
    /// `cilium.io/v2` serves the pool from Cilium 1.18.
    pub(super) v2_pool: bool,
    /// Where L2 announcements are switched on, for findings.
    pub(super) l2_origin: Option<Origin>,
}

pub(super) fn cilium_mode(platform: &Platform, env: &Environment, merged: &BTreeMap<String, Merged>) -> CiliumMode {
    let cilium = platform
        .components_in(env)
        .find(|c| c.chart.name() == "cilium" || c.profile_name() == "cilium");
    let Some(c) = cilium else {
        return CiliumMode {
            l2: false,
            kube_proxy_replacement: false,
            bgp: false,
            v2_pool: false,
            l2_origin: None,
        };
    };
    let values = merged.get(&c.name).map(|m| &m.values);
    let truthy = |path: &str| {
        values.and_then(|v| v.get_path(path)).is_some_and(|n| match &n.value {
            yaml::Value::Bool(b) => *b,
            yaml::Value::Str(s) => s == "true" || s == "strict",
            _ => false,
        })
    };
    let version = c
        .chart
        .version()
        .map(|v| v.trim_start_matches('v'))
        .and_then(|v| semver::Version::parse(v).ok());
    CiliumMode {
        l2: truthy("l2announcements.enabled"),
        kube_proxy_replacement: truthy("kubeProxyReplacement"),
        bgp: truthy("bgpControlPlane.enabled"),
        v2_pool: version.is_none_or(|v| v >= semver::Version::new(1, 18, 0)),
        l2_origin: values
            .and_then(|v| v.get_path("l2announcements.enabled"))
            .map(|n| n.origin.clone()),
    }
}

/// A CiliumLoadBalancerIPPool in a manifest whose blocks overlap the pool
/// strata generates from the contract: LB-IPAM would hand out the same
/// address twice.
pub(super) fn pool_overlaps(env: &Environment, shared: &[Object]) -> Vec<Diagnostic> {
    let pools: Vec<&Object> = shared
        .iter()
        .filter(|o| o.kind() == "CiliumLoadBalancerIPPool")
        .collect();
    let generated: Vec<&&Object> = pools.iter().filter(|o| o.source == Source::Cluster).collect();
    let mut out = Vec::new();
    for user in pools.iter().filter(|o| o.source == Source::Manifest) {
        for g in &generated {
            for a in blocks(user) {
                for b in blocks(g) {
                    if crate::load::cidr::overlap(&a, &b) {
                        out.push(
                            Diagnostic::error(
                                codes::CLUSTER_OBJECTS,
                                user.field_origin("spec.blocks"),
                                format!(
                                    "CiliumLoadBalancerIPPool {} ({a}) overlaps the pool strata generates from the contract's network.lb_pool ({b})",
                                    user.name()
                                ),
                            )
                            .with_label("overlapping block")
                            .with_related(g.origin.clone(), format!("generated pool {} from the contract", g.name()))
                            .with_help("remove the hand-written pool, or take its range out of network.lb_pool")
                            .in_env(&env.name),
                        );
                    }
                }
            }
        }
    }
    out
}

pub(super) fn blocks(o: &Object) -> Vec<String> {
    o.value["spec"]["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| {
            b["cidr"].as_str().map(str::to_owned).or_else(|| {
                let start = b["start"].as_str()?;
                Some(format!("{start}-{}", b["stop"].as_str().unwrap_or(start)))
            })
        })
        .collect()
}

/// The cluster objects of an environment, and what they need.
pub(super) struct ClusterObjects {
    pub(super) objects: Vec<Object>,
    /// The components the objects need first (their Kustomization's
    /// `dependsOn`, their Application's wave).
    pub(super) requires: Vec<String>,
    pub(super) errors: Vec<Diagnostic>,
    pub(super) notes: Vec<Diagnostic>,
}

/// Renders the cluster objects the environment's substrate type generates
/// from the contract, as far as the platform's Cilium has what they need.
pub(super) fn cluster_objects(
    platform: &Platform,
    env: &Environment,
    engine: &Engine<'_>,
    contract: &J,
    merged: &BTreeMap<String, Merged>,
) -> ClusterObjects {
    let mut out = ClusterObjects {
        objects: Vec::new(),
        requires: Vec::new(),
        errors: Vec::new(),
        notes: Vec::new(),
    };
    let Some(st) = platform.substrate(env).filter(|st| !st.generate.is_empty()) else {
        return out;
    };
    let cilium = cilium_mode(platform, env, merged);
    out.requires = st.generate_requires.iter().filter(|r| env.takes(r)).cloned().collect();
    // L2 announcements need kube-proxy replacement (Cilium's L2
    // announcement guide, "Prerequisites").
    if cilium.l2
        && !cilium.kube_proxy_replacement
        && let Some(o) = &cilium.l2_origin
    {
        out.notes.push(
            Diagnostic::warning(
                codes::CLUSTER_OBJECTS,
                o.clone(),
                "Cilium's L2 announcements need kube-proxy replacement, which is off: the L2 policy and load-balancer pool are not generated",
            )
            .with_label("L2 announcements on")
            .with_help("set `kubeProxyReplacement: true` (and the k8sServiceHost/k8sServicePort it needs) in the same layer")
            .in_env(&env.name),
        );
    }
    // The L2 announcement policy announces with L2 (which needs kube-proxy
    // replacement) and not under BGP; the pool hands out addresses for
    // either, and BGP advertises them without L2.
    let announce = cilium.l2 && cilium.kube_proxy_replacement && !cilium.bgp;
    let pool = (cilium.l2 && cilium.kube_proxy_replacement) || cilium.bgp;
    let has_pool = env
        .contract
        .get("network")
        .and_then(|n| n.get("lb_pool"))
        .is_some_and(|p| matches!(&p.value, yaml::Value::Seq(s) if !s.is_empty()));
    let ctx = json!({
        "env": env.name,
        "substrate": env.substrate.0,
        "contract": contract,
        "host_label": platform.host_label(env),
        "labels": labels(),
        "cilium": {"v2_pool": cilium.v2_pool},
    });
    for name in &st.generate {
        let wanted = if name.contains("ciliumloadbalancerippool") {
            pool && has_pool
        } else {
            announce
        };
        if !wanted {
            continue;
        }
        let origin = Origin::file_start(env.contract.file.as_ref());
        let text = match templates::render(engine, name, minijinja::Value::from(minijinja::value::Serde(&ctx))) {
            Ok(t) => t,
            Err(e) => {
                let mut d = templates::template_error(name, &e).in_env(&env.name);
                d.origin.file = template_path(platform, &d.origin.file).into();
                d = d.with_note(format!(
                    "substrate type `{}` generates this object from the contract {}",
                    st.name, env.contract.file
                ));
                out.errors.push(d);
                continue;
            }
        };
        match parse_objects(name, &text) {
            Ok(docs) => out.objects.extend(docs.into_iter().map(|value| Object {
                folder: CLUSTER.into(),
                value,
                origin: origin.clone(),
                component: None,
                source: Source::Cluster,
                node: None,
                values: None,
            })),
            Err(d) => out.errors.push(d.in_env(&env.name)),
        }
    }
    out
}
