//! The template engine: minijinja with strict undefined, no auto-escape, a
//! fuel limit against templates that loop forever, and no file-system loader
//! (templates can include only the built-in and repository templates strata
//! has already read, so nothing can reach outside the repository).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use minijinja::{Environment, UndefinedBehavior};

use crate::diag::{Diagnostic, codes};
use crate::yaml::Origin;

pub use crate::load::templates::BUILTIN;

/// The work one template render may do before it is stopped. minijinja
/// charges one fuel an instruction and one fuel for every 64 bytes of text,
/// list or map a template builds or writes, so this bounds both the time and
/// the memory of a render: a million instructions, or 64 MiB built.
pub const FUEL: u64 = 1_000_000;

/// Largest output of one template render, in bytes: what a manifest file may
/// hold ([`crate::yaml::MAX_INPUT_BYTES`]).
pub const MAX_OUTPUT_BYTES: usize = crate::yaml::MAX_INPUT_BYTES;

/// Renders the template `name` with `ctx`, within the fuel and output limits.
pub fn render(engine: &Environment<'_>, name: &str, ctx: minijinja::Value) -> Result<String, minijinja::Error> {
    let text = engine.get_template(name)?.render(ctx)?;
    if text.len() > MAX_OUTPUT_BYTES {
        return Err(minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!(
                "{OUTPUT_TOO_LARGE}: it wrote {} bytes, over the limit of {MAX_OUTPUT_BYTES} bytes",
                text.len()
            ),
        ));
    }
    Ok(text)
}

/// The start of the message of a render whose output is over the limit.
const OUTPUT_TOO_LARGE: &str = "the template's output is too large";

/// Builds the engine with the built-in templates, the repository's overrides
/// (`overrides`, by name, read from `templates_dir`) and extra named sources
/// (component manifests, by path).
pub fn engine<'s>(
    overrides: &'s BTreeMap<String, String>,
    templates_dir: &str,
    extra: &[(&'s str, &'s str)],
) -> Result<Environment<'s>, Diagnostic> {
    build(overrides, templates_dir, extra, Cow::Borrowed)
}

/// [`engine`], holding its own copy of every source: an engine one compile
/// hands another (see [`super::Shared`]).
pub fn engine_owned(
    overrides: &BTreeMap<String, String>,
    templates_dir: &str,
    extra: &[(&str, &str)],
) -> Result<Environment<'static>, Diagnostic> {
    build(overrides, templates_dir, extra, |s| Cow::Owned(s.to_owned()))
}

/// [`engine`], each name and source of the repository's taken by `keep`
/// (borrowed, or copied).
fn build<'a, 's>(
    overrides: &'a BTreeMap<String, String>,
    templates_dir: &str,
    extra: &[(&'a str, &'a str)],
    keep: impl Fn(&'a str) -> Cow<'s, str>,
) -> Result<Environment<'s>, Diagnostic> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.set_debug(true);
    env.set_fuel(Some(FUEL));
    env.set_recursion_limit(64);
    env.add_filter("to_yaml", to_yaml);
    env.add_filter("tojson", strict_tojson);
    env.add_filter("nindent", nindent);
    for (name, src) in BUILTIN {
        if !overrides.contains_key(*name) {
            env.add_template(name, src)
                .map_err(|e| template_error(&format!("<builtin>/templates/{name}"), &e))?;
        }
    }
    for (name, src) in overrides {
        env.add_template_owned(keep(name), keep(src))
            .map_err(|e| template_error(&crate::world::join(templates_dir, name), &e))?;
    }
    for (name, src) in extra {
        env.add_template_owned(keep(name), keep(src))
            .map_err(|e| template_error(name, &e))?;
    }
    Ok(env)
}

/// `tojson`, but an undefined value is an error, as strict undefined means
/// everywhere else (the built-in filter would quietly write `null`).
fn strict_tojson(value: minijinja::Value) -> Result<minijinja::Value, minijinja::Error> {
    if value.is_undefined() {
        return Err(minijinja::Error::new(
            minijinja::ErrorKind::UndefinedError,
            "an undefined value was passed to tojson",
        ));
    }
    serde_json::to_string(&value)
        .map(minijinja::Value::from_safe_string)
        .map_err(|e| minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string()))
}

