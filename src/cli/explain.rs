//! `strata explain --env E COMPONENT PATH`: the final value at a values
//! path and every layer's contribution to it, with file and line.

use std::fmt::Write as _;
use std::sync::Arc;

use clap::Args;

use super::{Context, exit};
use crate::diag::{Diagnostic, codes};
use crate::load::{self, Contract, decode};
use crate::merge::explain::{self, Explanation, Step};
use crate::yaml::{self, Origin};

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The environment whose layers are merged
    #[arg(long, value_name = "ENV")]
    pub env: String,
    /// The component (its folder name)
    pub component: String,
    /// A dot-separated path into the component's Helm values, e.g. deployment.replicas
    pub path: String,
}

pub fn run(ctx: &Context, args: &ExplainArgs) -> i32 {
    let platform = match load::load(&ctx.world, &ctx.sources, Some(&args.env)) {
        Ok(p) => p,
        Err(mut diags) => {
            ctx.report(&mut diags);
            return exit::INPUT;
        }
    };
    let Some(component) = platform.components.get(&args.component) else {
        let known: Vec<&str> = platform.components.keys().map(String::as_str).collect();
        let origin = Origin::file_start(&Arc::from(platform.project.platform.as_str()));
        let mut d = Diagnostic::error(
            codes::IO,
            origin,
            format!("no component `{}` in {}", args.component, platform.project.platform),
        );
        d = match decode::suggest(&args.component, &known) {
            Some(s) => d.with_help(format!("did you mean `{s}`?")),
            None => d.with_help(format!("components: {}", known.join(", "))),
        };
        ctx.report(&mut vec![d]);
        return exit::INPUT;
    };
    let Some(env) = platform.environments.get(&args.env) else {
        return exit::INPUT;
    };
    let path = args.path.trim_matches('.');
    if path.is_empty() || path.split('.').any(str::is_empty) {
        eprintln!(
            "error: `{}` is not a values path\n  = help: write the keys separated by dots, e.g. deployment.replicas",
            args.path
        );
        return exit::INPUT;
    }
    let profiles = match crate::invariants::profile::load(&ctx.world, &ctx.sources, &platform.project.profiles) {
        Ok(p) => p,
        Err(mut diags) => {
            ctx.report(&mut diags);
            return exit::INPUT;
        }
    };
    let profile = profiles
        .for_component(component)
        .map(|p| (&p.node, p.file.as_ref(), p.versions_text.as_str()));
    let e = explain::explain(&platform, component, env, path, profile);
    print!("{}", render(&e, &args.component, &args.env, &env.contract));
    exit::OK
}

/// A value as YAML, with any line holding a sensitive contract output hidden.
fn show(value: &serde_json::Value, contract: &Contract) -> String {
    let text = yaml::to_sorted_yaml(value);
    text.lines()
        .map(|l| {
            if contract.secrets.occurs_in(l) {
                crate::diff::REDACTED_LINE
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A scalar on the same line; a non-empty mapping or list, and a
/// multi-line string, indented below.
fn inline(value: &serde_json::Value, contract: &Contract, indent: &str) -> String {
    let text = show(value, contract);
    let block = match value {
        serde_json::Value::Object(m) => !m.is_empty(),
        serde_json::Value::Array(a) => !a.is_empty(),
        _ => text.contains('\n'),
    };
    if block {
        let body: Vec<String> = text.lines().map(|l| format!("{indent}  {l}")).collect();
        format!("\n{}", body.join("\n"))
    } else {
        format!(" {text}")
    }
}

fn at(o: &Origin) -> String {
    format!("{}:{}:{}", o.file, o.line, o.col)
}

fn render(e: &Explanation, component: &str, env: &str, contract: &Contract) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{component} {} in {env}", e.path);
    match &e.value {
        Some(n) if n.value == yaml::Value::Null => {
            let _ = writeln!(
                out,
                "  final value: null (deleted; Helm drops the chart's default too), set at {}",
                at(&n.origin)
            );
        }
        Some(n) => {
            let _ = writeln!(out, "  final value:{}", inline(&n.to_json(), contract, "  "));
            if n.as_map().is_none() {
                let _ = writeln!(out, "  set at {}", at(&n.origin));
            }
        }
        None => match &e.chart_default {
            Some(d) => {
                let _ = writeln!(
                    out,
                    "  final value: not set by any layer; the chart's default applies:{}",
                    inline(&d.value, contract, "  ")
                );
                let versions = d
                    .versions
                    .as_deref()
                    .map(|v| format!(", chart versions {v}"))
                    .unwrap_or_default();
                let _ = writeln!(out, "  chart default from {}{versions}", d.profile);
            }
            None => {
                let deleted = e.layers.iter().rev().find_map(|l| match &l.step {
                    Step::DeletesParent(o) => Some(o),
                    _ => None,
                });
                match deleted {
                    Some(o) => {
                        let _ = writeln!(out, "  final value: not set; a key above it is replaced at {}", at(o));
                    }
                    None => {
                        let _ = writeln!(out, "  final value: not set by any layer; the chart's default applies");
                    }
                }
            }
        },
    }
    out.push_str("\nlayers, lowest first:\n");
    for (i, l) in e.layers.iter().enumerate() {
        let n = i + 1;
        match &l.step {
            Step::Absent => {
                let _ = writeln!(out, "  {n}. {}: no such file", l.file);
            }
            Step::NotSet => {
                let _ = writeln!(out, "  {n}. {}: not set", l.file);
            }
            Step::Sets(node) => {
                let _ = writeln!(
                    out,
                    "  {n}. {}: sets{}",
                    at(&node.origin),
                    inline(&node.to_json(), contract, "    ")
                );
            }
            Step::Merges(node) => {
                let _ = writeln!(
                    out,
                    "  {n}. {}: sets a mapping, merged key by key with the layers below{}",
                    at(&node.origin),
                    inline(&node.to_json(), contract, "    ")
                );
            }
            Step::Deletes(o) => {
                let _ = writeln!(
                    out,
                    "  {n}. {}: null, which deletes it (and the chart's default)",
                    at(o)
                );
            }
            Step::DeletesParent(o) => {
                let _ = writeln!(
                    out,
                    "  {n}. {}: replaces a mapping above it with a non-mapping, which deletes it",
                    at(o)
                );
            }
        }
    }
    out
}
