//! Likely typos in values layers: a key that an environment or substrate
//! layer sets, that no lower layer and no chart default has, and that is a
//! letter or two away from a key that does exist at the same level
//! (`replcas: 2` next to the chart's `replicas`). Helm hands such a key to
//! the chart, which ignores it, so the layer silently changes nothing.
//!
//! What the chart has is read from its values.yaml when strata has the
//! chart, else from the paths its profile names; a component with neither
//! is not checked. Keys of maps that charts take as they are (labels,
//! annotations, environment variables, extra arguments, a map whose chart
//! default is `{}`) are never flagged.

use std::collections::BTreeSet;

use serde_json::Value as J;

use crate::diag::{Diagnostic, codes};
use crate::load::Platform;
use crate::load::decode::typo_of;
use crate::profiles::Profiles;
use crate::profiles::known::{self as explain, Knowledge, KnownChart, ProfileDoc};
use crate::render::EnvRender;
use crate::yaml::path::{Seg, ValuesPath};
use crate::yaml::{Node, Origin, Value};

/// Keys whose mapping a chart passes on as written, in lower case.
const FREE_FORM: &[&str] = &[
    "env",
    "envfrom",
    "args",
    "command",
    "nodeselector",
    "tolerations",
    "affinity",
    "resources",
    "data",
    "stringdata",
];

/// Whether the keys under `key` are the user's own, not the chart's.
fn free_form(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    FREE_FORM.contains(&k.as_str()) || k.ends_with("annotations") || k.ends_with("labels") || k.starts_with("extra")
}

/// The most keys a mapping may have for its unknown keys to be checked for typos.
const MAX_TYPO_KEYS: usize = 1000;

/// A key that looks like a typo.
struct Suspect {
    origin: Origin,
    path: ValuesPath,
    like: String,
}

/// Walks a layer against what is known at the same place: the chart's
/// defaults (`chart`) and those with every lower layer's keys (`known`).
fn walk(node: &Node, chart: Option<&J>, known: &J, path: &mut ValuesPath, out: &mut Vec<Suspect>) {
    let (Value::Map(m), Some(known_map)) = (&node.value, known.as_object()) else {
        return;
    };
    for (key, entry) in m.iter() {
        match known_map.get(key) {
            Some(k) => {
                let chart_here = chart.and_then(|c| c.get(key));
                let empty_default = chart_here.is_some_and(|c| c.as_object().is_some_and(|o| o.is_empty()));
                if free_form(key) || empty_default {
                    continue;
                }
                path.0.push(Seg::Key(key.clone()));
                walk(&entry.node, chart_here, k, path, out);
                path.0.pop();
            }
            // A mapping of thousands of keys is data, not a chart's settings:
            // comparing every unknown key with every known one would take
            // quadratic time for no useful suggestion.
            None if known_map.len() > MAX_TYPO_KEYS || m.len() > MAX_TYPO_KEYS => {}
            None => {
                let keys: Vec<&str> = known_map.keys().map(String::as_str).collect();
                if let Some(like) = typo_of(key, &keys) {
                    out.push(Suspect {
                        origin: entry.key_origin.clone(),
                        path: path.then(&[Seg::Key(key.clone())]),
                        like: like.to_owned(),
                    });
                }
            }
        }
    }
}

/// Warnings for likely typos in every layer above the base, of every
/// component in the compiled environments.
pub fn check(platform: &Platform, profiles: &Profiles, renders: &[EnvRender]) -> Vec<Diagnostic> {
    check_with(platform, profiles, renders, &mut BTreeSet::new())
}

/// [`check`], for environments compiled one at a time: `seen` holds the
/// lines already reported, so a typo in a layer several environments share
/// is reported once.
pub fn check_with(
    platform: &Platform,
    profiles: &Profiles,
    renders: &[EnvRender],
    seen: &mut BTreeSet<crate::yaml::Origin>,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for c in platform.components.values() {
        let info = renders.iter().find_map(|r| r.chart_info.get(&c.name));
        let profile = profiles.for_component(c);
        let knowledge = Knowledge {
            chart: info.map(|i| KnownChart {
                name: i.name.clone(),
                version: i.version.clone(),
                location: String::new(),
                defaults: explain::chart_defaults(i),
            }),
            profile: profile.map(|p| ProfileDoc {
                node: &p.node,
                file: &p.file,
                versions: &p.versions_text,
            }),
        };
        let source = match (info, profile) {
            (Some(i), _) => format!("the values.yaml of chart {} {}", i.name, i.version),
            (None, Some(p)) => format!("the chart profile {} ({})", p.chart, p.file),
            (None, None) => continue,
        };
        let chart = explain::known_tree(&knowledge);
        let chart_only = knowledge.chart.as_ref().map(|k| &k.defaults);
        for r in renders.iter().filter(|r| r.merged.contains_key(&c.name)) {
            let Some(env) = platform.environments.get(&r.env) else {
                continue;
            };
            let files = platform.layer_files(env);
            let mut known = chart.clone();
            let mut below: Vec<&str> = Vec::new();
            for (i, file) in files.iter().enumerate() {
                let Some(layer) = c.layers.get(file) else {
                    continue;
                };
                if i > 0 {
                    let mut found = Vec::new();
                    walk(layer, chart_only, &known, &mut ValuesPath::default(), &mut found);
                    for s in found {
                        if !seen.insert(s.origin.clone()) {
                            continue;
                        }
                        let message = if below.is_empty() {
                            format!(
                                "`{}` is not in {source}, and component {} has no lower layer",
                                s.path, c.name
                            )
                        } else {
                            format!(
                                "`{}` is in no lower layer of component {} ({}) and not in {source}",
                                s.path,
                                c.name,
                                below.join(", ")
                            )
                        };
                        out.push(
                            Diagnostic::warning(codes::VALUES_TYPO, s.origin, message)
                                .with_label("unknown key")
                                .with_note(
                                    "Helm hands a key the chart does not read to the chart, which ignores it: this line may change nothing",
                                )
                                .with_help(format!("did you mean `{}`?", s.like)),
                        );
                    }
                }
                below.push(file.as_str());
                union_layer(&mut known, layer);
            }
        }
    }
    out
}