fn to_yaml(value: minijinja::Value) -> Result<String, minijinja::Error> {
    if value.is_undefined() {
        return Err(minijinja::Error::new(
            minijinja::ErrorKind::UndefinedError,
            "an undefined value was passed to to_yaml",
        ));
    }
    let json = serde_json::to_value(&value)
        .map_err(|e| minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string()))?;
    let opts = serde_saphyr::ser_options! { indent_step: 2 };
    let s = serde_saphyr::to_string_with_options(&json, opts)
        .map_err(|e| minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string()))?;
    Ok(s.trim_end_matches('\n').to_owned())
}

fn nindent(value: String, width: usize) -> Result<String, minijinja::Error> {
    // Checked before anything is built: fuel is charged for a filter's
    // result only once it exists.
    let lines = value.lines().count();
    let size = lines
        .checked_mul(width.saturating_add(1))
        .and_then(|n| n.checked_add(value.len()))
        .filter(|n| *n <= MAX_OUTPUT_BYTES);
    if size.is_none() {
        return Err(minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!(
                "{OUTPUT_TOO_LARGE}: nindent({width}) of {lines} line(s) would build more than {MAX_OUTPUT_BYTES} bytes"
            ),
        ));
    }
    let pad = " ".repeat(width);
    let mut out = String::with_capacity(size.unwrap_or(0));
    for line in value.lines() {
        out.push('\n');
        if !line.is_empty() {
            out.push_str(&pad);
        }
        out.push_str(line);
    }
    Ok(out)
}

/// A template error as a diagnostic at the template's file and line.
pub fn template_error(path: &str, e: &minijinja::Error) -> Diagnostic {
    let file: Arc<str> = Arc::from(e.name().filter(|n| !n.is_empty()).unwrap_or(path));
    let line = e.line().unwrap_or(1).max(1) as u32;
    let (col, len) = e
        .range()
        .zip(e.template_source())
        .map(|(r, src)| {
            // The engine's range may fall inside a character (a syntax error
            // at a multi-byte one): move each end back to a character start.
            let at = |i: usize| {
                (0..=i.min(src.len()))
                    .rev()
                    .find(|&i| src.is_char_boundary(i))
                    .unwrap_or(0)
            };
            let (start, end) = (at(r.start), at(r.end.max(r.start)));
            let line_start = src[..start].rfind('\n').map_or(0, |i| i + 1);
            let col = src[line_start..start].chars().count() as u32 + 1;
            (col, src[start..end].chars().count() as u32)
        })
        .unwrap_or((1, 0));
    let mut msg = e
        .detail()
        .map_or_else(|| e.kind().to_string(), |d| format!("{}: {d}", e.kind()));
    if e.kind() == minijinja::ErrorKind::OutOfFuel {
        msg = "the template ran too long or built too much: it loops without end, or builds text \
               or lists beyond the limit (a million steps, or 64 MiB of text)"
            .into();
    }
    let too_large = e.detail().is_some_and(|d| d.starts_with(OUTPUT_TOO_LARGE));
    if too_large {
        msg = e.detail().unwrap_or_default().to_owned();
    }
    let mut d = Diagnostic::error(
        codes::TEMPLATE,
        Origin::new(&file, line, col, len),
        format!("template error: {msg}"),
    )
    .with_label("here");
    d = match e.kind() {
        minijinja::ErrorKind::UndefinedError => d.with_help(
            "templates see `env`, `substrate`, `contract`, `values` and `component`; check the name, or guard it with `is defined`",
        ),
        minijinja::ErrorKind::OutOfFuel => d.with_help(
            "bound the loop, and build no text by repeating strings (`\"x\" * n`, `~` in a loop); a template may do a fixed amount of work",
        ),
        _ if too_large => d.with_help(format!(
            "a template writes one manifest file, at most {} MiB; generate less, or split it into several templates",
            MAX_OUTPUT_BYTES / (1024 * 1024)
        )),
        _ => d.with_help("fix the template at this place"),
    };
    d
}

