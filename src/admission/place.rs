//! Where a field of a judged object was decided: its line in a plain
//! manifest, or the values line a chart's field traces back to
//! ([`crate::invariants::trace`]).

use serde_json::Value as J;

use crate::invariants::trace;
use crate::load::Platform;
use crate::render::{EnvRender, Object, Source};
use crate::yaml::{Node, Origin, Value};

/// A field's path in an object: mapping keys and list indexes.
pub type Path = Vec<String>;

/// The value at `path` in a JSON object.
pub fn value_at<'j>(v: &'j J, path: &[String]) -> Option<&'j J> {
    path.iter().try_fold(v, |v, seg| match v {
        J::Object(m) => m.get(seg),
        J::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

fn node_at<'n>(n: &'n Node, path: &[String]) -> Option<&'n Node> {
    path.iter().try_fold(n, |n, seg| match &n.value {
        Value::Map(_) => n.get(seg),
        Value::Seq(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

/// `spec.containers[0].securityContext`, as a user reads a path.
pub fn show(path: &[String]) -> String {
    let mut out = String::new();
    for seg in path {
        if seg.parse::<usize>().is_ok() {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(seg);
        }
    }
    out
}

/// Where the field at `path` of `o` was set, with a note on how it was
/// found; `None` when no line of the user's sets it (a chart default, or
/// a field the template writes by itself).
pub fn locate(
    platform: &Platform,
    render: &EnvRender,
    o: &Object,
    path: &[String],
) -> Option<(Origin, Option<String>)> {
    match &o.source {
        Source::Chart { template } => {
            let c = platform.components.get(o.component.as_deref()?)?;
            let value = value_at(&o.value, path)?;
            if value.is_object() || value.is_array() {
                return None;
            }
            let field = path.join(".");
            let v = trace::trace(
                c,
                render.merged.get(&c.name).map(|m| &m.values),
                render.chart_info.get(&c.name).map(AsRef::as_ref),
                template,
                &field,
                value,
                None,
            );
            (v.set && v.traced).then(|| {
                (
                    v.origin,
                    Some(format!("`{}` renders {} ({template})", v.path, show(path))),
                )
            })
        }
        _ => {
            // The deepest node the manifest has on the way to the field.
            let node = o.node.as_ref()?;
            let mut here = path;
            loop {
                if let Some(n) = node_at(node, here) {
                    return Some((n.origin.clone(), None));
                }
                if here.is_empty() {
                    return None;
                }
                here = &here[..here.len() - 1];
            }
        }
    }
}

/// Where an object as a whole was written: its manifest, or, for a chart's
/// object, the component's chart pin, with the template as a note.
pub fn object_origin(platform: &Platform, o: &Object) -> (Origin, Option<String>) {
    match &o.source {
        Source::Chart { template } => {
            let origin = o
                .component
                .as_deref()
                .and_then(|c| platform.components.get(c))
                .map_or_else(|| o.origin.clone(), crate::profiles::version_origin);
            (origin, Some(format!("the chart renders {} from {template}", o.id())))
        }
        _ => (
            o.node.as_ref().map_or_else(|| o.origin.clone(), |n| n.origin.clone()),
            None,
        ),
    }
}

/// A path written as Kyverno writes one, `/spec/template/spec/`.
pub fn from_pointer(p: &str) -> Path {
    p.split('/').filter(|s| !s.is_empty()).map(str::to_owned).collect()
}
