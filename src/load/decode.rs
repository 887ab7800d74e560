//! Reading typed settings out of a spanned YAML tree, with errors that name
//! the file, line and column, and unknown keys answered with the nearest
//! valid one.

use crate::diag::{Diagnostic, codes};
use crate::yaml::{Map, Node, Origin, Value};

/// The known keys of one mapping, checked as they are read.
pub struct Fields<'a> {
    pub node: &'a Node,
    map: Option<&'a Map>,
    what: &'a str,
    known: &'static [&'static str],
}

impl<'a> Fields<'a> {
    /// Starts reading `node` as a mapping described as `what` (`config.yaml`,
    /// `the chart`, …). A node that is not a mapping is reported once.
    pub fn new(node: &'a Node, what: &'a str, known: &'static [&'static str], diags: &mut Vec<Diagnostic>) -> Self {
        let map = node.as_map();
        if map.is_none() {
            diags.push(
                Diagnostic::error(
                    codes::SHAPE,
                    node.origin.clone(),
                    format!("{what} must be a mapping, found {}", node.value.type_name()),
                )
                .with_label("expected a mapping"),
            );
        }
        let fields = Fields { node, map, what, known };
        fields.check_unknown(diags);
        fields
    }

    /// Like [`Fields::new`], for a mapping whose other keys the caller
    /// reads itself (names, not settings).
    pub fn open(node: &'a Node, what: &'a str, known: &'static [&'static str], diags: &mut Vec<Diagnostic>) -> Self {
        let map = node.as_map();
        if map.is_none() {
            diags.push(
                Diagnostic::error(
                    codes::SHAPE,
                    node.origin.clone(),
                    format!("{what} must be a mapping, found {}", node.value.type_name()),
                )
                .with_label("expected a mapping"),
            );
        }
        Fields { node, map, what, known }
    }

    fn check_unknown(&self, diags: &mut Vec<Diagnostic>) {
        let Some(map) = self.map else { return };
        for (key, entry) in map {
            if self.known.contains(&key.as_str()) {
                continue;
            }
            let mut d = Diagnostic::error(
                codes::UNKNOWN_KEY,
                entry.key_origin.clone(),
                format!("unknown key `{key}` in {}", self.what),
            )
            .with_label("not a known key");
            d = match suggest(key, self.known) {
                Some(s) => d.with_help(format!("did you mean `{s}`?")),
                None => d.with_help(format!("valid keys are: {}", self.known.join(", "))),
            };
            diags.push(d);
        }
    }

    pub fn get(&self, key: &str) -> Option<&'a Node> {
        self.map?.get(key).map(|e| &e.node)
    }

    /// The place to point at when a required key is missing.
    pub fn origin(&self) -> Origin {
        self.node.origin.clone()
    }

    pub fn required(&self, key: &str, diags: &mut Vec<Diagnostic>) -> Option<&'a Node> {
        let node = self.get(key);
        if node.is_none() && self.map.is_some() {
            diags.push(
                Diagnostic::error(codes::SHAPE, self.origin(), format!("{} has no `{key}`", self.what))
                    .with_help(format!("add `{key}:` to {}", self.what)),
            );
        }
        node
    }

    pub fn string(&self, key: &str, diags: &mut Vec<Diagnostic>) -> Option<(String, Origin)> {
        self.get(key).and_then(|n| expect_str(n, key, diags))
    }

    pub fn required_string(&self, key: &str, diags: &mut Vec<Diagnostic>) -> Option<(String, Origin)> {
        self.required(key, diags).and_then(|n| expect_str(n, key, diags))
    }

    pub fn bool(&self, key: &str, diags: &mut Vec<Diagnostic>) -> Option<bool> {
        let n = self.get(key)?;
        match n.value {
            Value::Bool(b) => Some(b),
            _ => {
                diags.push(type_error(n, key, "a boolean (true or false)"));
                None
            }
        }
    }

    pub fn string_list(&self, key: &str, diags: &mut Vec<Diagnostic>) -> Option<Vec<(String, Origin)>> {
        let n = self.get(key)?;
        match &n.value {
            Value::Seq(items) => Some(items.iter().filter_map(|i| expect_str(i, key, diags)).collect()),
            _ => {
                diags.push(type_error(n, key, "a list of strings"));
                None
            }
        }
    }

    /// A string that must be one of `allowed`.
    pub fn choice(&self, key: &str, allowed: &[&str], diags: &mut Vec<Diagnostic>) -> Option<(String, Origin)> {
        let (s, o) = self.string(key, diags)?;
        if allowed.contains(&s.as_str()) {
            Some((s, o))
        } else {
            let mut d = Diagnostic::error(
                codes::SHAPE,
                o,
                format!("`{key}` must be one of {}, found `{s}`", allowed.join(", ")),
            )
            .with_label("not an allowed value");
            if let Some(sug) = suggest(&s, allowed) {
                d = d.with_help(format!("did you mean `{sug}`?"));
            }
            diags.push(d);
            None
        }
    }
}

