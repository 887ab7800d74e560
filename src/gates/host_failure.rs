//! The `host-failure` check: for each physical host of the environment's
//! contract, take its nodes away and ask what ADR 007 promises still holds —
//! etcd keeps quorum, the API VIP a control-plane node to live on, every
//! LoadBalancer Service an L2-announcing node, every ADR 007 controller a
//! replica at the worst placement its constraints allow, and the remaining
//! nodes room for every request. Each failure names the host and what it
//! takes down.

use std::collections::BTreeSet;

use serde_json::Value as J;

use super::placement::{self, Slot};
use crate::invariants::Ctx;
use crate::invariants::capacity::{Load, place};
use crate::invariants::facts::{Judged, NodeInfo, Workload, eligible, plural};
use crate::invariants::selector::Selector;
use crate::profiles::Kind;
use crate::yaml::{Node, Origin};

/// One thing that does not survive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The host whose loss causes it; `None` for what fails whichever host goes.
    pub host: Option<String>,
    pub origin: Origin,
    pub message: String,
}

/// A CiliumL2AnnouncementPolicy that announces LoadBalancer addresses.
struct Policy {
    name: String,
    services: Option<Selector>,
    /// `None` selects every node.
    nodes: Option<Selector>,
    origin: Origin,
}

fn policies(ctx: &Ctx<'_>) -> Vec<Policy> {
    let mut out = Vec::new();
    for o in ctx.objects_of_kind("CiliumL2AnnouncementPolicy") {
        if o.value["spec"]["loadBalancerIPs"] != J::Bool(true) {
            continue;
        }
        let selector = |v: &J| -> Result<Option<Selector>, String> {
            if v.is_null() {
                Ok(None)
            } else {
                Selector::from_label_selector(v).map(Some)
            }
        };
        // An invalid selector is NET002's to report.
        let (Ok(services), Ok(nodes)) = (
            selector(&o.value["spec"]["serviceSelector"]),
            selector(&o.value["spec"]["nodeSelector"]),
        ) else {
            continue;
        };
        out.push(Policy {
            name: o.name().to_owned(),
            services,
            nodes,
            origin: o.field_origin("spec.nodeSelector"),
        });
    }
    out
}

fn names(nodes: &[&NodeInfo]) -> String {
    nodes.iter().map(|n| n.name.as_str()).collect::<Vec<_>>().join(", ")
}

/// The nodes a workload's pods may run on.
fn eligible_nodes<'c>(ctx: &'c Ctx<'_>, w: &Workload<'_>) -> Vec<&'c NodeInfo> {
    ctx.nodes
        .iter()
        .filter(|n| {
            eligible(
                n,
                w.node_selector.as_ref().map(|v| &v.value),
                w.affinity.as_ref().map(|v| &v.value),
                w.tolerations.as_ref().map(|v| &v.value),
            )
        })
        .collect()
}

/// Where to point for a controller that can lose every replica: the value
/// that would fix it.
fn controller_origin(w: &Workload<'_>, replicas: i64) -> Origin {
    let set = |v: &Option<crate::invariants::facts::Val>| v.as_ref().filter(|v| v.set).map(|v| v.origin.clone());
    if replicas < 2 {
        return w
            .replicas
            .as_ref()
            .map_or_else(|| w.origin.clone(), |v| v.origin.clone());
    }
    set(&w.affinity)
        .or_else(|| set(&w.topology_spread))
        .or_else(|| set(&w.node_selector))
        .unwrap_or_else(|| w.origin.clone())
}

