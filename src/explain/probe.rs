//! Which rendered fields a value reaches, found by rendering the chart
//! twice: with the merged values, and with the value at the path replaced
//! by a marker that appears nowhere in the first render. Every field of the
//! second render that carries the marker is one the value decides — the
//! whole field, or, where the chart puts the value inside a string (an
//! image `repository:tag`), the part the marker took. Nothing is matched by
//! value, so a value `1` is not traced to every `1` the chart renders, and
//! a value the template falls back from (`image.tag | default
//! .Chart.AppVersion`) is traced to where it would go. Strings and integers
//! are probed; a value the template refuses in another form (a chart that
//! checks it) is not, and the caller falls back to matching by value.

use serde_json::Value as J;

use super::rendered::Field;
use crate::inflate::output::Rendered;
use crate::yaml::path::{Seg, ValuesPath};

/// What replaces the value: text for a string, a number for an integer.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    pub text: String,
    pub number: Option<i64>,
}

/// A marker for `value` that `rendered` (the first render's text) does not
/// hold; `None` for a value that is not a string or an integer.
pub fn marker(value: &J, rendered: &str) -> Option<Marker> {
    match value {
        J::String(_) => (0..100)
            .map(|i| format!("strataprobe{i}x"))
            .find(|m| !rendered.contains(m.as_str()))
            .map(|text| Marker { text, number: None }),
        J::Number(n) if n.is_i64() => [48611_i64, 52919, 61417, 70687, 88793, 93911]
            .into_iter()
            .find(|n| !rendered.contains(&n.to_string()))
            .map(|n| Marker {
                text: n.to_string(),
                number: Some(n),
            }),
        _ => None,
    }
}

/// `values` with `new` at `path`; `None` when the path cannot be set (it
/// goes through a scalar, or past the end of a list).
pub fn with_value(values: &J, path: &ValuesPath, new: J) -> Option<J> {
    let mut out = values.clone();
    let mut at = &mut out;
    for seg in &path.0 {
        at = match seg {
            Seg::Key(k) => {
                if at.is_null() {
                    *at = J::Object(Default::default());
                }
                at.as_object_mut()?.entry(k.clone()).or_insert(J::Null)
            }
            Seg::Index(i) => at.as_array_mut()?.get_mut(*i)?,
        };
    }
    *at = new;
    Some(out)
}

/// `Kind/namespace/name` of a rendered object (its namespace as the chart
/// wrote it, else the release's).
fn id(v: &J, namespace: &str) -> String {
    format!(
        "{}/{}/{}",
        v["kind"].as_str().unwrap_or(""),
        v["metadata"]["namespace"].as_str().unwrap_or(namespace),
        v["metadata"]["name"].as_str().unwrap_or("")
    )
}

/// The fields of `probed` (the render with the marker) that carry it, with
/// the value the first render (`plain`) has there. `current` is the value's
/// text in the first render, to pair objects whose name it is part of.
pub fn carriers(plain: &[Rendered], probed: &[Rendered], m: &Marker, current: &str, namespace: &str) -> Vec<Field> {
    let mut out = Vec::new();
    for p in probed {
        let pid = id(&p.value, namespace);
        let original = plain
            .iter()
            .find(|o| id(&o.value, namespace) == pid.replace(&m.text, current))
            .map(|o| &o.value);
        let mut found = Vec::new();
        walk(original, &p.value, &mut ValuesPath::default(), m, &mut found);
        for (field, value, part) in found {
            out.push(Field {
                object: id(original.unwrap_or(&p.value), namespace).replace(&m.text, current),
                field: field.to_string(),
                value,
                part,
                template: p.template.clone(),
                patched: None,
            });
        }
    }
    out
}

