//! `strata explain --env E COMPONENT PATH`: the final value at a values
//! path and every layer's contribution to it, with file and line; the
//! chart's default when no layer sets it; the nearest existing paths when
//! the path exists nowhere; and, when helm renders the chart, the rendered
//! fields the value ends up in.

use std::fmt::Write as _;

use clap::Args;
use serde_json::Value as J;

use super::{Context, exit};
use crate::charts::{self, Ready, State, Unavailable};
use crate::diag::{Diagnostic, codes};
use crate::explain::{Explanation, Step};
use crate::inflate::Mode;
use crate::invariants::facts::{self, Judged, show_json};
use crate::load::{self, Chart, Component, Platform, decode};
use crate::pipeline::{self, Options};
use crate::profiles::known::{self as explain_known, DefaultFrom, Knowledge, KnownChart, ProfileDoc, Unknown};
use crate::profiles::{self as profile, Profiles};
use crate::render::Source;
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
    let chart = chart_of(ctx, &platform, component);
    let known = Knowledge {
        chart: chart.as_ref().ok().map(|r| KnownChart {
            name: r.info.name.clone(),
            version: r.info.version.clone(),
            location: match &component.chart {
                Chart::Local { path } => path.clone(),
                Chart::Remote { .. } | Chart::None => format!("its archive in {}/charts", charts::STATE_DIR),
            },
            defaults: explain_known::chart_defaults(&r.info),
        }),
        profile: profiles.for_component(component).map(|p| ProfileDoc {
            node: &p.node,
            file: &p.file,
            versions: &p.versions_text,
        }),
    };
    let e = crate::explain::explain(&platform, component, env, &path, &known);
    // A value that is set, or that the chart sets, may end up in rendered
    // fields; they are shown between the value and the layers' history.
    let fields = if e.value.is_some() || e.chart_default.is_some() {
        rendered(ctx, &platform, &profiles, component, &args.env, &e, &chart, secrets)
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

/// The component's chart as strata has it (the store's archive, or the
/// local chart), read without helm; or why not.
fn chart_of(ctx: &Context, platform: &Platform, component: &Component) -> Result<Ready, String> {
    let Some(root) = &ctx.inflate.state_root else {
        return Err("no chart store".into());
    };
    let lock = charts::lock::read(&ctx.world, &ctx.sources)
        .ok()
        .flatten()
        .unwrap_or_default();
    let state = State::new(root, lock);
    // Only this component's chart is read.
    let one = Platform {
        project: platform.project.clone(),
        components: [(component.name.clone(), component.clone())].into_iter().collect(),
        environments: Default::default(),
        substrates: Default::default(),
        templates: Default::default(),
        secrets: Default::default(),
    };
    let mut resolved = charts::resolve(&ctx.world, &one, &state);
    match resolved.charts.remove(&component.name) {
        Some(Ok(r)) => Ok(r),
        Some(Err(u)) => Err(u.reason()),
        None => Err(Unavailable::NotLocked.reason()),
    }
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
        None => match &e.chart_default {
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
        },
    }
    out.push_str(fields);
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
                            below(&e.path, list),
                            inline(&item.to_json(), secrets, "    ")
                        );
                    }
                    None => {
                        let _ = writeln!(out, "{what}; nothing at `{}`", below(&e.path, list));
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
    out
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

/// A rendered field that came from the values path.
struct Field {
    object: String,
    field: String,
    value: J,
    template: String,
}

/// The rendered fields the value ends up in, when helm renders the chart;
/// else why they cannot be shown.
#[allow(clippy::too_many_arguments)]
fn rendered(
    ctx: &Context,
    platform: &Platform,
    profiles: &Profiles,
    component: &Component,
    env: &str,
    e: &Explanation,
    chart: &Result<Ready, String>,
    secrets: &Secrets,
) -> String {
    let not = |why: &str| {
        format!(
            "\nrendered: the chart of {} was not rendered ({why}), so the fields this value ends up in are not shown\n",
            component.name
        )
    };
    let mode = ctx.inflate.mode.unwrap_or(platform.project.inflate);
    if mode == Mode::Off {
        return not("`inflate: off`");
    }
    if ctx.inflate.helm.is_none() {
        return not("helm is not on the PATH");
    }
    if let Err(why) = chart {
        return not(why);
    }
    let opts = Options {
        env: Some(env.to_owned()),
        inflate: ctx.inflate.clone(),
        ..Options::default()
    };
    let compiled = match pipeline::compile(&ctx.world, &ctx.sources, &opts) {
        Ok(c) => c,
        Err(mut diags) => {
            ctx.report(&mut diags);
            return not("the environment does not compile; see the errors above");
        }
    };
    let Some(r) = compiled.renders.iter().find(|r| r.env == env) else {
        return not("the environment was not compiled");
    };
    let Some(objects) = r.charts.get(&component.name) else {
        return not("helm did not render it");
    };
    let mut fields = traced(&compiled.platform, profiles, env, r, component, &e.path);
    if fields.is_empty() {
        let value = e
            .value
            .as_ref()
            .map(yaml::Node::to_json)
            .or_else(|| e.chart_default.as_ref().map(|d| d.value.clone()));
        if let (Some(value), Some(key)) = (value.filter(|v| !v.is_null()), e.path.last_key()) {
            let by_item = matches!(e.path.0.last(), Some(Seg::Index(_)));
            for o in objects {
                let Source::Chart { template } = &o.source else {
                    continue;
                };
                let mut found = Vec::new();
                search(&o.value, &mut ValuesPath::default(), key, by_item, &value, &mut found);
                for (field, v) in found {
                    fields.push(Field {
                        object: o.id(),
                        field: field.to_string(),
                        value: v,
                        template: template.clone(),
                    });
                }
            }
        }
    }
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
        let _ = writeln!(out, "  -> {} {} = {value} ({})", f.object, f.field, f.template);
    }
    out
}

