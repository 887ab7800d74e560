//! A quick reader for the YAML that strata's object templates give: block
//! mappings and sequences of plain keys, with values that are JSON (what
//! `tojson` writes), `true`/`false`, small integers, durations and plain
//! words. Thousands of such small objects are read per compile, and the
//! full reader's fixed cost per document dominates there. Anything outside
//! that subset — an anchor, a tag, a block or quoted scalar, a comment after
//! a value, a word YAML 1.1 reads as something else — gives `None`, and the
//! caller reads the text with the full reader. Debug builds check every
//! answer against the full reader.

use serde_json::{Map, Value as J};

use crate::yaml::words::{plain_text, string_word};

/// One line: its indentation and its text after it.
#[derive(Clone, Copy)]
struct Line<'a> {
    indent: usize,
    text: &'a str,
}

/// The one document of `text`, or `None` when it is not in the subset.
pub fn read(text: &str) -> Option<J> {
    let mut lines = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        if raw.contains('\t') || raw.contains('\r') {
            return None;
        }
        let trimmed = raw.trim_end();
        let body = trimmed.trim_start_matches(' ');
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        if body.starts_with("---") || body.starts_with("...") {
            // A start marker may open the document, nothing else.
            if n == 0 && body == "---" && lines.is_empty() {
                continue;
            }
            return None;
        }
        lines.push(Line {
            indent: trimmed.len() - body.len(),
            text: body,
        });
    }
    if lines.first()?.indent != 0 {
        return None;
    }
    let mut i = 0;
    let value = block(&mut lines, &mut i)?;
    (i == lines.len() && value.is_object()).then_some(value)
}

fn is_item(l: &Line<'_>) -> bool {
    l.text == "-" || l.text.starts_with("- ")
}

