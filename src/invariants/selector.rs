//! Kubernetes label selectors with the API server's semantics: every
//! `matchLabels` pair AND every `matchExpressions` requirement must hold.
//! `In` needs the key with one of the values, `NotIn` holds when the key is
//! absent or has none of them, `Exists` / `DoesNotExist` test the key only.

use std::collections::BTreeMap;

use serde_json::Value as J;

pub type Labels = BTreeMap<String, String>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

/// One requirement, and where it was written (for pointing at it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Req {
    /// `matchLabels.<key>: <value>`.
    Label { key: String, value: String },
    /// `matchExpressions[index]`.
    Expr {
        index: usize,
        key: String,
        op: Op,
        values: Vec<String>,
    },
}

impl Req {
    pub fn holds(&self, labels: &Labels) -> bool {
        match self {
            Req::Label { key, value } => labels.get(key) == Some(value),
            Req::Expr { key, op, values, .. } => match op {
                Op::In => labels.get(key).is_some_and(|v| values.contains(v)),
                Op::NotIn => labels.get(key).is_none_or(|v| !values.contains(v)),
                Op::Exists => labels.contains_key(key),
                Op::DoesNotExist => !labels.contains_key(key),
            },
        }
    }

    /// The dotted path of the requirement inside the selector, and a list index.
    pub fn path(&self) -> (String, Option<usize>) {
        match self {
            Req::Label { key, .. } => (format!("matchLabels.{key}"), None),
            Req::Expr { index, .. } => ("matchExpressions".to_owned(), Some(*index)),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Req::Label { key, value } if value.is_empty() => format!("{key}=\"\""),
            Req::Label { key, value } => format!("{key}={value}"),
            Req::Expr { key, op, values, .. } => match op {
                Op::In => format!("{key} in ({})", values.join(", ")),
                Op::NotIn => format!("{key} notin ({})", values.join(", ")),
                Op::Exists => key.clone(),
                Op::DoesNotExist => format!("!{key}"),
            },
        }
    }
}

/// A parsed `LabelSelector`. An empty selector selects everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selector {
    pub reqs: Vec<Req>,
}

