//! `environments/<env>.yaml`: substrate, contract, topology, targets, git, waivers.

use super::contract::Contract;
use super::decode::Fields;
use super::project::{Target, decode_targets};
use crate::diag::{Diagnostic, codes};
use crate::yaml::{Node, Origin};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    /// ADR 007's invariants are errors.
    Ha,
    /// The HA invariants are off (a single-node development cluster).
    Single,
}

#[derive(Clone, Debug)]
pub struct Git {
    pub url: String,
    pub revision: String,
    /// The folder of the repository the engines read `rendered/` under; empty
    /// means the repository root.
    pub path: String,
}

#[derive(Clone, Debug)]
pub struct Waiver {
    pub rule: (String, Origin),
    pub component: Option<(String, Origin)>,
    pub object: Option<(String, Origin)>,
    pub reason: String,
    pub expires: (String, Origin),
    pub origin: Origin,
}

#[derive(Clone, Debug)]
pub struct Environment {
    pub name: String,
    pub file: String,
    pub substrate: (String, Origin),
    pub contract_path: (String, Origin),
    pub topology: Topology,
    pub topology_origin: Origin,
    pub targets: Option<Vec<Target>>,
    pub git: Git,
    pub waivers: Vec<Waiver>,
    pub contract: Contract,
    pub origin: Origin,
}

const KEYS: &[&str] = &["substrate", "contract", "topology", "targets", "git", "waivers"];
const GIT_KEYS: &[&str] = &["url", "revision", "path"];
const WAIVER_KEYS: &[&str] = &["rule", "component", "object", "reason", "expires"];

/// The parts of an environment file read before its contract is loaded.
pub struct Header {
    pub substrate: Option<(String, Origin)>,
    pub contract: Option<(String, Origin)>,
    pub topology: (Topology, Origin),
    pub targets: Option<Vec<Target>>,
    pub git: Git,
    pub waivers: Vec<Waiver>,
}

pub fn decode_header(node: &Node, what: &str, diags: &mut Vec<Diagnostic>) -> Header {
    let f = Fields::new(node, what, KEYS, diags);
    let substrate = f.required_string("substrate", diags);
    let contract = f.required_string("contract", diags);
    let topology = match f.choice("topology", &["ha", "single"], diags) {
        Some((s, o)) if s == "single" => (Topology::Single, o),
        Some((_, o)) => (Topology::Ha, o),
        None => (Topology::Ha, node.origin.clone()),
    };
    let targets = decode_targets(&f, diags);
    let git = match f.required("git", diags) {
        Some(g) => {
            let gf = Fields::new(g, "`git`", GIT_KEYS, diags);
            Git {
                url: gf.required_string("url", diags).map(|(s, _)| s).unwrap_or_default(),
                revision: gf
                    .string("revision", diags)
                    .map_or_else(|| "main".to_owned(), |(s, _)| s),
                path: gf
                    .string("path", diags)
                    .map(|(s, o)| {
                        crate::world::normalize(&s).unwrap_or_else(|e| {
                            diags.push(Diagnostic::error(codes::SHAPE, o, format!("git path: {e}")));
                            String::new()
                        })
                    })
                    .unwrap_or_default(),
            }
        }
        None => Git {
            url: String::new(),
            revision: "main".into(),
            path: String::new(),
        },
    };
    let mut waivers = Vec::new();
    if let Some(w) = f.get("waivers") {
        match &w.value {
            crate::yaml::Value::Seq(items) => {
                for item in items {
                    if let Some(waiver) = decode_waiver(item, diags) {
                        waivers.push(waiver);
                    }
                }
            }
            _ => diags.push(super::decode::type_error(w, "waivers", "a list of waivers")),
        }
    }
    Header {
        substrate,
        contract,
        topology,
        targets,
        git,
        waivers,
    }
}

fn decode_waiver(node: &Node, diags: &mut Vec<Diagnostic>) -> Option<Waiver> {
    let f = Fields::new(node, "a waiver", WAIVER_KEYS, diags);
    let rule = f.required_string("rule", diags);
    let component = f.string("component", diags);
    let object = f.string("object", diags);
    let reason = f.required_string("reason", diags);
    let expires = f.required_string("expires", diags);
    if component.is_none() && object.is_none() {
        diags.push(
            Diagnostic::error(
                codes::WAIVER,
                node.origin.clone(),
                "a waiver names no `component` or `object`",
            )
            .with_help("say what the waiver is for: `component: NAME`, or `object: Kind/namespace/name`"),
        );
    }
    if let Some((e, o)) = &expires
        && !is_date(e)
    {
        diags.push(
            Diagnostic::error(
                codes::WAIVER,
                o.clone(),
                format!("`expires` must be a date YYYY-MM-DD, found `{e}`"),
            )
            .with_label("not a date"),
        );
    }
    Some(Waiver {
        rule: rule?,
        component,
        object,
        reason: reason?.0,
        expires: expires?,
        origin: node.origin.clone(),
    })
}

pub fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        && (1..=12).contains(&s[5..7].parse::<u32>().unwrap_or(0))
        && (1..=31).contains(&s[8..10].parse::<u32>().unwrap_or(0))
}