/// [`explain::union_into`] of a layer's keys: the mappings, with `null` for
/// every other value (the walk reads only keys), so that a large list or
/// text in a layer is not copied.
fn union_layer(tree: &mut J, layer: &Node) {
    match (tree, &layer.value) {
        (J::Object(t), Value::Map(m)) => {
            for (k, e) in m.iter() {
                match t.get_mut(k) {
                    Some(x) => union_layer(x, &e.node),
                    None => {
                        let mut v = J::Null;
                        union_layer(&mut v, &e.node);
                        t.insert(k.clone(), v);
                    }
                }
            }
        }
        (t, Value::Map(_)) => {
            *t = J::Object(Default::default());
            union_layer(t, layer);
        }
        // Only the keys of mappings matter to the walk; what is under any
        // other value only has to be there.
        (t, _) if !t.is_object() => *t = J::Null,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn node(text: &str) -> Node {
        crate::yaml::parse(&Arc::from("values-staging.yaml"), text).unwrap()
    }

    fn suspects(layer: &str, chart: J, lower: &str) -> Vec<(String, String, u32)> {
        let mut known = chart.clone();
        explain::union_into(&mut known, &node(lower).to_json());
        let mut out = Vec::new();
        walk(&node(layer), Some(&chart), &known, &mut ValuesPath::default(), &mut out);
        out.into_iter()
            .map(|s| (s.path.to_string(), s.like, s.origin.line))
            .collect()
    }

    #[test]
    fn nearness() {
        assert_eq!(typo_of("replcas", &["replicas", "image"]), Some("replicas"));
        assert_eq!(typo_of("Replicas", &["replicas"]), Some("replicas"));
        assert_eq!(typo_of("replicas", &["replicas"]), None);
        // Short keys: one edit at most.
        assert_eq!(typo_of("tag", &["tags"]), Some("tags"));
        assert_eq!(typo_of("tls", &["ttl"]), None);
        assert_eq!(typo_of("ab", &["xy"]), None);
        assert_eq!(typo_of("image", &["ingress"]), None);
        assert_eq!(
            crate::load::decode::near("deploymnt", &["deployment", "service"]),
            vec!["deployment"]
        );
        assert!(crate::load::decode::near("zzz", &["deployment"]).is_empty());
    }

    #[test]
    fn flags_near_misses_of_known_keys_only() {
        let chart = serde_json::json!({
            "replicas": 1,
            "image": {"repository": "nginx", "tag": "1"},
            "podAnnotations": {},
            "settings": {},
            "service": {"type": "ClusterIP", "annotations": {}},
        });
        let found = suspects(
            "replcas: 2\nimage:\n  tga: x\n  digest: y\npodAnnotations:\n  replcas: 1\nsettings:\n  replcas: 1\nservice:\n  annotations: {replcas: 1}\n  tpye: LoadBalancer\nbrandNew: {replcas: 1}\nlabels: {replicaz: 1}\n",
            chart,
            "image:\n  pullPolicy: Always\n",
        );
        assert_eq!(
            found,
            vec![
                ("replcas".to_owned(), "replicas".to_owned(), 1),
                ("image.tga".to_owned(), "tag".to_owned(), 3),
                ("service.tpye".to_owned(), "type".to_owned(), 11),
            ]
        );
        // A key of a lower layer is known.
        assert!(
            suspects(
                "image: {pullPolicy: IfNotPresent}\n",
                serde_json::json!({}),
                "image: {pullPolicy: Always}\n"
            )
            .is_empty()
        );
        // Lists are not looked into.
        assert!(
            suspects(
                "items: [{replcas: 1}]\n",
                serde_json::json!({"items": [{"replicas": 1}]}),
                "{}\n"
            )
            .is_empty()
        );
    }
}
