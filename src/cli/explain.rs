//! `strata explain --env E COMPONENT PATH`: the final value at a values
//! path and every layer's contribution to it, with file and line; the
//! chart's default when no layer sets it; the nearest existing paths when
//! the path exists nowhere; and, when helm renders the chart, the rendered
//! fields the value ends up in.

use std::fmt::Write as _;

use clap::Args;
use serde_json::Value as J;

use super::{Context, exit};
use crate::charts::Ready;
use crate::diag::{Diagnostic, codes};
use crate::explain::rendered::{self, NotRendered};
use crate::explain::{Explanation, Inputs, LayerStep, Step, chart};
use crate::invariants::facts::show_json;
use crate::load::{self, Component, decode};
use crate::profiles as profile;
use crate::profiles::known::{DefaultFrom, Unknown};
use crate::secrets::{self, Secrets};
use crate::yaml::path::{PATH_EXAMPLES, Seg, ValuesPath};
use crate::yaml::{self, Origin};

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The environment whose layers are merged
    #[arg(long, value_name = "ENV")]
    pub env: String,
    /// The component (its folder name)
    pub component: String,
    /// A path into the component's Helm values: keys separated by dots, a
    /// key holding dots in double quotes, list items as [N], e.g.
    /// deployment.replicas, configs.params."server.insecure", tolerations[0].key
    pub path: String,
}

pub fn run(ctx: &Context, args: &ExplainArgs) -> i32 {
    let path = match ValuesPath::parse(&args.path) {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "error: `{}` is not a values path: {} (column {})\n  {}\n  {}^\n  = help: write keys separated by dots, a key that holds dots in double quotes, and list items as [N]: {PATH_EXAMPLES}",
                args.path,
                e.message,
                e.column,
                args.path,
                " ".repeat(e.column - 1)
            );
            return exit::INPUT;
        }
    };
    let platform = match load::load(&ctx.world, &ctx.sources, Some(&args.env)) {
        Ok(p) => p,
        Err(mut diags) => {
            ctx.report(&mut diags);
            return exit::INPUT;
        }
    };
    let Some(component) = platform.components.get(&args.component) else {
        let known: Vec<&str> = platform.components.keys().map(String::as_str).collect();
        let origin = Origin::file_start(platform.project.platform.as_str());
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
    // Every environment's secrets: explain prints values, and one
    // environment's secret may have been copied into another's values.
    let secrets = &platform.secrets;
    let profiles = match profile::load(&ctx.world, &ctx.sources, &platform.project.profiles) {
        Ok(p) => p,
        Err(mut diags) => {
            ctx.report(&mut diags);
            return exit::INPUT;
        }
    };
    let inputs = Inputs {
        world: &ctx.world,
        sources: &ctx.sources,
        inflate: &ctx.inflate,
        platform: &platform,
        profiles: &profiles,
    };
    let chart = chart::chart_of(&inputs, component);
    let known = chart::knowledge(&inputs, component, &chart);
    let e = crate::explain::explain(&platform, component, env, &path, &known);
    // A value that is set, or that the chart sets, may end up in rendered
    // fields; they are shown between the value and the layers' history.
    let fields = if e.value.is_some() || e.chart_default.is_some() {
        rendered(ctx, &inputs, component, &args.env, &e, &chart)
    } else {
        String::new()
    };
    // Values are redacted where they are still parsed; the printed text
    // is searched once more, in every form a secret may take.
    let out = render(&e, &args.component, &args.env, secrets, &fields);
    print!("{}", secrets.redact_text(&out));
    if let Some(u) = &e.unknown {
        eprint!("{}", secrets.redact_text(&unknown(u, &e.path, component, &chart)));
        return exit::FINDINGS;
    }
    exit::OK
}

