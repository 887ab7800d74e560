//! Helm values as the engines combine them: Helm's map merge (maps merge
//! key by key, everything else replaces, a `null` is kept), `--set`-style
//! paths and typing (Flux `targetPath`, Argo CD `parameters`), and the split
//! of several environments' values into a common base and each
//! environment's layer.

use serde_json::{Map, Value};

/// Merges `over` onto `base` as Helm merges two values files (and Flux's
/// `MergeMaps`): mappings key by key, lists and scalars replace, and a
/// `null` is stored, not removed (Helm drops the chart default for it).
pub fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => merge(existing, v),
                    _ => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// A value as `--set` types it (Helm's strvals): `true`/`false` (any case)
/// a bool, `null` nothing, a decimal integer without a leading zero an
/// integer, anything else a string.
pub fn typed(text: &str) -> Value {
    if text.eq_ignore_ascii_case("true") {
        return Value::Bool(true);
    }
    if text.eq_ignore_ascii_case("false") {
        return Value::Bool(false);
    }
    if text.eq_ignore_ascii_case("null") {
        return Value::Null;
    }
    if text == "0" {
        return Value::from(0);
    }
    if !text.starts_with('0')
        && let Ok(n) = text.parse::<i64>()
    {
        return Value::from(n);
    }
    Value::String(text.to_owned())
}

/// One step of a `--set` path: a key, or a list index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// The most list elements a path may make a list grow to, as Helm's own
/// limit on `--set` indexes.
const MAX_INDEX: usize = 65_536;

/// Splits a `--set` path: keys separated by `.` (`\.` is a dot inside a
/// key), each key optionally followed by `[n]` indexes.
pub fn parse_path(path: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    let mut key = String::new();
    let mut chars = path.chars().peekable();
    let bad = |why: &str| Err(format!("`{path}`: {why}"));
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(n) => key.push(n),
                None => return bad("ends in a backslash"),
            },
            '.' => {
                if key.is_empty() && !matches!(steps.last(), Some(Step::Index(_))) {
                    return bad("has an empty key");
                }
                if !key.is_empty() {
                    steps.push(Step::Key(std::mem::take(&mut key)));
                }
            }
            '[' => {
                if !key.is_empty() {
                    steps.push(Step::Key(std::mem::take(&mut key)));
                }
                let digits: String = chars.by_ref().take_while(|c| *c != ']').collect();
                match digits.parse::<usize>() {
                    Ok(n) if n < MAX_INDEX => steps.push(Step::Index(n)),
                    _ => return bad("has an index that is not a small number"),
                }
            }
            c => key.push(c),
        }
    }
    if !key.is_empty() {
        steps.push(Step::Key(key));
    }
    if steps.is_empty() {
        return bad("is empty");
    }
    Ok(steps)
}

/// Sets `value` at `path` in `root`, making mappings and lists on the way
/// (a list grows with nulls), replacing what is there.
pub fn set_path(root: &mut Value, path: &[Step], value: Value) {
    let Some((first, rest)) = path.split_first() else {
        *root = value;
        return;
    };
    match first {
        Step::Key(k) => {
            if !root.is_object() {
                *root = Value::Object(Map::new());
            }
            if let Value::Object(m) = root {
                let slot = m.entry(k.clone()).or_insert(Value::Null);
                set_path(slot, rest, value);
            }
        }
        Step::Index(i) => {
            if !root.is_array() {
                *root = Value::Array(Vec::new());
            }
            if let Value::Array(list) = root {
                if list.len() <= *i {
                    list.resize(i + 1, Value::Null);
                }
                set_path(&mut list[*i], rest, value);
            }
        }
    }
}

/// Whether two paths overlap: one is the other or lies below it.
pub fn overlaps(a: &[Step], b: &[Step]) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y)
}

/// The paths of every leaf a values mapping sets (a non-mapping value, or
/// an empty mapping), as steps.
pub fn leaf_paths(v: &Value) -> Vec<Vec<Step>> {
    fn walk(v: &Value, at: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, x) in m {
                    at.push(Step::Key(k.clone()));
                    walk(x, at, out);
                    at.pop();
                }
            }
            _ => out.push(at.clone()),
        }
    }
    let mut out = Vec::new();
    walk(v, &mut Vec::new(), &mut out);
    out
}

/// Whether the value at a path is `null`.
pub fn null_at(v: &Value, path: &[Step]) -> bool {
    let mut at = v;
    for s in path {
        let next = match s {
            Step::Key(k) => at.get(k),
            Step::Index(i) => at.get(*i),
        };
        match next {
            Some(n) => at = n,
            None => return false,
        }
    }
    at.is_null()
}