/// Where in `probe` the marker is, beside the same place in `original`:
/// (field, original value, the part of the original string the value is).
fn walk(
    original: Option<&J>,
    probe: &J,
    at: &mut ValuesPath,
    m: &Marker,
    out: &mut Vec<(ValuesPath, J, Option<String>)>,
) {
    match probe {
        J::Object(map) => {
            for (k, v) in map {
                at.0.push(Seg::Key(k.clone()));
                walk(original.and_then(|o| o.get(k)), v, at, m, out);
                at.0.pop();
            }
        }
        J::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                at.0.push(Seg::Index(i));
                walk(original.and_then(|o| o.get(i)), v, at, m, out);
                at.0.pop();
            }
        }
        J::Number(n) if m.number.is_some() && n.as_i64() == m.number => {
            out.push((at.clone(), original.cloned().unwrap_or(J::Null), None));
        }
        J::String(s) => {
            let Some(i) = find_marker(s, m) else { return };
            let (prefix, suffix) = (&s[..i], &s[i + m.text.len()..]);
            let was = original.cloned().unwrap_or(J::Null);
            let part = match &was {
                J::String(o)
                    if o.len() >= prefix.len() + suffix.len() && o.starts_with(prefix) && o.ends_with(suffix) =>
                {
                    let p = &o[prefix.len()..o.len() - suffix.len()];
                    (!p.is_empty() && p.len() < o.len()).then(|| p.to_owned())
                }
                _ => None,
            };
            out.push((at.clone(), was, part));
        }
        _ => {}
    }
}

/// Where the marker stands in a string: anywhere for text; for a number,
/// not inside a longer run of digits.
fn find_marker(s: &str, m: &Marker) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find(&m.text).map(|i| i + from) {
        let end = i + m.text.len();
        let digit = |b: Option<&u8>| b.is_some_and(u8::is_ascii_digit);
        let bounded =
            m.number.is_none() || (!digit(s.as_bytes().get(end)) && (i == 0 || !digit(s.as_bytes().get(i - 1))));
        if bounded {
            return Some(i);
        }
        from = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rendered(v: J) -> Rendered {
        Rendered {
            value: v,
            template: "web/templates/deployment.yaml".into(),
        }
    }

    #[test]
    fn the_marker_is_found_whole_or_inside_a_string() {
        let m = marker(&json!(""), "image: nginx:1.16.0").unwrap();
        let plain = [rendered(json!({"kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 1, "containers": [{"image": "nginx:1.16.0", "name": "web"}]}}))];
        let probe = [rendered(json!({"kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 1, "containers": [{"image": format!("nginx:{}", m.text), "name": "web"}]}}))];
        let found = carriers(&plain, &probe, &m, "", "ns");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].field, "spec.containers[0].image");
        assert_eq!(found[0].value, json!("nginx:1.16.0"));
        assert_eq!(found[0].part.as_deref(), Some("1.16.0"));
        assert_eq!(found[0].object, "Deployment/ns/web");
    }

    #[test]
    fn a_number_is_found_only_where_it_stands_alone() {
        let m = marker(&json!(1), "replicas: 1").unwrap();
        let n = m.number.unwrap();
        let plain = [rendered(
            json!({"kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 1, "a": 1, "b": "x"}}),
        )];
        let probe = [rendered(json!({"kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": n, "a": 1, "b": format!("{n}9")}}))];
        let found = carriers(&plain, &probe, &m, "1", "ns");
        let fields: Vec<&str> = found.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, ["spec.replicas"]);
        // A marker already in the first render is not used.
        assert_ne!(marker(&json!(1), &format!("port: {n}")).unwrap().number, Some(n));
        assert!(marker(&json!(true), "").is_none());
    }

    #[test]
    fn values_are_set_at_a_path() {
        let v = json!({"image": {"tag": ""}, "list": [{"a": 1}]});
        let path = ValuesPath::parse("image.tag").unwrap();
        assert_eq!(with_value(&v, &path, json!("x")).unwrap()["image"]["tag"], "x");
        let path = ValuesPath::parse("list[0].a").unwrap();
        assert_eq!(with_value(&v, &path, json!(2)).unwrap()["list"][0]["a"], 2);
        let path = ValuesPath::parse("new.key").unwrap();
        assert_eq!(with_value(&v, &path, json!(3)).unwrap()["new"]["key"], 3);
        assert!(with_value(&v, &ValuesPath::parse("list[4]").unwrap(), json!(1)).is_none());
        assert!(with_value(&v, &ValuesPath::parse("image.tag.x").unwrap(), json!(1)).is_none());
    }
}