fn string_of(v: &J) -> Option<String> {
    match v {
        J::String(s) => Some(s.clone()),
        J::Bool(b) => Some(b.to_string()),
        J::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl Selector {
    /// A `LabelSelector` (`matchLabels`, `matchExpressions`).
    pub fn from_label_selector(v: &J) -> Result<Selector, String> {
        let Some(map) = v.as_object() else {
            return Err("a label selector must be a mapping".into());
        };
        let mut reqs = Vec::new();
        for key in map.keys() {
            if key != "matchLabels" && key != "matchExpressions" {
                return Err(format!("unknown selector field `{key}`"));
            }
        }
        if let Some(ml) = map.get("matchLabels").filter(|m| !m.is_null()) {
            let Some(ml) = ml.as_object() else {
                return Err("`matchLabels` must be a mapping".into());
            };
            for (k, v) in ml {
                let value = string_of(v).ok_or_else(|| format!("`matchLabels.{k}` must be a string"))?;
                reqs.push(Req::Label { key: k.clone(), value });
            }
        }
        if let Some(me) = map.get("matchExpressions").filter(|m| !m.is_null()) {
            let Some(items) = me.as_array() else {
                return Err("`matchExpressions` must be a list".into());
            };
            for (index, item) in items.iter().enumerate() {
                let key = item["key"]
                    .as_str()
                    .ok_or_else(|| format!("matchExpressions[{index}] has no `key`"))?
                    .to_owned();
                let op = match item["operator"].as_str() {
                    Some("In") => Op::In,
                    Some("NotIn") => Op::NotIn,
                    Some("Exists") => Op::Exists,
                    Some("DoesNotExist") => Op::DoesNotExist,
                    Some(o) => {
                        return Err(format!(
                            "matchExpressions[{index}]: operator `{o}` is not In, NotIn, Exists or DoesNotExist"
                        ));
                    }
                    None => return Err(format!("matchExpressions[{index}] has no `operator`")),
                };
                let values: Vec<String> = match &item["values"] {
                    J::Null => Vec::new(),
                    J::Array(vs) => vs.iter().filter_map(string_of).collect(),
                    _ => return Err(format!("matchExpressions[{index}].values must be a list")),
                };
                match op {
                    Op::In | Op::NotIn if values.is_empty() => {
                        return Err(format!(
                            "matchExpressions[{index}]: `{}` needs at least one value",
                            item["operator"].as_str().unwrap_or("")
                        ));
                    }
                    Op::Exists | Op::DoesNotExist if !values.is_empty() => {
                        return Err(format!(
                            "matchExpressions[{index}]: `{}` takes no values",
                            item["operator"].as_str().unwrap_or("")
                        ));
                    }
                    _ => {}
                }
                reqs.push(Req::Expr { index, key, op, values });
            }
        }
        Ok(Selector { reqs })
    }

    /// A plain `nodeSelector` mapping: every pair must match.
    pub fn from_map(v: &J) -> Result<Selector, String> {
        let Some(map) = v.as_object() else {
            return Err("a node selector must be a mapping of label to value".into());
        };
        let mut reqs = Vec::new();
        for (k, v) in map {
            let value = string_of(v).ok_or_else(|| format!("`{k}` must be a string"))?;
            reqs.push(Req::Label { key: k.clone(), value });
        }
        Ok(Selector { reqs })
    }

    pub fn matches(&self, labels: &Labels) -> bool {
        self.reqs.iter().all(|r| r.holds(labels))
    }

    /// The first requirement that `labels` fail.
    pub fn first_failing(&self, labels: &Labels) -> Option<&Req> {
        self.reqs.iter().find(|r| !r.holds(labels))
    }
}

/// Pod labels whose value changes with every release of the chart or the
/// software: a spread selecting them stops matching the pods of the next
/// version while both run, in the middle of every rolling update.
const VERSION_KEYS: &[&str] = &[
    "helm.sh/chart",
    "chart",
    "app.kubernetes.io/version",
    "version",
    "pod-template-hash",
    "controller-revision-hash",
];

/// Whether a text holds a version number: three dot-separated runs of
/// digits (`web-1.0.0`, `v1.27.3`), as chart and image versions are written.
pub fn holds_version(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |mut i: usize| {
        let from = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (i > from).then_some(i)
    };
    (0..b.len()).any(|start| {
        if start > 0 && b[start - 1].is_ascii_digit() {
            return false;
        }
        let mut i = start;
        for part in 0..3 {
            match digits(i) {
                Some(end) if part < 2 && b.get(end) == Some(&b'.') => i = end + 1,
                Some(_) if part == 2 => return true,
                _ => return false,
            }
        }
        false
    })
}

/// The labels a selector of the pods should name: every one but those that
/// carry a version (see [`VERSION_KEYS`]), which would stop matching the
/// pods of the next version while both run.
pub fn stable(labels: &Labels) -> Vec<(String, String)> {
    labels
        .iter()
        .filter(|(k, v)| {
            let name = k.rsplit('/').next().unwrap_or(k);
            !VERSION_KEYS.contains(&k.as_str()) && name != "version" && !holds_version(v)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn match_labels_and_expressions_are_anded() {
        let s = Selector::from_label_selector(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["edge", "core"]}]
        }))
        .unwrap();
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "edge")])));
        assert!(!s.matches(&labels(&[("app", "web")])));
        assert!(!s.matches(&labels(&[("app", "db"), ("tier", "edge")])));
    }

    #[test]
    fn not_in_holds_for_missing_keys_and_exists_tests_only_the_key() {
        let s = Selector::from_label_selector(&json!({
            "matchExpressions": [
                {"key": "role", "operator": "NotIn", "values": ["worker"]},
                {"key": "zone", "operator": "Exists"},
                {"key": "gpu", "operator": "DoesNotExist"}
            ]
        }))
        .unwrap();
        assert!(s.matches(&labels(&[("zone", "")])));
        assert!(s.matches(&labels(&[("zone", "a"), ("role", "cp")])));
        assert!(!s.matches(&labels(&[("zone", "a"), ("role", "worker")])));
        assert!(!s.matches(&labels(&[("role", "cp")])));
        assert!(!s.matches(&labels(&[("zone", "a"), ("gpu", "1")])));
        let failing = s.first_failing(&labels(&[("zone", "a"), ("gpu", "1")])).unwrap();
        assert_eq!(failing.path(), ("matchExpressions".to_owned(), Some(2)));
    }

    #[test]
    fn empty_selector_selects_everything_and_bad_operators_are_errors() {
        assert!(
            Selector::from_label_selector(&json!({}))
                .unwrap()
                .matches(&Labels::new())
        );
        assert!(Selector::from_label_selector(&json!({"matchExpressions": [{"key": "a", "operator": "Gt"}]})).is_err());
        assert!(Selector::from_label_selector(&json!({"matchExpressions": [{"key": "a", "operator": "In"}]})).is_err());
    }

    #[test]
    fn node_selector_maps_compare_empty_values_exactly() {
        let s = Selector::from_map(&json!({"node-role.kubernetes.io/worker": ""})).unwrap();
        assert!(s.matches(&labels(&[("node-role.kubernetes.io/worker", "")])));
        assert!(!s.matches(&labels(&[("node-role.kubernetes.io/control-plane", "")])));
    }
}
