//! The rendered fields a value ends up in, when helm renders the chart:
//! the environment compiled, and the fields of the component's rendered
//! objects that the rules' facts trace to the values path and that the
//! value reaches when the chart is rendered with it changed (see
//! [`probe`]); or, when none is, those under the path's last key that hold
//! the value. A field that a `patches:` entry changes after helm renders
//! it shows the value the patch leaves, and names the patch.

use serde_json::Value as J;

use super::{Explanation, Inputs, probe};
use crate::charts::Ready;
use crate::diag::Diagnostic;
use crate::inflate::Mode;
use crate::invariants::facts::{self, Judged};
use crate::invariants::trace::same_value;
use crate::load::{Component, Platform};
use crate::pipeline::{self, Options};
use crate::profiles::Profiles;
use crate::render::{EnvRender, Source};
use crate::yaml::path::{Seg, ValuesPath};

/// A rendered field that came from the values path.
pub struct Field {
    /// The object, as `Kind/namespace/name`.
    pub object: String,
    pub field: String,
    pub value: J,
    /// Where the value is part of a string the chart renders (an image's
    /// `repository:tag`), that part of `value`.
    pub part: Option<String>,
    /// The chart template that rendered it.
    pub template: String,
    /// The `patches:` entry that changes the field after helm renders it
    /// (its place), when one does; `value` is then what the patch leaves.
    pub patched: Option<crate::yaml::Origin>,
}

/// Why the rendered fields cannot be shown.
pub enum NotRendered {
    /// Charts are not rendered (`inflate: off`).
    InflateOff,
    /// helm is not on the PATH.
    NoHelm,
    /// strata does not have the chart: why.
    NoChart(String),
    /// The environment does not compile: its errors.
    DoesNotCompile(Vec<Diagnostic>),
    /// The environment was not compiled.
    EnvNotCompiled,
    /// helm did not render the component's chart.
    ChartNotRendered,
}

/// The rendered fields the value `e` explains ends up in, when helm renders
/// the chart; else why they cannot be shown.
pub fn rendered_fields(
    inputs: &Inputs<'_>,
    component: &Component,
    env: &str,
    e: &Explanation,
    chart: &Result<Ready, String>,
) -> Result<Vec<Field>, NotRendered> {
    let mode = inputs.inflate.mode.unwrap_or(inputs.platform.project.inflate);
    if mode == Mode::Off {
        return Err(NotRendered::InflateOff);
    }
    if inputs.inflate.helm.is_none() {
        return Err(NotRendered::NoHelm);
    }
    if let Err(why) = chart {
        return Err(NotRendered::NoChart(why.clone()));
    }
    let opts = Options {
        env: Some(env.to_owned()),
        inflate: inputs.inflate.clone(),
        ..Options::default()
    };
    let compiled = pipeline::compile(inputs.world, inputs.sources, &opts).map_err(NotRendered::DoesNotCompile)?;
    let Some(r) = compiled.renders.iter().find(|r| r.env == env) else {
        return Err(NotRendered::EnvNotCompiled);
    };
    let Some(objects) = r.charts.get(&component.name) else {
        return Err(NotRendered::ChartNotRendered);
    };
    let mut fields = traced(&compiled.platform, inputs.profiles, env, r, component, &e.path);
    if let Ok(ready) = chart {
        for f in probed(inputs, &compiled.platform, r, component, e, ready) {
            if !fields.iter().any(|x| x.object == f.object && x.field == f.field) {
                fields.push(f);
            }
        }
    }
    if fields.is_empty() {
        let value = e
            .value
            .as_ref()
            .map(crate::yaml::Node::to_json)
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
                        part: None,
                        template: template.clone(),
                        patched: None,
                    });
                }
            }
        }
    }
    let env = &compiled.platform.environments[env];
    patched(&mut fields, component, env, objects);
    Ok(fields)
}