/// What every one of several values mappings sets alike: the keys whose
/// values are equal in all of them, and, where all of them hold a mapping,
/// the common part of those mappings. Merging a value's [`minus`] onto it
/// gives that value back, and no layer ever has to delete a key.
pub fn common(all: &[&Value]) -> Value {
    let Some((first, rest)) = all.split_first() else {
        return Value::Object(Map::new());
    };
    if rest.iter().all(|v| v == first) {
        return (*first).clone();
    }
    let Value::Object(m) = first else {
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    for (k, v) in m {
        let at: Vec<&Value> = all.iter().filter_map(|o| o.get(k)).collect();
        if at.len() != all.len() {
            continue;
        }
        if at.iter().all(|x| *x == v) {
            out.insert(k.clone(), v.clone());
        } else if at.iter().all(|x| x.is_object()) {
            let c = common(&at);
            if c.as_object().is_some_and(|c| !c.is_empty()) {
                out.insert(k.clone(), c);
            }
        }
    }
    Value::Object(out)
}

/// What `v` sets beyond `base` (which [`common`] gave): merged onto `base`,
/// it gives `v`.
pub fn minus(v: &Value, base: &Value) -> Value {
    let (Value::Object(m), Value::Object(b)) = (v, base) else {
        return v.clone();
    };
    let mut out = Map::new();
    for (k, x) in m {
        match b.get(k) {
            Some(y) if y == x => {}
            Some(y) if x.is_object() && y.is_object() => {
                let d = minus(x, y);
                if d.as_object().is_some_and(|d| !d.is_empty()) {
                    out.insert(k.clone(), d);
                }
            }
            _ => {
                out.insert(k.clone(), x.clone());
            }
        }
    }
    Value::Object(out)
}

/// A path for messages: `a.b[0].c`.
pub fn show_path(steps: &[Step]) -> String {
    let mut out = String::new();
    for s in steps {
        match s {
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&k.replace('.', "\\."));
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    if out.is_empty() { "(the root)".into() } else { out }
}

/// Where two values differ: each path (as [`show_path`] writes it) with
/// what `want` and `got` hold there (`None`: unset), at most `limit`.
pub fn differences(want: &Value, got: &Value, limit: usize) -> Vec<(String, Option<Value>, Option<Value>)> {
    fn walk(
        want: Option<&Value>,
        got: Option<&Value>,
        at: &mut Vec<Step>,
        out: &mut Vec<(String, Option<Value>, Option<Value>)>,
        limit: usize,
    ) {
        if out.len() >= limit || want == got {
            return;
        }
        if let (Some(Value::Object(w)), Some(Value::Object(g))) = (want, got) {
            let keys: std::collections::BTreeSet<&String> = w.keys().chain(g.keys()).collect();
            for k in keys {
                at.push(Step::Key(k.clone()));
                walk(w.get(k), g.get(k), at, out, limit);
                at.pop();
            }
            return;
        }
        out.push((show_path(at), want.cloned(), got.cloned()));
    }
    let mut out = Vec::new();
    walk(Some(want), Some(got), &mut Vec::new(), &mut out, limit);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_is_helms_with_nulls_kept() {
        let mut a = json!({"a": {"b": 1, "c": [1, 2]}, "d": 1, "e": {"f": 1}});
        merge(&mut a, &json!({"a": {"c": [3], "g": null}, "d": {"x": 1}, "e": null}));
        assert_eq!(a, json!({"a": {"b": 1, "c": [3], "g": null}, "d": {"x": 1}, "e": null}));
    }

    #[test]
    fn set_typing_is_strvals() {
        assert_eq!(typed("TRUE"), json!(true));
        assert_eq!(typed("null"), json!(null));
        assert_eq!(typed("0"), json!(0));
        assert_eq!(typed("-12"), json!(-12));
        assert_eq!(typed("0755"), json!("0755"));
        assert_eq!(typed("1.5"), json!("1.5"));
        assert_eq!(typed("yes"), json!("yes"));
    }

    #[test]
    fn paths_have_escaped_dots_and_indexes() {
        let p = parse_path(r"ingress.annotations.kubernetes\.io/tls.hosts[1].name").unwrap();
        assert_eq!(
            p,
            vec![
                Step::Key("ingress".into()),
                Step::Key("annotations".into()),
                Step::Key("kubernetes.io/tls".into()),
                Step::Key("hosts".into()),
                Step::Index(1),
                Step::Key("name".into()),
            ]
        );
        let mut v = json!({"ingress": {"enabled": true}});
        set_path(&mut v, &p, json!("x"));
        assert_eq!(
            v,
            json!({"ingress": {"enabled": true, "annotations": {"kubernetes.io/tls": {"hosts": [null, {"name": "x"}]}}}})
        );
        assert!(parse_path("a..b").is_err());
        assert!(parse_path("a[99999999]").is_err());
        assert!(parse_path("").is_err());
        assert_eq!(show_path(&p), r"ingress.annotations.kubernetes\.io/tls.hosts[1].name");
    }

    #[test]
    fn common_and_minus_give_each_value_back() {
        let s = json!({"a": 1, "m": {"x": 1, "y": 2}, "l": [1], "only": true, "n": null});
        let p = json!({"a": 1, "m": {"x": 1, "y": 3}, "l": [2], "n": null});
        let base = common(&[&s, &p]);
        assert_eq!(base, json!({"a": 1, "m": {"x": 1}, "n": null}));
        for v in [&s, &p] {
            let mut back = base.clone();
            merge(&mut back, &minus(v, &base));
            assert_eq!(&back, v);
        }
        assert_eq!(minus(&p, &base), json!({"m": {"y": 3}, "l": [2]}));
        assert_eq!(common(&[&s]), s);
    }

    #[test]
    fn differences_name_each_path() {
        let d = differences(&json!({"a": {"b": 1}, "c": 2}), &json!({"a": {"b": 2}, "d": 1}), 10);
        let paths: Vec<&str> = d.iter().map(|(p, _, _)| p.as_str()).collect();
        assert_eq!(paths, ["a.b", "c", "d"]);
        assert_eq!(d[1], ("c".into(), Some(json!(2)), None));
    }
}