pub fn expect_str(n: &Node, key: &str, diags: &mut Vec<Diagnostic>) -> Option<(String, Origin)> {
    match &n.value {
        Value::Str(s) => Some((s.clone(), n.origin.clone())),
        _ => {
            diags.push(type_error(n, key, "a string"));
            None
        }
    }
}

pub fn type_error(n: &Node, key: &str, expected: &str) -> Diagnostic {
    let mut d = Diagnostic::error(
        codes::SHAPE,
        n.origin.clone(),
        format!("`{key}` must be {expected}, found {}", n.value.type_name()),
    )
    .with_label(format!("expected {expected}"));
    if expected == "a string" && matches!(n.value, Value::Bool(_) | Value::Int(_) | Value::Float(_)) {
        d = d.with_help("quote the value to make it a string");
    }
    d
}

/// The closest known name, if it is close enough to be a likely typo.
pub fn suggest<'k>(word: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|k| (strsim::jaro_winkler(word, k), *k))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// The most names a message lists.
pub const MAX_NAMES: usize = 12;

/// Edit distance (a swap of two neighbouring letters is one edit), a
/// case-only difference counting as the nearest.
fn distance(a: &str, b: &str) -> usize {
    if a.to_lowercase() == b.to_lowercase() {
        0
    } else {
        strsim::osa_distance(a, b)
    }
}

/// The keys near `word`, nearest first, for suggestions: a case-only
/// difference, an edit distance up to a third of the word (at least 2), or
/// what [`crate::load::decode::suggest`] finds close.
pub fn near<'k>(word: &str, candidates: &[&'k str]) -> Vec<&'k str> {
    let limit = (word.chars().count() / 3).max(2);
    let liked = suggest(word, candidates);
    let mut out: Vec<(usize, &'k str)> = candidates
        .iter()
        .filter(|c| **c != word)
        .map(|c| (distance(word, c), *c))
        .filter(|(d, c)| *d <= limit || Some(*c) == liked)
        .collect();
    out.sort();
    out.into_iter().map(|(_, c)| c).collect()
}

/// The key `word` is most likely a typo of: a case-only difference, or an
/// edit distance of at most 2 (1 for keys of four characters or fewer).
pub fn typo_of<'k>(word: &str, candidates: &[&'k str]) -> Option<&'k str> {
    candidates
        .iter()
        .filter(|c| **c != word)
        .filter_map(|c| {
            let short = word.chars().count().min(c.chars().count()) <= 4;
            let d = distance(word, c);
            (d <= if short { 1 } else { 2 }).then_some((d, *c))
        })
        .min()
        .map(|(_, c)| c)
}

/// `a, b, c` with at most [`MAX_NAMES`] names and a count of the rest, so
/// that a message about a huge platform stays short.
pub fn list_names<'a>(names: impl ExactSizeIterator<Item = &'a str>, sep: &str) -> String {
    let total = names.len();
    let shown: Vec<&str> = names.take(MAX_NAMES).collect();
    let more = total - shown.len();
    let mut s = shown.join(sep);
    if more > 0 {
        s.push_str(&format!("{sep}… ({more} more)"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(suggest("namespce", &["namespace", "chart"]), Some("namespace"));
        assert_eq!(suggest("zzz", &["namespace", "chart"]), None);
    }
}
