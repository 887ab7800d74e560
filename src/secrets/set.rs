//! The set of secrets: the texts of a contract's sensitive outputs, built
//! into search automata once a process, and asked whether a parsed scalar
//! or key is, or holds, one.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::Value as J;

use super::encode::{forms, json_escape, quoted_forms};
use super::fold::{may_be_folded, squeeze};
use super::{MIN_LINE, MIN_SEARCH, MIN_WORD};
use crate::yaml::{Node, Value};

/// One text to look for and the output it belongs to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Item {
    text: String,
    /// Index into `outputs`.
    output: usize,
    /// A line of a multi-line value, not a whole value.
    line: bool,
}

/// How many sets of secrets a process keeps built (see [`Secrets::build`]):
/// a platform's contracts make a few.
const MAX_BUILT: usize = 64;

#[derive(Default)]
pub(super) struct Inner {
    items: Vec<Item>,
    /// `` `client_key` of contracts/staging.json ``: names, which are not secret.
    outputs: Vec<String>,
    /// Whole values, for exact matches on parsed scalars and keys.
    pub(super) exact: BTreeMap<String, usize>,
    /// The byte lengths of those values, sorted: most texts have none of
    /// them, and are not looked up.
    exact_lens: Vec<usize>,
    pub(super) search: Option<AhoCorasick>,
    /// The shortest search pattern, in bytes.
    search_min: usize,
    search_owner: Vec<usize>,
    /// Whether each search pattern is a base64 form: its match is widened
    /// to the whole base64 text around it, so that the bits of a secret at
    /// either end of an encoded run are hidden too.
    pub(super) search_base64: Vec<bool>,
    pub(super) quoted: Option<AhoCorasick>,
    /// Short secrets hidden in printed text where they stand as a word.
    pub(super) words: Option<AhoCorasick>,
    /// Secrets with whitespace, squeezed ([`super::fold`]): found in a text
    /// that writes them over lines.
    pub(super) folded: Option<AhoCorasick>,
    folded_owner: Vec<usize>,
    /// The longest word of each of those: a text holds a secret written
    /// over lines only if it holds each of its words as they are, so a
    /// text with none of these is not squeezed to be searched.
    folded_words: Option<AhoCorasick>,
    /// Forms searched for as a prefix cut short by `…`.
    pub(super) prefixes: Vec<String>,
    /// Whether some secret is too short to be searched for inside text.
    short: bool,
}

impl Inner {
    /// Whether this set was built of these texts and outputs.
    fn is_of(&self, items: &[Item], outputs: &[String]) -> bool {
        self.items == items && self.outputs == outputs
    }
}

/// Texts of sensitive outputs. It has no accessor, no `Debug` that shows
/// them, and no `Serialize`: it answers whether a text holds a secret, and
/// gives a text or value back with every secret taken out.
#[derive(Clone, Default)]
pub struct Secrets {
    pub(super) inner: Arc<Inner>,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets(<{} redacted>)", self.inner.items.len())
    }
}

/// The same texts of the same outputs (each set is built once a process,
/// so equal sets are nearly always one).
impl PartialEq for Secrets {
    fn eq(&self, other: &Secrets) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner) || self.inner.is_of(&other.inner.items, &other.inner.outputs)
    }
}

/// One sensitive output of a contract: its name, value and tofu `type`.
pub struct Sensitive<'a> {
    pub name: &'a str,
    pub value: &'a Node,
    pub ty: Option<&'a Node>,
}

impl Secrets {
    /// The secrets of one contract's sensitive outputs. `public` holds its
    /// non-sensitive outputs: a text published there is not a secret.
    pub fn of_contract(file: &str, sensitive: &[Sensitive<'_>], public: &Node) -> Secrets {
        let mut published = BTreeSet::new();
        scalars(public, &mut published);
        let mut outputs = Vec::new();
        let mut items = Vec::new();
        for s in sensitive {
            let output = outputs.len();
            outputs.push(format!("`{}` of {file}", s.name));
            let mut declared = BTreeSet::new();
            if let Some(ty) = s.ty {
                attribute_names(&ty.to_json(), &mut declared);
            }
            let mut texts = Vec::new();
            leaves(s.value, &declared, &mut texts);
            for (text, line) in texts {
                let public = if line {
                    published.iter().any(|p| p.contains(text.as_str()))
                } else {
                    published.contains(&text)
                };
                if !public {
                    items.push(Item { text, output, line });
                }
            }
        }
        Secrets::build(items, outputs)
    }

    /// Texts that are no contract output but are hidden the same way (the
    /// data of a Secret, wherever else its release writes it), all named
    /// `label`. Only texts of [`MIN_SEARCH`] characters or more count: a
    /// short one (`true`, a port) would hide every equal word.
    pub fn of_texts(label: &str, texts: impl IntoIterator<Item = String>) -> Secrets {
        let mut items = Vec::new();
        for t in texts {
            let mut found = Vec::new();
            texts_of(&t, &mut found);
            items.extend(
                found
                    .into_iter()
                    .filter(|(text, _)| text.chars().count() >= MIN_SEARCH)
                    .map(|(text, line)| Item { text, output: 0, line }),
            );
        }
        if items.is_empty() {
            return Secrets::default();
        }
        Secrets::build(items, vec![label.to_owned()])
    }

    /// Every secret of every set.
    pub fn union<'a>(sets: impl IntoIterator<Item = &'a Secrets>) -> Secrets {
        let mut outputs: Vec<String> = Vec::new();
        let mut items = Vec::new();
        for set in sets {
            for item in &set.inner.items {
                let label = &set.inner.outputs[item.output];
                let output = match outputs.iter().position(|o| o == label) {
                    Some(i) => i,
                    None => {
                        outputs.push(label.clone());
                        outputs.len() - 1
                    }
                };
                items.push(Item { output, ..item.clone() });
            }
        }
        Secrets::build(items, outputs)
    }

