//! Measured usage, `measurements/<env>.yaml`: what each node uses as
//! `kubectl top nodes` reports it, and when it was measured. A gate with
//! `measured: true` needs it, and needs the margin ADR 007 asks for to hold
//! on the measured load: with any one host down, its nodes' load moves to
//! the others, and each of them still keeps a third of its CPU and memory
//! free.
//!
//! ```yaml
//! # measurements/production.yaml
//! date: 2026-11-28
//! source: kubectl top nodes, weekday evening peak
//! nodes:
//!   talos-prod-cp-01: {cpu: 850m, memory: 6900Mi}
//!   talos-prod-cp-02: {cpu: "1.2", memory: 7.5Gi}
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde_json::Value as J;

use super::host_failure::Failure;
use crate::diag::{Diagnostic, Sources, codes};
use crate::invariants::Ctx;
use crate::invariants::facts::NodeInfo;
use crate::invariants::quantity;
use crate::validate::schemas::{self, Compiled};
use crate::validate::{locate, message};
use crate::world::World;
use crate::yaml::{Node, Origin};

/// The folder of the measurement files, from the repository root.
pub const FOLDER: &str = "measurements";

/// The file of an environment's measurements.
pub fn path(env: &str) -> String {
    crate::world::join(FOLDER, &format!("{env}.yaml"))
}

/// One node's measured usage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Usage {
    pub cpu_milli: u64,
    pub memory_mib: u64,
    pub origin: Origin,
}

/// An environment's measurements.
#[derive(Clone, Debug)]
pub struct Measurements {
    pub file: String,
    pub date: String,
    pub nodes: BTreeMap<String, Usage>,
    pub origin: Origin,
}

fn schema() -> &'static Result<Compiled, String> {
    static SCHEMA: OnceLock<Result<Compiled, String>> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let v: J =
            serde_json::from_str(include_str!("../../schemas/measurements.schema.json")).map_err(|e| e.to_string())?;
        schemas::compile(&v, "schemas/measurements.schema.json")
    })
}

/// Reads `measurements/<env>.yaml`: `Ok(None)` when there is none; input
/// errors for a file that is not what its schema says.
pub fn load(world: &dyn World, sources: &Sources, env: &str) -> Result<Option<Measurements>, Vec<Diagnostic>> {
    let file = path(env);
    let node = match crate::load::files::read_yaml_if_exists(world, sources, &file) {
        Ok(Some(n)) => n,
        Ok(None) => return Ok(None),
        Err(d) => return Err(vec![d]),
    };
    let compiled = schema().as_ref().map_err(|e| {
        vec![Diagnostic::error(
            codes::BAD_SCHEMA,
            node.origin.clone(),
            format!("a schema cannot be used: {e}"),
        )]
    })?;
    let instance = node.to_json();
    let mut problems: Vec<message::Problem> = compiled
        .validator
        .iter_errors(&instance)
        .flat_map(|e| message::describe(&e, |e| compiled.known_fields(e)))
        .collect();
    problems.sort();
    problems.dedup();
    if !problems.is_empty() {
        return Err(problems
            .iter()
            .map(|p| {
                let mut d = Diagnostic::error(codes::SCHEMA, locate::origin_in(&node, p), p.message.clone())
                    .with_label(p.label.clone())
                    .with_note(format!("checked against {}", compiled.name));
                if let Some(h) = &p.help {
                    d = d.with_help(h.clone());
                }
                d
            })
            .collect());
    }
    decode(&file, &node).map(Some).map_err(|d| vec![d])
}

fn decode(file: &str, node: &Node) -> Result<Measurements, Diagnostic> {
    let date = node.get("date").and_then(Node::as_str).unwrap_or_default().to_owned();
    let mut nodes = BTreeMap::new();
    for (name, e) in node.get("nodes").and_then(Node::as_map).into_iter().flatten() {
        let q = |key: &str, read: fn(&J) -> Option<u64>| {
            let n = e.node.get(key)?;
            read(&n.to_json()).map(|v| (v, n.origin.clone()))
        };
        let (Some((cpu, _)), Some((mem, _))) = (q("cpu", quantity::cpu_milli), q("memory", quantity::memory_mib))
        else {
            return Err(Diagnostic::error(
                codes::SHAPE,
                e.key_origin.clone(),
                format!("the usage of node {name} is not a CPU and a memory quantity"),
            )
            .with_help("write it as `kubectl top nodes` prints it: `{cpu: 250m, memory: 1800Mi}`"));
        };
        nodes.insert(
            name.clone(),
            Usage {
                cpu_milli: cpu,
                memory_mib: mem,
                origin: e.key_origin.clone(),
            },
        );
    }
    Ok(Measurements {
        file: file.to_owned(),
        date,
        nodes,
        origin: node.origin.clone(),
    })
}