/// What the check reads of one environment, gathered once for every host.
struct Cluster<'c, 'a> {
    ctx: &'c Ctx<'a>,
    /// The control-plane nodes: the etcd members.
    cps: Vec<&'c NodeInfo>,
    /// The contract's `api_vip`.
    vip: Option<&'c Node>,
    policies: Vec<Policy>,
    load: Load,
    /// The nodes the contract gives no size.
    no_size: Vec<&'c NodeInfo>,
    /// The ADR 007 controllers, each with the nodes its pods may run on.
    controllers: Vec<(&'c Workload<'a>, Vec<&'c NodeInfo>)>,
}

/// Runs the check on one environment.
pub fn check(ctx: &Ctx<'_>) -> Vec<Failure> {
    let mut out = Vec::new();
    if ctx.nodes.is_empty() {
        out.push(Failure {
            host: None,
            origin: Origin::file_start(&ctx.env.contract.file),
            message: "the contract lists no `nodes`, so no host failure can be judged".to_owned(),
        });
        return out;
    }
    let cluster = Cluster {
        ctx,
        cps: ctx.nodes.iter().filter(|n| n.is_control_plane()).collect(),
        vip: ctx.env.contract.get("api_vip"),
        policies: policies(ctx),
        load: Load::gather(ctx),
        no_size: ctx
            .nodes
            .iter()
            .filter(|n| n.cpu_milli == 0 || n.memory_mib == 0)
            .collect(),
        controllers: ctx
            .workloads
            .iter()
            .filter(|w| w.controller.is_some())
            .map(|w| (w, eligible_nodes(ctx, w)))
            .collect(),
    };
    whichever_host(&cluster, &mut out);
    let hosts: BTreeSet<&str> = ctx.nodes.iter().map(|n| n.host.as_str()).collect();
    for host in hosts {
        control_plane(&cluster, host, &mut out);
        load_balancers(&cluster, host, &mut out);
        controllers(&cluster, host, &mut out);
        if cluster.no_size.is_empty() {
            requests(&cluster, host, &mut out);
        }
    }
    out
}

/// A failure when `host` goes.
fn fail(host: &str, origin: Origin, message: String) -> Failure {
    Failure {
        host: Some(host.to_owned()),
        origin,
        message,
    }
}

/// What fails whichever host goes: no etcd member, no API VIP, nodes of
/// unknown size, and controllers that may run nowhere.
fn whichever_host(cluster: &Cluster<'_, '_>, out: &mut Vec<Failure>) {
    let ctx = cluster.ctx;
    if cluster.cps.is_empty() {
        out.push(Failure {
            host: None,
            origin: ctx.nodes_origin.clone(),
            message: "no node has the control-plane role: there is no etcd member and no API server to survive"
                .to_owned(),
        });
    }
    if cluster.vip.is_none() {
        out.push(Failure {
            host: None,
            origin: Origin::file_start(&ctx.env.contract.file),
            message:
                "the contract has no `api_vip`, so nothing moves the API address to a control-plane node that survives"
                    .to_owned(),
        });
    }
    if let Some(first) = cluster.no_size.first() {
        out.push(Failure {
            host: None,
            origin: first.origin.clone(),
            message: format!(
                "the contract gives {} no `cpu` or `memory_mib`, so strata cannot tell whether the other nodes hold the requests",
                names(&cluster.no_size)
            ),
        });
    }
    // A controller that may run nowhere fails whichever host goes.
    for (w, nodes) in &cluster.controllers {
        if nodes.is_empty() {
            out.push(Failure {
                host: None,
                origin: controller_origin(w, 2),
                message: format!(
                    "{} may run on no node: its node selector, affinity or tolerations exclude all",
                    w.what()
                ),
            });
        }
    }
}

/// etcd and the API address, without `host`'s control-plane nodes.
fn control_plane(cluster: &Cluster<'_, '_>, host: &str, out: &mut Vec<Failure>) {
    let cps = &cluster.cps;
    if cps.is_empty() {
        return;
    }
    let lost: Vec<&NodeInfo> = cps.iter().copied().filter(|n| n.host == host).collect();
    let left = cps.len() - lost.len();
    let quorum = cps.len() / 2 + 1;
    if left < quorum {
        out.push(fail(
            host,
            lost[0].host_origin.clone(),
            format!(
                "etcd loses quorum: {} of {} member(s) go ({}), {left} remain, {quorum} needed",
                lost.len(),
                cps.len(),
                names(&lost)
            ),
        ));
    }
    if let Some(v) = cluster.vip {
        let addr = v.as_str().unwrap_or("");
        if left == 0 {
            out.push(fail(
                host,
                v.origin.clone(),
                format!("the API VIP {addr} has no control-plane node left to move to"),
            ));
        } else if left < quorum {
            out.push(fail(
                host,
                v.origin.clone(),
                format!("the API VIP {addr} cannot move: Talos elects its holder through etcd, which has lost quorum"),
            ));
        }
    }
}

/// The LoadBalancer addresses: a Service whose announcing nodes are all
/// on `host` loses its address.
fn load_balancers(cluster: &Cluster<'_, '_>, host: &str, out: &mut Vec<Failure>) {
    let ctx = cluster.ctx;
    for svc in &ctx.services {
        let announcing: Vec<&Policy> = cluster
            .policies
            .iter()
            .filter(|p| p.services.as_ref().is_none_or(|s| s.matches(&svc.labels)))
            .collect();
        if announcing.is_empty() {
            continue;
        }
        let selected: Vec<&NodeInfo> = ctx
            .nodes
            .iter()
            .filter(|n| {
                announcing
                    .iter()
                    .any(|p| p.nodes.as_ref().is_none_or(|s| s.matches(&n.labels)))
            })
            .collect();
        if selected.iter().all(|n| n.host == host) {
            let which: Vec<&str> = announcing.iter().map(|p| p.name.as_str()).collect();
            let only = if selected.is_empty() {
                "no node".to_owned()
            } else {
                format!("only {}", names(&selected))
            };
            let policy = announcing.iter().find(|p| p.nodes.is_some()).unwrap_or(&announcing[0]);
            out.push(fail(
                host,
                policy.origin.clone(),
                format!(
                    "Service {}/{} loses its address: CiliumL2AnnouncementPolicy {} select{} {only}",
                    svc.namespace,
                    svc.name,
                    which.join(", "),
                    if which.len() == 1 { "s" } else { "" }
                ),
            ));
        }
    }
}

/// The ADR 007 controllers, at their worst placement, without `host`.
fn controllers(cluster: &Cluster<'_, '_>, host: &str, out: &mut Vec<Failure>) {
    for (w, nodes) in &cluster.controllers {
        if nodes.is_empty() {
            continue;
        }
        let on_host: Vec<&NodeInfo> = nodes.iter().copied().filter(|n| n.host == host).collect();
        if on_host.is_empty() {
            continue;
        }
        if w.kind == Kind::DaemonSet {
            if on_host.len() == nodes.len() {
                out.push(fail(
                    host,
                    controller_origin(w, 2),
                    format!("{} runs only on {}, all on {host}", w.what(), names(&on_host)),
                ));
            }
            continue;
        }
        if let Some(why) = no_replica_left(w, nodes, &on_host, host) {
            out.push(fail(
                host,
                controller_origin(w, w.replica_count()),
                format!("{} keeps no replica: {why}", w.what()),
            ));
        }
    }
}

/// Why a controller (not a DaemonSet) may keep no replica when `host`
/// goes, its replicas placed as badly as its constraints allow on `nodes`
/// (`on_host` of them on the host); `None` when one survives.
fn no_replica_left(w: &Workload<'_>, nodes: &[&NodeInfo], on_host: &[&NodeInfo], host: &str) -> Option<String> {
    let replicas = w.replica_count();
    let r = u32::try_from(replicas.max(0)).unwrap_or(u32::MAX);
    let rendered = !matches!(w.judged, Judged::Profile | Judged::Runtime);
    let builtin = w.builtin_spread.as_ref().map(|b| (b.kind, b.topology_key.as_str()));
    let constraints = placement::constraints(
        w.affinity.as_ref().map(|v| &v.value),
        w.topology_spread.as_ref().map(|v| &v.value),
        builtin,
        &w.pod_labels,
        rendered,
    );
    let slots: Vec<Slot<'_>> = nodes
        .iter()
        .map(|n| Slot {
            labels: &n.labels,
            on_failed_host: n.host == host,
        })
        .collect();
    let worst = placement::worst(r, &constraints, &slots);
    if worst.survivors() > 0 {
        return None;
    }
    let why = if worst.scheduled == 0 {
        "none of its replicas can be scheduled".to_owned()
    } else if r < 2 {
        format!(
            "it runs {}, which may be on {}",
            plural(replicas, "replica"),
            names(on_host)
        )
    } else if constraints.is_empty() {
        format!(
            "nothing keeps its {r} replicas apart, so all may run on {}",
            names(on_host)
        )
    } else {
        let spread: Vec<String> = constraints.iter().map(placement::Constraint::describe).collect();
        format!(
            "its {r} replicas are spread only by {}, so all may run on {}",
            spread.join(" and "),
            names(on_host)
        )
    };
    Some(why)
}

/// The requests, on the nodes `host` leaves.
fn requests(cluster: &Cluster<'_, '_>, host: &str, out: &mut Vec<Failure>) {
    let ctx = cluster.ctx;
    let left: Vec<&NodeInfo> = ctx.nodes.iter().filter(|n| n.host != host).collect();
    let (usage, unplaced) = place(&cluster.load, &left, (0, 1));
    let mut over: Vec<String> = usage
        .iter()
        .filter(|(_, (c, m, bc, bm))| c > bc || m > bm)
        .map(|(n, (c, m, bc, bm))| format!("{n} needs {c}m CPU / {m} MiB of {bc}m / {bm} MiB"))
        .collect();
    if !unplaced.is_empty() {
        let shown: Vec<&str> = unplaced.iter().take(4).map(String::as_str).collect();
        over.push(format!(
            "{} pod(s) do not fit: {}{}",
            unplaced.len(),
            shown.join(", "),
            if unplaced.len() > shown.len() { ", …" } else { "" }
        ));
    }
    if !over.is_empty() {
        out.push(fail(
            host,
            ctx.nodes_origin.clone(),
            format!("the other nodes cannot hold every pod's requests: {}", over.join("; ")),
        ));
    }
}