/// Marks each field that a patch of the component (in its config.yaml or
/// the environment's) changes, with the value the patched object holds.
fn patched(
    fields: &mut [Field],
    component: &Component,
    env: &crate::load::Environment,
    objects: &[crate::render::Object],
) {
    let patches: Vec<&crate::load::component::Patch> = component
        .patches
        .iter()
        .chain(
            env.patches
                .iter()
                .filter(|p| p.component.as_deref().is_none_or(|c| c == component.name)),
        )
        .filter(|p| !p.on_generated())
        .collect();
    if patches.is_empty() {
        return;
    }
    for f in fields.iter_mut() {
        let Some(o) = objects.iter().find(|o| o.id() == f.object) else {
            continue;
        };
        let Ok(path) = ValuesPath::parse(&f.field) else {
            continue;
        };
        let pointer = pointer(&path);
        let touches = |op: &J| {
            op["path"].as_str().is_some_and(|p| {
                p == pointer || pointer.starts_with(&format!("{p}/")) || p.starts_with(&format!("{pointer}/"))
            })
        };
        let by = patches.iter().rev().find(|p| {
            p.targets(o.kind(), o.name(), o.namespace()) && p.ops.as_array().is_some_and(|ops| ops.iter().any(touches))
        });
        if let Some(p) = by {
            f.value = path.lookup_json(&o.value).cloned().unwrap_or(J::Null);
            f.part = None;
            f.patched = Some(p.origin.clone());
        }
    }
}

/// A path in a rendered object as an RFC 6901 JSON pointer, as patches
/// name it.
fn pointer(path: &ValuesPath) -> String {
    path.0
        .iter()
        .map(|s| match s {
            Seg::Key(k) => format!("/{}", k.replace('~', "~0").replace('/', "~1")),
            Seg::Index(i) => format!("/{i}"),
        })
        .collect()
}

/// The fields the value reaches, found by rendering the chart again with
/// the value replaced by a marker (see [`probe`]); none when helm cannot
/// render it so, or the value is neither a string nor an integer.
fn probed(
    inputs: &Inputs<'_>,
    platform: &Platform,
    r: &EnvRender,
    component: &Component,
    e: &Explanation,
    ready: &Ready,
) -> Vec<Field> {
    let value = e
        .value
        .as_ref()
        .map(crate::yaml::Node::to_json)
        .or_else(|| e.chart_default.as_ref().map(|d| d.value.clone()));
    let (Some(value), Some(merged)) = (value, r.merged.get(&component.name)) else {
        return Vec::new();
    };
    if probe::marker(&value, "").is_none() {
        return Vec::new();
    }
    let values = merged.values.to_json();
    let render = |v: &J| crate::inflate::probe::render_with(inputs.inflate, platform, r, &component.name, ready, v);
    let Ok(plain) = render(&values) else {
        return Vec::new();
    };
    let text = serde_json::to_string(&plain.iter().map(|p| &p.value).collect::<Vec<_>>()).unwrap_or_default();
    let Some(m) = probe::marker(&value, &text) else {
        return Vec::new();
    };
    let new = m.number.map_or_else(|| J::String(m.text.clone()), J::from);
    let Some(Ok(marked)) = probe::with_value(&values, &e.path, new).map(|v| render(&v)) else {
        return Vec::new();
    };
    let current = match &value {
        J::String(s) => s.clone(),
        other => other.to_string(),
    };
    probe::carriers(&plain, &marked, &m, &current, &component.namespace)
}

/// The fields the rules' facts trace to the values path.
fn traced(
    platform: &Platform,
    profiles: &Profiles,
    env: &str,
    r: &EnvRender,
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
                    part: None,
                    template: template.clone(),
                    patched: None,
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
                part: None,
                template: template.clone(),
                patched: None,
            });
        }
    }
    out
}

/// Fields of a rendered object under the key `key` (or, with `by_item`,
/// items of a list under it) whose value is `want`.
fn search(v: &J, at: &mut ValuesPath, key: &str, by_item: bool, want: &J, out: &mut Vec<(ValuesPath, J)>) {
    match v {
        J::Object(m) => {
            for (k, child) in m {
                at.0.push(Seg::Key(k.clone()));
                if !by_item && k == key && same_value(want, child) {
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
                if by_item && in_key && same_value(want, item) {
                    out.push((at.clone(), item.clone()));
                }
                search(item, at, key, by_item, want, out);
                at.0.pop();
            }
        }
        _ => {}
    }
}