/// The mapping or sequence that starts at line `i`.
fn block(lines: &mut [Line<'_>], i: &mut usize) -> Option<J> {
    let l = lines[*i];
    if is_item(&l) {
        sequence(lines, i, l.indent)
    } else {
        mapping(lines, i, l.indent)
    }
}

/// The value of a key or item with nothing after it: a block on the next
/// lines, more indented (or, for a key, a sequence at the key's own
/// indentation, which YAML allows).
fn nested(lines: &mut [Line<'_>], i: &mut usize, indent: usize, key: bool) -> Option<J> {
    let next = lines.get(*i)?;
    if next.indent > indent || (key && next.indent == indent && is_item(next)) {
        block(lines, i)
    } else {
        None
    }
}

fn mapping(lines: &mut [Line<'_>], i: &mut usize, indent: usize) -> Option<J> {
    let mut map = Map::new();
    while let Some(l) = lines.get(*i).copied() {
        if l.indent < indent {
            break;
        }
        if l.indent > indent || is_item(&l) {
            return None;
        }
        let (key, rest) = key(l.text)?;
        *i += 1;
        let value = if rest.is_empty() {
            nested(lines, i, indent, true)?
        } else {
            scalar(rest)?
        };
        if map.insert(key, value).is_some() {
            return None;
        }
    }
    Some(J::Object(map))
}

fn sequence(lines: &mut [Line<'_>], i: &mut usize, indent: usize) -> Option<J> {
    let mut items = Vec::new();
    while let Some(l) = lines.get(*i).copied() {
        if l.indent < indent || (l.indent == indent && !is_item(&l)) {
            break;
        }
        if l.indent > indent {
            return None;
        }
        let rest = l.text[1..].trim_start_matches(' ');
        if rest.is_empty() {
            *i += 1;
            items.push(nested(lines, i, indent, false)?);
        } else if key(rest).is_some() {
            // `- key: value`: a mapping whose keys line up after the dash.
            lines[*i] = Line {
                indent: indent + (l.text.len() - rest.len()),
                text: rest,
            };
            items.push(mapping(lines, i, lines[*i].indent)?);
        } else {
            items.push(scalar(rest)?);
            *i += 1;
        }
    }
    Some(J::Array(items))
}

/// `key:` or `key: rest`, for a plain key of the subset or a JSON string.
fn key(text: &str) -> Option<(String, &str)> {
    let (key, after) = if text.starts_with('"') {
        let end = json_string_end(text)?;
        let key: String = serde_json::from_str(&text[..end]).ok()?;
        (key, &text[end..])
    } else {
        let end = text.find(':')?;
        let key = &text[..end];
        if !string_word(key) {
            return None;
        }
        (key.to_owned(), &text[end..])
    };
    let rest = after.strip_prefix(':')?;
    if rest.is_empty() {
        return Some((key, ""));
    }
    let rest = rest.strip_prefix(' ')?.trim_start_matches(' ');
    Some((key, rest))
}

/// Where the JSON string that opens `text` ends (after its closing quote).
fn json_string_end(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (n, c) in text.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some(n + 1),
            _ => {}
        }
    }
    None
}

fn scalar(text: &str) -> Option<J> {
    match text.as_bytes()[0] {
        b'"' | b'{' | b'[' => serde_json::from_str(text).ok(),
        _ => match text {
            "true" => Some(J::Bool(true)),
            "false" => Some(J::Bool(false)),
            _ if integer(text) => text.parse::<i64>().ok().map(J::from),
            _ if duration(text) => Some(J::String(text.to_owned())),
            _ if plain_text(text) => Some(J::String(text.to_owned())),
            _ => None,
        },
    }
}

/// A decimal integer both readers take alike: `0`, or digits with no
/// leading zero (YAML 1.1 reads 0755 as octal), after an optional `-` (Argo
/// CD's `retry.limit: -1`); `-0` is left to the full reader. At most 18
/// digits, so that it fits an `i64`.
fn integer(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.starts_with('0') {
        return text == "0";
    }
    !digits.is_empty() && digits.len() <= 18 && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `10m`, `1h`, `30s`, `500ms`: digits and one unit.
fn duration(text: &str) -> bool {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && matches!(&text[digits..], "ms" | "s" | "m" | "h")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn full(text: &str) -> J {
        let mut docs = crate::yaml::parse_plain_multi(&std::sync::Arc::from("t"), text).unwrap();
        assert_eq!(docs.len(), 1);
        docs.remove(0)
    }

    #[test]
    fn reads_the_subset_as_the_full_reader_does() {
        let text = r#"---
# a comment
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: "cilium"
  labels: {"app.kubernetes.io/managed-by":"strata"}
  annotations:
    kustomize.toolkit.fluxcd.io/prune: disabled
spec:
  interval: 10m
  timeout: 500ms
  wait: true
  prune: false
  replicas: 3
  zero: 0
  limit: -1
  below: -25
  path: "./rendered/staging/flux/components/cilium"
  server: https://kubernetes.default.svc
  mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip
  options:
    - CreateNamespace=true
    - user@example
  dependsOn:
    - name: "cert-manager"
    - name: "cilium"
      namespace: flux-system
  list:
  - "a"
  - {"b": 1}
  - [1, 2.5, null]
  nested:
    -
      deep: "x"
"#;
        let fast = read(text).expect("in the subset");
        assert_eq!(fast, full(text));
        assert_eq!(
            fast["spec"]["dependsOn"][1],
            json!({"name": "cilium", "namespace": "flux-system"})
        );
    }

    #[test]
    fn leaves_anything_else_to_the_full_reader() {
        for text in [
            "a: yes\n",
            "a: on\n",
            "a: 0755\n",
            "a: 1e3\n",
            "a: 1.5\n",
            "a: -0\n",
            "a: -01\n",
            "a: --1\n",
            "a: -\n",
            "a: ~\n",
            "a: null\n",
            "a: 'x'\n",
            "a: |\n  x\n",
            "a: &x 1\nb: *x\n",
            "a: !!str 1\n",
            "a: b # c\n",
            "a: b c\n",
            "a: 1\na: 2\n",
            "a:\n",
            "a: 1\n---\nb: 2\n",
            "- a\n",
            "a:\n  b: 1\n    c: 2\n",
            "a: 1\n\tb: 2\n",
            "y: 1\n",
            "1: a\n",
            "a: {b: c}\n",
            "a: x:\n",
            "a: 'x:y'\n",
        ] {
            assert_eq!(read(text), None, "{text:?}");
        }
    }
}