/// The fields the rules' facts trace to the values path.
fn traced(
    platform: &Platform,
    profiles: &Profiles,
    env: &str,
    r: &crate::render::EnvRender,
    component: &Component,
    path: &ValuesPath,
) -> Vec<Field> {
    let (Some(want), Some(environment)) = (path.dotted(), platform.environments.get(env)) else {
        return Vec::new();
    };
    let settings = crate::invariants::Settings::default();
    let facts = facts::Ctx::new(platform, profiles, environment, r, &settings);
    let mut out = Vec::new();
    let pod = "spec.template.spec";
    for w in facts
        .workloads
        .iter()
        .filter(|w| w.component_name() == Some(&component.name))
    {
        let Judged::Chart { template } = &w.judged else {
            continue;
        };
        let vals = [
            (&w.replicas, "spec.replicas".to_owned()),
            (&w.affinity, format!("{pod}.affinity")),
            (&w.topology_spread, format!("{pod}.topologySpreadConstraints")),
            (&w.node_selector, format!("{pod}.nodeSelector")),
            (&w.tolerations, format!("{pod}.tolerations")),
        ];
        for (v, field) in vals {
            if let Some(v) = v
                && v.traced
                && v.path == want
            {
                out.push(Field {
                    object: w.object_id(),
                    field,
                    value: v.value.clone(),
                    template: template.clone(),
                });
            }
        }
    }
    for s in facts
        .services
        .iter()
        .filter(|s| s.component.is_some_and(|c| c.name == component.name))
    {
        let Judged::Chart { template } = &s.judged else {
            continue;
        };
        if let Some(v) = &s.etp
            && v.traced
            && v.path == want
        {
            out.push(Field {
                object: s.object_id(),
                field: "spec.externalTrafficPolicy".into(),
                value: v.value.clone(),
                template: template.clone(),
            });
        }
    }
    out
}

/// Loose equality of a rendered value and a values value: charts quote
/// and convert (`"2"` renders from `2`).
fn same(a: &J, b: &J) -> bool {
    if a == b {
        return true;
    }
    let text = |j: &J| match j {
        J::String(s) => Some(s.clone()),
        J::Number(n) => Some(n.to_string()),
        J::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    matches!((text(a), text(b)), (Some(x), Some(y)) if x == y)
}

/// Fields of a rendered object under the key `key` (or, with `by_item`,
/// items of a list under it) whose value is `want`.
fn search(v: &J, at: &mut ValuesPath, key: &str, by_item: bool, want: &J, out: &mut Vec<(ValuesPath, J)>) {
    match v {
        J::Object(m) => {
            for (k, child) in m {
                at.0.push(Seg::Key(k.clone()));
                if !by_item && k == key && same(child, want) {
                    out.push((at.clone(), child.clone()));
                }
                search(child, at, key, by_item, want, out);
                at.0.pop();
            }
        }
        J::Array(items) => {
            let in_key = matches!(at.0.last(), Some(Seg::Key(k)) if k == key);
            for (i, item) in items.iter().enumerate() {
                at.0.push(Seg::Index(i));
                if by_item && in_key && same(item, want) {
                    out.push((at.clone(), item.clone()));
                }
                search(item, at, key, by_item, want, out);
                at.0.pop();
            }
        }
        _ => {}
    }
}