/// Finds references to sensitive contract outputs in a template's source.
pub fn sensitive_references(
    path: &Arc<str>,
    source: &str,
    sensitive: &std::collections::BTreeSet<String>,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let patterns: Vec<(&String, [String; 3])> = sensitive
        .iter()
        .map(|name| {
            let written = [
                format!("contract.{name}"),
                format!("contract[\"{name}\"]"),
                format!("contract['{name}']"),
            ];
            (name, written)
        })
        .collect();
    if patterns.is_empty() {
        return out;
    }
    for (lineno, line) in source.lines().enumerate() {
        if !line.contains("contract") {
            continue;
        }
        for (name, written) in &patterns {
            for pat in written {
                let mut from = 0;
                while let Some(pos) = line[from..].find(pat.as_str()) {
                    let start = from + pos;
                    let end = start + pat.len();
                    let boundary = line[end..]
                        .chars()
                        .next()
                        .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
                    if boundary {
                        let col = line[..start].chars().count() as u32 + 1;
                        out.push(
                            Diagnostic::error(
                                codes::SENSITIVE,
                                Origin::new(path, lineno as u32 + 1, col, pat.chars().count() as u32),
                                format!("template refers to the sensitive contract output `{name}`"),
                            )
                            .with_label("sensitive output")
                            .with_help(
                                "strata never renders sensitive outputs; deliver the secret through External Secrets or a SOPS-encrypted Secret instead",
                            ),
                        );
                    }
                    from = end;
                }
            }
        }
    }
    out
}

/// Helm values as templates see them, read where a template reads them:
/// a mapping becomes an object that looks a key up when asked, and lists
/// its keys, sorted, only when a template iterates it. Converting a values
/// tree of a hundred thousand keys into the template engine's own maps for
/// every environment cost more than everything else a render does with it.
pub fn values(node: &crate::yaml::Node) -> minijinja::Value {
    use crate::yaml::Value as V;
    use minijinja::Value;
    match &node.value {
        V::Map(m) => Value::from_object(ValuesMap(std::sync::Arc::clone(m))),
        V::Seq(items) => Value::from(items.iter().map(values).collect::<Vec<_>>()),
        // A scalar as the whole tree's conversion gives it.
        _ => Value::from(minijinja::value::Serde(crate::yaml::SortedNode(node))),
    }
}

/// A mapping of Helm values, for templates (see [`values`]).
#[derive(Debug)]
struct ValuesMap(std::sync::Arc<crate::yaml::Map>);

impl minijinja::value::Object for ValuesMap {
    fn get_value(self: &std::sync::Arc<Self>, key: &minijinja::Value) -> Option<minijinja::Value> {
        self.0.get(key.as_str()?).map(|e| values(&e.node))
    }

    fn enumerate(self: &std::sync::Arc<Self>) -> minijinja::value::Enumerator {
        let mut keys: Vec<&String> = self.0.keys().collect();
        keys.sort();
        minijinja::value::Enumerator::Values(keys.into_iter().map(|k| minijinja::Value::from(k.as_str())).collect())
    }

    fn enumerator_len(self: &std::sync::Arc<Self>) -> Option<usize> {
        Some(self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Templates see the same values whether the tree is converted whole
    /// (as it once was) or looked up where they read it.
    #[test]
    fn looked_up_values_read_as_converted_values() {
        let text = "b: {z: 1, a: [1, -2, 2.5, null, 'on', {k: v}]}\na: true\nempty: {}\nnum: 18446744073709551615\n";
        let node = crate::yaml::parse(&std::sync::Arc::from("values.yaml"), text).unwrap();
        let template = "{{ values | tojson }}|{{ values.b | tojson }}|{{ values | length }}|{{ 'b' in values }}|\
            {% for k, v in values | items %}{{ k }}:{{ v is mapping }},{% endfor %}|\
            {% for k, v in values | dictsort %}{{ k }},{% endfor %}|{{ values.b.a[5].k }}|\
            {{ values.nope | default('d') }}|{{ values.empty | length }}|{{ values.b | string }}|\
            {{ values.b | to_yaml }}|{{ values.num }}|{{ values.b.a | length }}|{% if values.empty %}t{% else %}f{% endif %}";
        let overrides = BTreeMap::new();
        let engine = engine(&overrides, "templates", &[("t", template)]).unwrap();
        let lazy = render(&engine, "t", minijinja::context! { values => values(&node) }).unwrap();
        let eager = minijinja::Value::from(minijinja::value::Serde(crate::yaml::SortedNode(&node)));
        let whole = render(&engine, "t", minijinja::context! { values => eager }).unwrap();
        assert_eq!(lazy, whole);
        assert!(
            lazy.starts_with(r#"{"a":true,"b":{"a":[1,-2,2.5,null,"on",{"k":"v"}],"z":1},"#),
            "{lazy}"
        );
    }
}