/// `1.2 cores`, `850m`.
fn cpu(m: u64) -> String {
    format!("{m}m")
}

/// Whether the measured load fits with each host down in turn, keeping
/// `keep` (num/den) of every remaining node free; what does not.
pub fn check(ctx: &Ctx<'_>, m: &Measurements, keep: (u64, u64)) -> Vec<Failure> {
    let mut out = out_of_date(ctx, m);
    if !out.is_empty() {
        return out;
    }
    let no_size: Vec<&NodeInfo> = ctx
        .nodes
        .iter()
        .filter(|n| n.cpu_milli == 0 || n.memory_mib == 0)
        .collect();
    if let Some(n) = no_size.first() {
        out.push(Failure {
            host: None,
            origin: n.origin.clone(),
            message: format!(
                "the contract gives {} no `cpu` or `memory_mib`, so the measured load cannot be judged",
                n.name
            ),
        });
        return out;
    }
    let hosts: BTreeSet<&str> = ctx.nodes.iter().map(|n| n.host.as_str()).collect();
    hosts
        .into_iter()
        .filter_map(|host| host_down(ctx, m, keep, host))
        .collect()
}

/// A measurement that does not match the contract's nodes: a node not
/// measured, or a measured node the contract no longer has.
fn out_of_date(ctx: &Ctx<'_>, m: &Measurements) -> Vec<Failure> {
    let mut out = Vec::new();
    let names: BTreeSet<&str> = ctx.nodes.iter().map(|n| n.name.as_str()).collect();
    let missing: Vec<&str> = names.iter().copied().filter(|n| !m.nodes.contains_key(*n)).collect();
    if !missing.is_empty() {
        out.push(Failure {
            host: None,
            origin: Origin::file_start(m.file.as_str()),
            message: format!(
                "not measured: {} (measured {}, nodes {})",
                missing.join(", "),
                m.date,
                m.nodes.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        });
    }
    for (name, u) in &m.nodes {
        if !names.contains(name.as_str()) {
            out.push(Failure {
                host: None,
                origin: u.origin.clone(),
                message: format!(
                    "{name} is not a node of the contract; the measurement of {} is out of date",
                    m.date
                ),
            });
        }
    }
    out
}

/// With `host` down, whether its nodes' measured load fits in what the
/// other nodes have free, keeping `keep` (num/den) of each; why not.
fn host_down(ctx: &Ctx<'_>, m: &Measurements, keep: (u64, u64), host: &str) -> Option<Failure> {
    let (num, den) = keep;
    let budget = |cap: u64| cap.saturating_mul(den.saturating_sub(num)) / den.max(1);
    let used = |n: &NodeInfo| &m.nodes[&n.name];
    let (down, left): (Vec<&NodeInfo>, Vec<&NodeInfo>) = ctx.nodes.iter().partition(|n| n.host == host);
    let moved = down
        .iter()
        .fold((0, 0), |a, n| (a.0 + used(n).cpu_milli, a.1 + used(n).memory_mib));
    let mut room = (0u64, 0u64);
    let mut over = Vec::new();
    for n in &left {
        let u = used(n);
        let (bc, bm) = (budget(n.cpu_milli), budget(n.memory_mib));
        if u.cpu_milli > bc || u.memory_mib > bm {
            over.push(format!(
                "{} already uses {} / {} MiB of the {} / {} MiB it may",
                n.name,
                cpu(u.cpu_milli),
                u.memory_mib,
                cpu(bc),
                bm
            ));
        }
        room.0 += bc.saturating_sub(u.cpu_milli);
        room.1 += bm.saturating_sub(u.memory_mib);
    }
    if over.is_empty() && moved.0 <= room.0 && moved.1 <= room.1 {
        return None;
    }
    let mut why = over;
    if moved.0 > room.0 || moved.1 > room.1 {
        why.push(format!(
            "its measured {} / {} MiB does not fit in the {} / {} MiB the other nodes have free above a third of each",
            cpu(moved.0),
            moved.1,
            cpu(room.0),
            room.1
        ));
    }
    let at = down
        .first()
        .map_or_else(|| Origin::file_start(m.file.as_str()), |n| used(n).origin.clone());
    Some(Failure {
        host: Some(host.to_owned()),
        origin: at,
        message: format!(
            "the measured load ({}) does not leave {num}/{den} of every other node free: {}",
            m.date,
            why.join("; ")
        ),
    })
}