    fn build(mut items: Vec<Item>, outputs: Vec<String>) -> Secrets {
        items.sort();
        items.dedup();
        // The same set is asked for again and again: each contract's, then
        // the union as each environment loads, on both sides of a diff.
        // Its automata are built once a process.
        static BUILT: std::sync::Mutex<Vec<Arc<Inner>>> = std::sync::Mutex::new(Vec::new());
        if let Ok(built) = BUILT.lock()
            && let Some(inner) = built.iter().find(|i| i.is_of(&items, &outputs))
        {
            return Secrets {
                inner: Arc::clone(inner),
            };
        }
        let secrets = Secrets::build_new(items, outputs);
        if let Ok(mut built) = BUILT.lock()
            && built.len() < MAX_BUILT
        {
            built.push(Arc::clone(&secrets.inner));
        }
        secrets
    }

    fn build_new(items: Vec<Item>, outputs: Vec<String>) -> Secrets {
        let mut exact = BTreeMap::new();
        let mut patterns: BTreeMap<String, (usize, bool)> = BTreeMap::new();
        let mut quoted: BTreeSet<String> = BTreeSet::new();
        let mut words: BTreeSet<&String> = BTreeSet::new();
        let mut prefixes = BTreeSet::new();
        let mut folded: BTreeMap<String, usize> = BTreeMap::new();
        for item in &items {
            let len = item.text.chars().count();
            if !item.line {
                exact.entry(item.text.clone()).or_insert(item.output);
            }
            let min = if item.line { MIN_LINE } else { MIN_SEARCH };
            if len >= min {
                for (e, base64) in forms(&item.text) {
                    if e.chars().count() >= MIN_SEARCH {
                        let p = patterns.entry(e).or_insert((item.output, base64));
                        p.1 |= base64;
                    }
                }
                let squeezed = squeeze(&item.text);
                if squeezed.contains(' ') && squeezed.chars().count() >= MIN_SEARCH {
                    folded.entry(squeezed).or_insert(item.output);
                }
                if len >= MIN_LINE {
                    prefixes.insert(item.text.clone());
                    prefixes.insert(json_escape(&item.text));
                }
            } else if !item.line {
                quoted.extend(quoted_forms(&item.text));
                if len >= MIN_WORD {
                    words.insert(&item.text);
                }
            }
        }
        let automaton = |pats: Vec<&String>| {
            if pats.is_empty() {
                return None;
            }
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(pats)
                .ok()
        };
        let mut exact_lens: Vec<usize> = exact.keys().map(String::len).collect();
        exact_lens.sort_unstable();
        exact_lens.dedup();
        let search_min = patterns.keys().map(String::len).min().unwrap_or(0);
        let search_owner = patterns.values().map(|p| p.0).collect();
        let search_base64 = patterns.values().map(|p| p.1).collect();
        let folded_owner = folded.values().copied().collect();
        let longest: BTreeSet<String> = folded
            .keys()
            .filter_map(|f| f.split(' ').max_by_key(|w| w.len()))
            .map(str::to_owned)
            .collect();
        let inner = Inner {
            folded: automaton(folded.keys().collect()),
            folded_owner,
            folded_words: automaton(longest.iter().collect()),
            short: !quoted.is_empty(),
            search: automaton(patterns.keys().collect()),
            search_owner,
            search_base64,
            quoted: automaton(quoted.iter().collect()),
            words: automaton(words.into_iter().collect()),
            prefixes: prefixes.into_iter().collect(),
            exact,
            exact_lens,
            search_min,
            items,
            outputs,
        };
        Secrets { inner: Arc::new(inner) }
    }