/// A value as YAML, with every sensitive contract output (of any
/// environment) taken out of its strings, keys and numbers, and the data of
/// anything shaped like a Secret hidden, before it is written as text; a
/// line that still shows a secret is hidden whole.
fn show(value: &J, secrets: &Secrets) -> String {
    let text = match secrets::redact_for_display(value, secrets) {
        Some((redacted, _)) => yaml::to_sorted_yaml(&redacted),
        None => yaml::to_sorted_yaml(value),
    };
    text.lines()
        .map(|l| {
            if secrets.text_holds(l) {
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
fn inline(value: &J, secrets: &Secrets, indent: &str) -> String {
    let text = show(value, secrets);
    let block = match value {
        J::Object(m) => !m.is_empty(),
        J::Array(a) => !a.is_empty(),
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

fn items(n: usize) -> String {
    if n == 1 { "1 item".into() } else { format!("{n} items") }
}

/// The path below a list, as seen from the list: `[0].key`.
fn below(path: &ValuesPath, list: &ValuesPath) -> String {
    let rest = ValuesPath(path.0[list.len()..].to_vec()).to_string();
    if rest.starts_with('[') {
        rest
    } else {
        format!(".{rest}")
    }
}

/// The explanation, with `fields` (the rendered fields, or why there are
/// none) between the final value and the layers.
fn render(e: &Explanation, component: &str, env: &str, secrets: &Secrets, fields: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{component} {} in {env}", e.path);
    final_value(&mut out, e, secrets);
    out.push_str(fields);
    out.push_str("\nlayers, lowest first:\n");
    for (i, l) in e.layers.iter().enumerate() {
        layer(&mut out, i + 1, l, &e.path, secrets);
    }
    out
}

/// The final value, and where it was set; or why it is not set.
fn final_value(out: &mut String, e: &Explanation, secrets: &Secrets) {
    match &e.value {
        Some(n) if n.value == yaml::Value::Null => {
            let _ = writeln!(
                out,
                "  final value: null (deleted; Helm drops the chart's default too), set at {}",
                at(&n.origin)
            );
        }
        Some(n) => {
            let _ = writeln!(out, "  final value:{}", inline(&n.to_json(), secrets, "  "));
            if n.as_map().is_none() {
                let _ = writeln!(out, "  set at {}", at(&n.origin));
            }
            if let Some(Step::SetsList { list, origin, len, .. }) = e.deciding().map(|l| &l.step) {
                let _ = writeln!(
                    out,
                    "  in the list `{list}` ({}) set as a whole at {}: Helm replaces a list, it never merges one",
                    items(*len),
                    at(origin)
                );
            }
        }
        None => not_set(out, e, secrets),
    }
}

/// The final value of a path no layer sets: the chart's default, or why
/// there is none.
fn not_set(out: &mut String, e: &Explanation, secrets: &Secrets) {
    match &e.chart_default {
        Some(d) => {
            let _ = writeln!(
                out,
                "  final value: not set by any layer; the chart's default applies:{}",
                inline(&d.value, secrets, "  ")
            );
            match &d.from {
                DefaultFrom::Chart {
                    name,
                    version,
                    location,
                } => {
                    let _ = writeln!(
                        out,
                        "  chart default from the values.yaml of chart {name} {version} ({location})"
                    );
                }
                DefaultFrom::Profile { file, versions } => {
                    let _ = writeln!(out, "  chart default from {file}, chart versions {versions}");
                }
            }
        }
        None => match e.deciding().map(|l| &l.step) {
            Some(Step::DeletesParent(o)) => {
                let _ = writeln!(out, "  final value: not set; a key above it is replaced at {}", at(o));
            }
            Some(Step::NotAList { list, origin, found }) => {
                let _ = writeln!(
                    out,
                    "  final value: not set; `{list}` is {found}, not a list, set at {}",
                    at(origin)
                );
            }
            Some(Step::SetsList { list, origin, len, .. }) => {
                let _ = writeln!(
                    out,
                    "  final value: not set; the list `{list}` set as a whole at {} ({}) has nothing at `{}`",
                    at(origin),
                    items(*len),
                    below(&e.path, list)
                );
            }
            _ => {
                let _ = writeln!(
                    out,
                    "  final value: not set by any layer, and no chart default is known for it"
                );
            }
        },
    }
}

/// What layer `n` (lowest first) does at the path.
fn layer(out: &mut String, n: usize, l: &LayerStep, path: &ValuesPath, secrets: &Secrets) {
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
                inline(&node.to_json(), secrets, "    ")
            );
        }
        Step::Merges(node) => {
            let _ = writeln!(
                out,
                "  {n}. {}: sets a mapping, merged key by key with the layers below{}",
                at(&node.origin),
                inline(&node.to_json(), secrets, "    ")
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
        Step::SetsList {
            list,
            origin,
            len,
            item,
        } => {
            let what = format!(
                "  {n}. {}: sets the list `{list}` ({}), replacing the lists below as a whole",
                at(origin),
                items(*len)
            );
            match item {
                Some(item) => {
                    let _ = writeln!(
                        out,
                        "{what}; at `{}`:{}",
                        below(path, list),
                        inline(&item.to_json(), secrets, "    ")
                    );
                }
                None => {
                    let _ = writeln!(out, "{what}; nothing at `{}`", below(path, list));
                }
            }
        }
        Step::NotAList { list, origin, found } => {
            let _ = writeln!(
                out,
                "  {n}. {}: sets `{list}` to {found}, not a list, which deletes the list",
                at(origin)
            );
        }
    }
}

/// Why a path that exists nowhere is an error, with the nearest paths.
fn unknown(u: &Unknown, path: &ValuesPath, component: &Component, chart: &Result<Ready, String>) -> String {
    let mut out = String::new();
    let searched = match chart {
        Ok(r) if u.chart_searched => format!(
            "no layer of {} sets `{path}` and the values.yaml of chart {} {} has no such key",
            component.name, r.info.name, r.info.version
        ),
        _ => format!(
            "no layer of {} sets `{path}` and no chart default is known for it",
            component.name
        ),
    };
    let _ = writeln!(out, "error: {searched}");
    if !u.known.is_empty() {
        match &u.found {
            Some(found) => {
                let _ = writeln!(out, "  = note: `{}` is {found}", u.known);
            }
            None => {
                if let Some(seg) = path.0.get(u.known.len()) {
                    let next = u.known.then(std::slice::from_ref(seg));
                    let _ = writeln!(out, "  = note: `{}` exists, `{next}` does not", u.known);
                }
            }
        }
    }
    if !u.chart_searched {
        let why = match chart {
            Err(why) => format!(" ({why})"),
            Ok(_) => String::new(),
        };
        let _ = writeln!(
            out,
            "  = note: strata does not have the chart{why}, so it searched the layers and the paths of the chart profile only; `strata charts pull` fetches the chart"
        );
    }
    if u.suggestions.is_empty() {
        if !u.keys.is_empty() {
            let mut keys = u.keys.clone();
            keys.sort();
            let shown: Vec<String> = keys
                .iter()
                .take(20)
                .map(|k| u.known.then(&[Seg::Key(k.clone())]).to_string())
                .collect();
            let more = if keys.len() > 20 {
                format!(", and {} more", keys.len() - 20)
            } else {
                String::new()
            };
            let _ = writeln!(out, "  = help: paths that exist here: {}{more}", shown.join(", "));
        }
    } else {
        let list: Vec<String> = u.suggestions.iter().map(|s| format!("`{s}`")).collect();
        let _ = writeln!(out, "  = help: did you mean {}?", list.join(" or "));
    }
    out
}

/// The rendered fields the value ends up in, when helm renders the chart;
/// else why they cannot be shown.
fn rendered(
    ctx: &Context,
    inputs: &Inputs<'_>,
    component: &Component,
    env: &str,
    e: &Explanation,
    chart: &Result<Ready, String>,
) -> String {
    let fields = match rendered::rendered_fields(inputs, component, env, e, chart) {
        Ok(fields) => fields,
        Err(not) => {
            let why = match not {
                NotRendered::InflateOff => "`inflate: off`".to_owned(),
                NotRendered::NoHelm => "helm is not on the PATH".to_owned(),
                NotRendered::NoChart(why) => why,
                NotRendered::DoesNotCompile(mut diags) => {
                    ctx.report(&mut diags);
                    "the environment does not compile; see the errors above".to_owned()
                }
                NotRendered::EnvNotCompiled => "the environment was not compiled".to_owned(),
                NotRendered::ChartNotRendered => "helm did not render it".to_owned(),
            };
            return format!(
                "\nrendered: the chart of {} was not rendered ({why}), so the fields this value ends up in are not shown\n",
                component.name
            );
        }
    };
    let secrets = &inputs.platform.secrets;
    let version = chart
        .as_ref()
        .map_or_else(|_| String::new(), |c| format!(" {}", c.info.version));
    let name = chart.as_ref().map_or("", |c| c.info.name.as_str());
    let mut out = format!("\nrendered by helm (chart {name}{version}):\n");
    if fields.is_empty() {
        let _ = writeln!(
            out,
            "  no field that {} renders could be traced to this value",
            component.name
        );
    }
    for f in fields {
        let mut value = f.value.clone();
        secrets.redact_json(&mut value);
        let value = secrets.redact_text(&show_json(&value)).into_owned();
        let part = f
            .part
            .as_ref()
            .map_or_else(String::new, |p| format!(" (the part `{}`)", secrets.redact_text(p)));
        let patched = f
            .patched
            .as_ref()
            .map_or_else(String::new, |o| format!(", then changed by the patch at {}", at(o)));
        let _ = writeln!(
            out,
            "  -> {} {} = {value}{part} ({}{patched})",
            f.object, f.field, f.template
        );
    }
    out
}
