//! SEC001: a sensitive contract output reaches the rendered tree.

use rayon::prelude::*;
use serde_json::Value as J;

use crate::invariants::{Ctx, Finding, Sink};
use crate::render::Source;
use crate::secrets::Secrets;
use crate::yaml::{Node, Origin, Value};

pub const NAME: &str = "sensitive-output-leak";

doc!(
    r#"## What it does
Looks for every sensitive contract output (`"sensitive": true` in `tofu
output -json`, or `{value: …, sensitive: true}` in a plain contract: the
cluster CA, client certificate and key, …) of every environment in the
merged values of every component and in every rendered object — strings,
keys and numbers, in every environment's output — and flags where it was
written. It finds a secret in any form a value may carry it: raw, escaped
for JSON or YAML, base64-encoded, or one line of a multi-line secret; the
leaves and keys of a sensitive mapping or list count each. Secrets of six
characters or more are found anywhere inside a text; a shorter one only
where a whole value equals it (searching text for two characters would
flag ordinary words). strata also removes those texts from every
diagnostic, snippet, diff and `explain` it prints, so that nothing carries
one into a terminal or a CI log. It runs on every environment, whatever its
topology or substrate type, and cannot be waived.

## Why is this bad?
The rendered tree is committed to Git and read by Argo CD and Flux; a
credential copied into a values file or a manifest is published to everyone
who can read the repository, and stays in its history.

## Example
```yaml
# gitops/platform/argocd/values.yaml
configs:
  clusterCredentials:
    - server: https://192.168.10.10:6443
      config:
        tlsClientConfig:
          keyData: "-----BEGIN EC PRIVATE KEY----- ..."
```

Use instead:
```yaml
# keep the credential in the secret store and let External Secrets
# create the Secret in the cluster
```
"#
);

/// The origin of every string, key or number of a merged value that holds
/// a secret, with the output it holds.
fn walk<'s>(node: &Node, secrets: &'s Secrets, out: &mut Vec<(Origin, &'s str)>) {
    match &node.value {
        Value::Str(s) => {
            if let Some(o) = secrets.find(s).or_else(|| embedded(s, secrets)) {
                out.push((node.origin.clone(), o));
            }
        }
        Value::Int(_) | Value::UInt(_) | Value::Float(_) => {
            if let Some(o) = secrets.find(&node.to_json().to_string()) {
                out.push((node.origin.clone(), o));
            }
        }
        Value::Seq(items) => items.iter().for_each(|i| walk(i, secrets, out)),
        Value::Map(m) => {
            for (k, e) in m.iter() {
                if let Some(o) = secrets.find(k) {
                    out.push((e.key_origin.clone(), o));
                }
                walk(&e.node, secrets, out);
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
}

/// The output a rendered object holds in any key, string or number, its
/// deferred values (see [`crate::render::Deferred`]) searched where they
/// stand, so that the first output found is the same as in the full object.
/// Values known to hold none (`clean`: the merged values of a component
/// the walk above found nothing in) are not searched again.
fn object_secret<'s>(o: &crate::render::Object, secrets: &'s Secrets, clean: Option<&Node>) -> Option<&'s str> {
    let values = o.values.as_deref().map(|d| &d.node);
    let values = values.filter(|v| !clean.is_some_and(|c| same(c, v)));
    json_secret(&o.value, secrets, values)
}

/// Whether two value trees are one: the same shared mapping, or equal.
fn same(a: &Node, b: &Node) -> bool {
    match (&a.value, &b.value) {
        (Value::Map(x), Value::Map(y)) => std::sync::Arc::ptr_eq(x, y),
        _ => a == b,
    }
}

/// `values`: the deferred values behind the marker, to search there.
fn json_secret<'s>(value: &J, secrets: &'s Secrets, values: Option<&Node>) -> Option<&'s str> {
    match value {
        // Deferred values: searched above when clean, here when not.
        J::String(s) if crate::render::is_values_marker(s) => values.and_then(|node| node_secret(node, secrets)),
        J::String(s) => secrets.find(s).or_else(|| embedded(s, secrets)),
        J::Number(n) => secrets.find(&n.to_string()),
        J::Array(items) => items.iter().find_map(|i| json_secret(i, secrets, values)),
        J::Object(m) => m
            .iter()
            .find_map(|(k, v)| secrets.find(k).or_else(|| json_secret(v, secrets, values))),
        _ => None,
    }
}