    pub fn is_empty(&self) -> bool {
        self.inner.items.is_empty()
    }

    /// The names of the outputs, as `` `client_key` of contracts/staging.json ``.
    pub fn outputs(&self) -> impl Iterator<Item = &str> {
        self.inner.outputs.iter().map(String::as_str)
    }

    /// The output a parsed scalar (its text) or key holds: it equals a
    /// secret, or holds one in any form. Quoted short secrets do not count
    /// here (a parsed value is not printed text).
    pub fn find(&self, text: &str) -> Option<&str> {
        let i = &self.inner;
        if i.exact_lens.binary_search(&text.len()).is_ok()
            && let Some(o) = i.exact.get(text)
        {
            return Some(&i.outputs[*o]);
        }
        if text.len() < i.search_min {
            return None;
        }
        if let Some(m) = i.search.as_ref().and_then(|ac| ac.find(text)) {
            return Some(&i.outputs[i.search_owner[m.pattern().as_usize()]]);
        }
        self.find_folded(text)
    }

    /// The output a secret written over lines in `text` belongs to.
    fn find_folded(&self, text: &str) -> Option<&str> {
        let i = &self.inner;
        let ac = i.folded.as_ref()?;
        if !self.may_hold_folded(text) {
            return None;
        }
        let m = ac.find(&squeeze(text))?;
        Some(&i.outputs[i.folded_owner[m.pattern().as_usize()]])
    }

    /// Whether `text` may hold a secret written over lines: it has
    /// whitespace a printer may have put there, and a word of such a secret.
    pub(super) fn may_hold_folded(&self, text: &str) -> bool {
        let i = &self.inner;
        i.folded.is_some() && may_be_folded(text) && i.folded_words.as_ref().is_none_or(|w| w.is_match(text))
    }

    /// Whether some secret is too short to be searched for inside text.
    pub fn has_short(&self) -> bool {
        self.inner.short
    }

    pub fn holds(&self, text: &str) -> bool {
        self.find(text).is_some()
    }

    /// Whether a parsed number equals a secret.
    pub fn is_number_secret(&self, n: &serde_json::Number) -> bool {
        self.inner.exact.contains_key(&n.to_string())
    }
}

/// Every scalar text of a node (strings and numbers), for the published set.
fn scalars(node: &Node, out: &mut BTreeSet<String>) {
    match &node.value {
        Value::Str(s) => {
            out.insert(s.clone());
            out.insert(s.trim().to_owned());
        }
        Value::Int(_) | Value::UInt(_) | Value::Float(_) => {
            out.insert(node.to_json().to_string());
        }
        Value::Seq(items) => items.iter().for_each(|i| scalars(i, out)),
        Value::Map(m) => m.values().for_each(|e| scalars(&e.node, out)),
        Value::Null | Value::Bool(_) => {}
    }
}

/// Attribute names an OpenTofu type expression declares:
/// `["object", {"name": "string", …}]`, at any depth.
fn attribute_names(ty: &J, out: &mut BTreeSet<String>) {
    match ty {
        J::Array(parts) => {
            if parts.first().and_then(J::as_str) == Some("object")
                && let Some(J::Object(attrs)) = parts.get(1)
            {
                for (k, v) in attrs {
                    out.insert(k.clone());
                    attribute_names(v, out);
                }
            }
            parts.iter().skip(1).for_each(|p| attribute_names(p, out));
        }
        J::Object(m) => m.values().for_each(|v| attribute_names(v, out)),
        _ => {}
    }
}

/// The secret texts of a sensitive value: `(text, is_a_line)`.
fn leaves(node: &Node, declared: &BTreeSet<String>, out: &mut Vec<(String, bool)>) {
    match &node.value {
        Value::Str(s) => texts_of(s, out),
        Value::Int(_) | Value::UInt(_) | Value::Float(_) => out.push((node.to_json().to_string(), false)),
        Value::Seq(items) => items.iter().for_each(|i| leaves(i, declared, out)),
        Value::Map(m) => {
            for (k, e) in m.iter() {
                if !declared.contains(k) {
                    texts_of(k, out);
                }
                leaves(&e.node, declared, out);
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
}

fn texts_of(s: &str, out: &mut Vec<(String, bool)>) {
    if s.trim().is_empty() {
        return;
    }
    out.push((s.to_owned(), false));
    if s.trim() != s {
        out.push((s.trim().to_owned(), false));
    }
    if s.trim().contains('\n') {
        for line in s.lines() {
            let t = line.trim();
            // PEM armour (`-----BEGIN CERTIFICATE-----`) is the same in every
            // certificate; only the lines between are secret.
            if t.is_empty() || (t.starts_with("-----") && t.ends_with("-----")) {
                continue;
            }
            out.push((t.to_owned(), true));
        }
    }
}
