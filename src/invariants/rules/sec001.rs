//! SEC001: a sensitive contract output reaches the rendered tree.

use crate::invariants::{Ctx, Finding, Sink};
use crate::yaml::{Node, Origin, Value};

pub const NAME: &str = "sensitive-output-leak";

doc!(
    r#"## What it does
Looks for the text of every sensitive contract output (`"sensitive": true`
in `tofu output -json`: the cluster CA, client certificate and key, …) in
the merged values of every component and in every rendered object, and
flags where it was written. strata also removes those texts from every
diagnostic it prints, so that a finding never carries one into a CI log.

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

fn walk(node: &Node, secrets: &crate::load::contract::Secrets, out: &mut Vec<Origin>) {
    match &node.value {
        Value::Str(s) if secrets.occurs_in(s) => out.push(node.origin.clone()),
        Value::Seq(items) => items.iter().for_each(|i| walk(i, secrets, out)),
        Value::Map(m) => m.values().for_each(|e| walk(&e.node, secrets, out)),
        _ => {}
    }
}

/// Whether any key or string of a rendered object holds a sensitive text.
/// (Walking the object finds what a search of its YAML would, without
/// writing the YAML.)
fn json_holds_secret(value: &serde_json::Value, secrets: &crate::load::contract::Secrets) -> bool {
    match value {
        serde_json::Value::String(s) => secrets.occurs_in(s),
        serde_json::Value::Array(items) => items.iter().any(|i| json_holds_secret(i, secrets)),
        serde_json::Value::Object(m) => m
            .iter()
            .any(|(k, v)| secrets.occurs_in(k) || json_holds_secret(v, secrets)),
        _ => false,
    }
}

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    let contract = &ctx.env.contract;
    if contract.secrets.is_empty() {
        return;
    }
    let names: Vec<&str> = contract.sensitive.iter().map(String::as_str).collect();
    let help = "refer to a Secret in the cluster (e.g. through External Secrets) instead of copying the credential";
    let mut seen: Vec<Origin> = Vec::new();
    for (name, merged) in &ctx.render.merged {
        let mut hits = Vec::new();
        walk(&merged.values, &contract.secrets, &mut hits);
        for origin in hits {
            sink.push(
                Finding::new(
                    origin.clone(),
                    format!(
                        "a value of {name} holds a sensitive contract output ({})",
                        names.join(", ")
                    ),
                )
                .label("sensitive text here (redacted)")
                .help(help)
                .component(name),
            );
            seen.push(origin);
        }
    }
    for objects in ctx.render.targets.values() {
        for o in objects {
            if !json_holds_secret(&o.value, &contract.secrets) {
                continue;
            }
            let mut hits = Vec::new();
            if let Some(n) = &o.node {
                walk(n, &contract.secrets, &mut hits);
            }
            // Values already reported above reach the HelmRelease and Application too.
            if let Some(c) = &o.component
                && seen.iter().any(|s| {
                    ctx.platform
                        .components
                        .get(c)
                        .is_some_and(|comp| s.file.starts_with(&comp.dir))
                })
                && o.source == crate::render::Source::Generated
            {
                continue;
            }
            let origin = hits.first().cloned().unwrap_or_else(|| o.origin.clone());
            if seen.contains(&origin) {
                continue;
            }
            seen.push(origin.clone());
            let mut f = Finding::new(
                origin,
                format!(
                    "rendered object {} holds a sensitive contract output ({})",
                    o.id(),
                    names.join(", ")
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
}