/// [`json_secret`] of a node's JSON form: keys in byte order.
fn node_secret<'s>(node: &Node, secrets: &'s Secrets) -> Option<&'s str> {
    match &node.value {
        Value::Str(s) => secrets.find(s).or_else(|| embedded(s, secrets)),
        Value::Int(_) | Value::UInt(_) | Value::Float(_) => match node.to_json() {
            J::Number(n) => secrets.find(&n.to_string()),
            _ => None,
        },
        Value::Seq(items) => items.iter().find_map(|i| node_secret(i, secrets)),
        Value::Map(m) => {
            let mut entries: Vec<(&String, &Node)> = m.iter().map(|(k, e)| (k, &e.node)).collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            entries
                .into_iter()
                .find_map(|(k, v)| secrets.find(k).or_else(|| node_secret(v, secrets)))
        }
        Value::Null | Value::Bool(_) => None,
    }
}

/// A secret too short to search for, as a whole value of a JSON or YAML
/// document held in a string (a config file in a ConfigMap, say).
fn embedded<'s>(s: &str, secrets: &'s Secrets) -> Option<&'s str> {
    if !secrets.has_short() {
        return None;
    }
    if !crate::secrets::looks_structured(s) {
        return None;
    }
    let doc: J = match serde_json::from_str(s) {
        Ok(doc) => doc,
        Err(_) => J::Array(crate::yaml::parse_plain_multi(&std::sync::Arc::from("<embedded>"), s).ok()?),
    };
    json_secret(&doc, secrets, None)
}

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    // Every environment's secrets, in this environment's output.
    let secrets = &ctx.platform.secrets;
    if secrets.is_empty() {
        return;
    }
    let help = "refer to a Secret in the cluster (e.g. through External Secrets) instead of copying the credential";
    let mut seen: Vec<Origin> = Vec::new();
    // The search runs per component and per object side by side; the
    // (rare) hits are then reported in order.
    let components: Vec<_> = ctx.render.merged.iter().filter(|(name, _)| ctx.judges(name)).collect();
    let merged: Vec<(&String, Vec<(Origin, &str)>)> = components
        .par_iter()
        .with_max_len(1)
        .map(|&(name, merged)| {
            let mut hits = Vec::new();
            walk(&merged.values, secrets, &mut hits);
            (name, hits)
        })
        .collect();
    let clean: std::collections::BTreeMap<&str, &Node> = merged
        .iter()
        .filter(|(_, hits)| hits.is_empty())
        .filter_map(|(name, _)| Some((name.as_str(), &ctx.render.merged.get(*name)?.values)))
        .collect();
    for (name, hits) in merged {
        for (origin, output) in hits {
            sink.push(
                Finding::new(
                    origin.clone(),
                    format!("a value of {name} holds a sensitive contract output ({output})"),
                )
                .label("sensitive text here (redacted)")
                .help(help)
                .component(name),
            );
            seen.push(origin);
        }
    }
    // A hydrated chart's objects stand in the targets too: judged once,
    // with the chart's.
    let objects: Vec<&crate::render::Object> = ctx
        .render
        .targets
        .values()
        .flatten()
        .filter(|o| !matches!(o.source, crate::render::Source::Chart { .. }))
        .chain(ctx.render.charts.values().flatten())
        .chain(&ctx.render.substrate)
        .filter(|o| o.component.as_deref().is_none_or(|c| ctx.judges(c)))
        .collect();
    let found: Vec<(&crate::render::Object, &str)> = objects
        .par_iter()
        .with_max_len(16)
        .filter_map(|o| {
            let clean = o.component.as_deref().and_then(|c| clean.get(c)).copied();
            object_secret(o, secrets, clean).map(|output| (*o, output))
        })
        .collect();
    for (o, output) in found {
        let mut hits = Vec::new();
        if let Some(n) = &o.node {
            walk(n, secrets, &mut hits);
        }
        // Values already reported above reach the HelmRelease, the
        // Application and the chart's objects too.
        if let Some(c) = &o.component
            && seen.iter().any(|s| {
                ctx.platform
                    .components
                    .get(c)
                    .is_some_and(|comp| s.file.starts_with(&comp.dir))
            })
            && matches!(o.source, Source::Generated | Source::Chart { .. })
        {
            continue;
        }
        let origin = hits.first().map_or_else(|| o.origin.clone(), |(h, _)| h.clone());
        if seen.contains(&origin) {
            continue;
        }
        seen.push(origin.clone());
        let mut f = Finding::new(
            origin,
            format!(
                "rendered object {} holds a sensitive contract output ({output})",
                o.id()
            ),
        )
        .label("sensitive text here (redacted)")
        .help(help)
        .object(o.id());
        if let Some(c) = &o.component {
            f = f.component(c);
        }
        sink.push(f);
    }
}
