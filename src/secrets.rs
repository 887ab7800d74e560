//! Sensitive contract outputs, and every form in which strata could print
//! one. The contract loader ([`crate::load::contract`]) drops sensitive
//! values and keeps only a sealed [`Secrets`]; everything that prints —
//! diagnostics, source snippets, the diff, `explain` — and SEC001 ask it, so
//! what counts as a secret and how it is recognised is decided here, once.
//!
//! What is a secret: the whole value of each sensitive output and, when the
//! value is a mapping or a list, each of its leaves (strings and numbers)
//! and each of its keys — except attribute names its tofu `type` declares,
//! which `tofu output -json` prints in clear. Booleans and null hold no
//! secret. A text that the same contract also publishes in a non-sensitive
//! output is not a secret either.
//!
//! How a secret is recognised:
//! - **by value**: a parsed scalar or key equal to a secret, whatever its
//!   length. A secret of one to five characters (a PIN, a port) cannot be
//!   searched for inside text without hiding ordinary words and numbers, so
//!   for those this is the only match on parsed values;
//! - **by search**, from [`MIN_SEARCH`] characters: anywhere inside a text,
//!   in each form a printer may give it (see [`encodings`]): raw,
//!   JSON-escaped (serde's, Go's — which writes `<`, `>` and `&` as
//!   `\u003c`… — and twice over), Rust-debug-escaped, YAML double- and
//!   single-quoted, percent- and HTML-escaped, and base64 and base64url at
//!   each of the three byte alignments, so that it is found inside a longer
//!   encoded text too;
//! - each line of a multi-line secret on its own, from [`MIN_LINE`]
//!   characters: shorter lines of a structured text (`apiVersion: v1`) are
//!   ordinary text, and PEM armour lines are shared by every certificate;
//! - in printed text only ([`Secrets::redact_text`]): a shorter secret where
//!   it stands quoted (`"…"`, `'…'`, `` `…` ``) or, from [`MIN_WORD`]
//!   characters, as a word (`found 4711`); and a secret cut short by an
//!   ellipsis (a message that quotes only the start of a value).
//!
//! Values are redacted where they are still parsed ([`Secrets::redact_json`],
//! [`redact_for_display`]), before anything is written as text, so that
//! folding, escaping and indentation cannot split a secret past the search;
//! the search over printed text is the second line of defence.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::Value as J;

use crate::yaml::{Node, Value};

/// What stands in for a secret, or for a line that holds one.
pub const MARK: &str = "<sensitive value redacted>";

/// What stands in for the value of a key of a `Secret`'s `data` or
/// `stringData` (not a contract output: named, never shown).
pub const SECRET_DATA: &str = "<redacted>";

/// Secrets of at least this many characters are searched for inside texts;
/// shorter ones only match a parsed value equal to them, or a quoted one.
pub const MIN_SEARCH: usize = 6;

/// Lines of a multi-line secret of at least this many characters are
/// searched for on their own.
pub const MIN_LINE: usize = 16;

/// In printed text, a shorter secret of at least this many characters is
/// also hidden where it stands as a word (`found 4711`).
pub const MIN_WORD: usize = 4;

/// Base64 needles shorter than this would match random base64 text.
const MIN_BASE64: usize = 8;

/// How deep texts holding JSON or YAML are opened, one inside another.
const MAX_EMBEDDED_DEPTH: usize = 4;

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
struct Inner {
    items: Vec<Item>,
    /// `` `client_key` of contracts/staging.json ``: names, which are not secret.
    outputs: Vec<String>,
    /// Whole values, for exact matches on parsed scalars and keys.
    exact: BTreeMap<String, usize>,
    /// The byte lengths of those values, sorted: most texts have none of
    /// them, and are not looked up.
    exact_lens: Vec<usize>,
    search: Option<AhoCorasick>,
    /// The shortest search pattern, in bytes.
    search_min: usize,
    search_owner: Vec<usize>,
    /// Whether each search pattern is a base64 form: its match is widened
    /// to the whole base64 text around it, so that the bits of a secret at
    /// either end of an encoded run are hidden too.
    search_base64: Vec<bool>,
    quoted: Option<AhoCorasick>,
    /// Short secrets hidden in printed text where they stand as a word.
    words: Option<AhoCorasick>,
    /// Forms searched for as a prefix cut short by `…`.
    prefixes: Vec<String>,
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
    inner: Arc<Inner>,
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
        let inner = Inner {
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
        let m = i.search.as_ref()?.find(text)?;
        Some(&i.outputs[i.search_owner[m.pattern().as_usize()]])
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

    /// Printed text with every occurrence of a secret replaced by [`MARK`].
    pub fn redact_text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let i = &self.inner;
        if i.items.is_empty() || text.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        if let Some(ac) = &i.search {
            for m in ac.find_iter(text) {
                let (mut start, mut end) = (m.start(), m.end());
                if i.search_base64[m.pattern().as_usize()] {
                    let b64 = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_');
                    let bytes = text.as_bytes();
                    while start > 0 && b64(bytes[start - 1]) {
                        start -= 1;
                    }
                    while end < bytes.len() && (b64(bytes[end]) || bytes[end] == b'=') {
                        end += 1;
                    }
                }
                ranges.push((start, end));
            }
        }
        if let Some(ac) = &i.quoted {
            ranges.extend(ac.find_iter(text).map(|m| (m.start(), m.end())));
        }
        if let Some(ac) = &i.words {
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            ranges.extend(
                ac.find_iter(text)
                    .filter(|m| !word(text[..m.start()].chars().next_back()) && !word(text[m.end()..].chars().next()))
                    .map(|m| (m.start(), m.end())),
            );
        }
        // A value quoted only up to an ellipsis: `"BEGIN…"`.
        for (pos, _) in text.match_indices('…') {
            let before = &text[..pos];
            for p in &i.prefixes {
                let cut = p
                    .char_indices()
                    .map(|(b, _)| b)
                    .filter(|b| p[..*b].chars().count() >= MIN_LINE)
                    .rev()
                    .find(|b| before.ends_with(&p[..*b]));
                if let Some(b) = cut {
                    ranges.push((pos - b, pos + '…'.len_utf8()));
                }
            }
        }
        if ranges.is_empty() {
            return Cow::Borrowed(text);
        }
        ranges.sort();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end) in ranges {
            if end <= at {
                continue;
            }
            if start >= at {
                out.push_str(&text[at..start]);
                out.push_str(MARK);
            }
            at = end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }

    /// Whether printed text holds a secret in any form.
    pub fn text_holds(&self, text: &str) -> bool {
        matches!(self.redact_text(text), Cow::Owned(_))
    }

    /// Whether a parsed string equals a secret or, printed, holds one.
    fn shows(&self, text: &str) -> bool {
        self.inner.exact.contains_key(text) || self.text_holds(text)
    }

    /// A parsed string with its secrets taken out, or `None` if it holds
    /// none: a string equal to a secret becomes [`MARK`].
    pub fn redact_scalar(&self, s: &str) -> Option<String> {
        if self.inner.exact.contains_key(s) {
            return Some(MARK.to_owned());
        }
        match self.redact_text(s) {
            Cow::Owned(o) => Some(o),
            Cow::Borrowed(_) => None,
        }
    }

    /// Takes every secret out of a JSON value in place: strings, keys and
    /// numbers. Returns whether anything was taken out.
    pub fn redact_json(&self, v: &mut J) -> bool {
        let mut hidden = Hidden::default();
        walk(v, &mut String::new(), Some(self), false, 0, &mut hidden);
        !hidden.is_empty()
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

/// Every form of `t` that strata, Helm, Go or a terminal may print: see the
/// module documentation. Each differs from the others or is dropped.
pub fn encodings(t: &str) -> Vec<String> {
    forms(t).into_iter().map(|(f, _)| f).collect()
}

/// [`encodings`], each with whether it is a base64 form.
fn forms(t: &str) -> Vec<(String, bool)> {
    let json = json_escape(t);
    let text = [
        t.to_owned(),
        json_escape(&json),
        go_json_escape(t),
        go_json_escape(&json),
        debug_escape(t),
        yaml_double(t, false),
        yaml_double(t, true),
        t.replace('\'', "''"),
        percent(t),
        html(t),
        json,
    ];
    let mut out: Vec<(String, bool)> = text.into_iter().map(|f| (f, false)).collect();
    for table in [STD, URL] {
        let full = base64(t.as_bytes(), table);
        out.push((full.trim_end_matches('=').to_owned(), true));
        out.push((full, true));
        for align in 0..3 {
            if let Some(s) = base64_aligned(t.as_bytes(), align, table) {
                out.push((s, true));
            }
        }
    }
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

/// The forms of a short secret that only count where it stands quoted.
fn quoted_forms(t: &str) -> Vec<String> {
    let json = json_escape(t);
    vec![
        format!("\"{json}\""),
        format!("\\\"{}\\\"", json_escape(&json)),
        format!("'{}'", t.replace('\'', "''")),
        format!("`{t}`"),
    ]
}

/// The inside of a JSON string, as serde_json writes it.
pub fn json_escape(t: &str) -> String {
    let s = serde_json::to_string(t).unwrap_or_default();
    s[1..s.len() - 1].to_owned()
}

/// The inside of a JSON string as Go's encoding/json writes it: HTML
/// characters and the JavaScript line separators as `\u` escapes, control
/// characters other than `\n`, `\r` and `\t` as `\u00xx`.
fn go_json_escape(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    for c in t.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The inside of a string as Rust's `{:?}` writes it.
fn debug_escape(t: &str) -> String {
    let s = format!("{t:?}");
    s[1..s.len() - 1].to_owned()
}

/// The inside of a YAML double-quoted scalar, with YAML's short escapes
/// (`\e`, `\L`, …) and `\x` escapes in lower or upper case.
fn yaml_double(t: &str, upper: bool) -> String {
    let mut out = String::with_capacity(t.len());
    for c in t.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            '\u{85}' => out.push_str("\\N"),
            '\u{a0}' => out.push_str("\\_"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                if upper {
                    out.push_str(&format!("\\x{:02X}", c as u32));
                } else {
                    out.push_str(&format!("\\x{:02x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out
}

fn percent(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    for b in t.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn html(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64 with padding.
fn base64(bytes: &[u8], table: &[u8; 64]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(table[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The base64 characters that depend on `bytes` alone when they start
/// `align` bytes into a 3-byte group of a longer text: found inside the
/// base64 of any text that contains `bytes`, at that alignment.
fn base64_aligned(bytes: &[u8], align: usize, table: &[u8; 64]) -> Option<String> {
    let mut buf = vec![0u8; align];
    buf.extend_from_slice(bytes);
    let full = buf.len() / 3 * 3;
    let enc = base64(&buf[..full], table);
    let skip = [0, 2, 3][align];
    enc.get(skip..).filter(|s| s.len() >= MIN_BASE64).map(str::to_owned)
}

/// Which lines of a file (1-based) a snippet must never show: every line a
/// scalar or key holding a secret spans (found on the parsed file, so a
/// folded, quoted or block scalar is hidden whole), and every line whose
/// text holds one.
pub fn hidden_lines(text: &str, secrets: &Secrets) -> BTreeSet<u32> {
    let mut hide = BTreeSet::new();
    if secrets.is_empty() {
        return hide;
    }
    for (i, line) in text.lines().enumerate() {
        if secrets.text_holds(line) {
            hide.insert(i as u32 + 1);
        }
    }
    let Ok(docs) = crate::yaml::parse_multi(&Arc::from("<snippet>"), text) else {
        return hide;
    };
    let mut starts = BTreeSet::new();
    let mut hits = Vec::new();
    for d in &docs {
        spans(d, secrets, &mut starts, &mut hits);
    }
    let last = text.lines().count() as u32;
    for h in hits {
        let end = starts.range(h + 1..).next().map_or(last, |n| n - 1).max(h);
        hide.extend(h..=end);
    }
    hide
}

/// The first line of every node and key, and of those that hold a secret.
fn spans(node: &Node, secrets: &Secrets, starts: &mut BTreeSet<u32>, hits: &mut Vec<u32>) {
    starts.insert(node.origin.line);
    let text = match &node.value {
        Value::Str(s) => Some(s.clone()),
        Value::Int(_) | Value::UInt(_) | Value::Float(_) => Some(node.to_json().to_string()),
        _ => None,
    };
    if text.is_some_and(|t| secrets.holds(&t)) {
        hits.push(node.origin.line);
    }
    match &node.value {
        Value::Seq(items) => items.iter().for_each(|i| spans(i, secrets, starts, hits)),
        Value::Map(m) => {
            for (k, e) in m.iter() {
                starts.insert(e.key_origin.line);
                if secrets.holds(k) {
                    hits.push(e.key_origin.line);
                }
                spans(&e.node, secrets, starts, hits);
            }
        }
        _ => {}
    }
}

/// A copy of `value` fit to show: the values under `data` and `stringData`
/// of every Secret-shaped mapping (`kind: Secret`), at any depth and inside
/// strings that hold JSON or YAML (a `last-applied-configuration`
/// annotation, a chart's `extraObjects`), replaced by [`SECRET_DATA`]; and
/// every sensitive contract output taken out (a secret too short to search
/// for also where it is a value of a JSON or YAML text held in a string,
/// such as Argo CD's `helm.values`). `None` when nothing needs
/// hiding. [`Hidden`] gives each hidden value by its path, so that a
/// change to one can be named without showing it.
pub fn redact_for_display(value: &J, secrets: &Secrets) -> Option<(J, Hidden)> {
    if !needs_redaction(value, secrets, 0) {
        return None;
    }
    let mut copy = value.clone();
    let mut hidden = Hidden::default();
    walk(&mut copy, &mut String::new(), Some(secrets), true, 0, &mut hidden);
    Some((copy, hidden))
}

/// What [`redact_for_display`] hid, by path (`data.token`,
/// `spec.values.extraObjects[0].stringData.password`; inside a text that
/// holds a document, the text's path, `: `, and the path inside it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hidden {
    /// The values under `data` and `stringData` of Secret-shaped mappings.
    pub data: BTreeMap<String, J>,
    /// Strings, keys (`<path> (key)`) and numbers that held a sensitive
    /// contract output.
    pub sensitive: BTreeMap<String, J>,
}

impl Hidden {
    pub fn is_empty(&self) -> bool {
        self.data.is_empty() && self.sensitive.is_empty()
    }
}

/// A read-only look for anything [`redact_for_display`] would change.
fn needs_redaction(v: &J, secrets: &Secrets, depth: usize) -> bool {
    match v {
        J::Object(m) => {
            is_secret_shaped(m)
                || m.iter()
                    .any(|(k, child)| secrets.shows(k) || needs_redaction(child, secrets, depth))
        }
        J::Array(items) => items.iter().any(|i| needs_redaction(i, secrets, depth)),
        J::String(s) => {
            secrets.shows(s)
                || (depth < MAX_EMBEDDED_DEPTH
                    && (mentions_secret_kind(s) || (secrets.has_short() && looks_structured(s))))
        }
        J::Number(n) => secrets.is_number_secret(n),
        _ => false,
    }
}

/// Whether a text may be a JSON or YAML document: a secret too short to
/// search for is looked for among its parsed values.
pub fn looks_structured(s: &str) -> bool {
    let t = s.trim_start();
    t.starts_with('{') || t.starts_with('[') || (s.contains('\n') && s.contains(": "))
}

/// `kind: Secret` with `data` or `stringData`.
fn is_secret_shaped(m: &serde_json::Map<String, J>) -> bool {
    m.get("kind").and_then(J::as_str) == Some("Secret") && (m.contains_key("data") || m.contains_key("stringData"))
}

/// Whether a text may hold a Secret manifest: `kind: Secret`, `"kind":"Secret"`, ….
fn mentions_secret_kind(s: &str) -> bool {
    s.match_indices("kind").any(|(i, _)| {
        let rest = s[i + 4..].trim_start_matches(['"', '\'', ':', ' ']);
        rest.strip_prefix("Secret")
            .is_some_and(|after| !after.starts_with(|c: char| c.is_alphanumeric()))
    })
}

fn push_key(path: &mut String, key: &str) -> usize {
    let len = path.len();
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '/');
    if plain {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
    } else {
        path.push('[');
        path.push_str(&serde_json::to_string(key).unwrap_or_default());
        path.push(']');
    }
    len
}

/// Redacts in place. `shapes`: also hide Secret-shaped data.
fn walk(v: &mut J, path: &mut String, secrets: Option<&Secrets>, shapes: bool, depth: usize, hidden: &mut Hidden) {
    match v {
        J::Object(m) => {
            if shapes && is_secret_shaped(m) {
                for field in ["data", "stringData"] {
                    let at = push_key(path, field);
                    match m.get_mut(field) {
                        Some(J::Object(values)) => {
                            for (k, v) in values.iter_mut() {
                                let at = push_key(path, k);
                                hidden
                                    .data
                                    .insert(path.clone(), std::mem::replace(v, J::from(SECRET_DATA)));
                                path.truncate(at);
                            }
                        }
                        Some(other @ (J::String(_) | J::Array(_))) => {
                            hidden
                                .data
                                .insert(path.clone(), std::mem::replace(other, J::from(SECRET_DATA)));
                        }
                        _ => {}
                    }
                    path.truncate(at);
                }
            }
            if let Some(secrets) = secrets
                && m.keys().any(|k| secrets.shows(k))
            {
                let old = std::mem::take(m);
                for (k, child) in old {
                    let Some(mut key) = secrets.redact_scalar(&k) else {
                        m.insert(k, child);
                        continue;
                    };
                    let mut n = 1;
                    while m.contains_key(&key) {
                        n += 1;
                        key = format!("{MARK} #{n}");
                    }
                    let at = push_key(path, &key);
                    path.push_str(" (key)");
                    hidden.sensitive.insert(path.clone(), J::String(k));
                    path.truncate(at);
                    m.insert(key, child);
                }
            }
            for (k, child) in m.iter_mut() {
                let at = push_key(path, k);
                walk(child, path, secrets, shapes, depth, hidden);
                path.truncate(at);
            }
        }
        J::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let at = path.len();
                path.push_str(&format!("[{i}]"));
                walk(item, path, secrets, shapes, depth, hidden);
                path.truncate(at);
            }
        }
        J::String(s) => {
            let original = s.clone();
            let open = depth < MAX_EMBEDDED_DEPTH
                && ((shapes && mentions_secret_kind(s))
                    || secrets.is_some_and(|x| x.has_short() && looks_structured(s)));
            if open && let Some(t) = redact_embedded(s, path, secrets, shapes, depth, hidden) {
                *s = t;
            }
            if let Some(secrets) = secrets
                && let Some(r) = secrets.redact_scalar(s)
            {
                hidden.sensitive.insert(path.clone(), J::String(original));
                *s = r;
            }
        }
        J::Number(n) if secrets.is_some_and(|s| s.is_number_secret(n)) => {
            hidden.sensitive.insert(path.clone(), J::Number(n.clone()));
            *v = J::from(MARK);
        }
        _ => {}
    }
}

/// A text holding JSON or YAML with a Secret-shaped mapping, written back
/// with the Secret's data hidden; `None` if there is none.
fn redact_embedded(
    s: &str,
    path: &str,
    secrets: Option<&Secrets>,
    shapes: bool,
    depth: usize,
    hidden: &mut Hidden,
) -> Option<String> {
    let mut inner_hidden = Hidden::default();
    let t = s.trim_start();
    let out = if t.starts_with('{') || t.starts_with('[') {
        serde_json::from_str::<J>(s).ok().and_then(|mut doc| {
            walk(
                &mut doc,
                &mut String::new(),
                secrets,
                shapes,
                depth + 1,
                &mut inner_hidden,
            );
            let text = if s.contains('\n') {
                serde_json::to_string_pretty(&doc)
            } else {
                serde_json::to_string(&doc)
            };
            text.ok()
        })
    } else {
        crate::yaml::parse_plain_multi(&Arc::from("<embedded>"), s)
            .ok()
            .filter(|docs| !docs.is_empty())
            .map(|mut docs| {
                for doc in &mut docs {
                    walk(doc, &mut String::new(), secrets, shapes, depth + 1, &mut inner_hidden);
                }
                docs.iter()
                    .map(crate::yaml::to_sorted_yaml)
                    .collect::<Vec<_>>()
                    .join("---\n")
            })
    };
    let out = match out {
        Some(o) => o,
        // Not JSON or YAML as it stands (a template, say): hide its Secret
        // data line by line.
        None if shapes && mentions_secret_kind(s) => {
            let o = redact_secret_lines(s)?;
            inner_hidden.data.insert(String::new(), J::from(s));
            o
        }
        None => return None,
    };
    if inner_hidden.is_empty() {
        return None;
    }
    let key = |k: String| {
        if k.is_empty() {
            path.to_owned()
        } else {
            format!("{path}: {k}")
        }
    };
    for (k, v) in inner_hidden.data {
        hidden.data.insert(key(k), v);
    }
    for (k, v) in inner_hidden.sensitive {
        hidden.sensitive.insert(key(k), v);
    }
    Some(out)
}

/// The lines under `data:` and `stringData:` of a text that is YAML-like
/// but does not parse, with their values hidden.
fn redact_secret_lines(s: &str) -> Option<String> {
    let mut out = Vec::new();
    let mut under: Option<usize> = None;
    let mut changed = false;
    for line in s.lines() {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        if let Some(i) = under {
            if t.is_empty() || indent > i {
                match line.split_once(':') {
                    Some((k, v)) if !v.trim().is_empty() => {
                        out.push(format!("{k}: {SECRET_DATA}"));
                        changed = true;
                    }
                    _ if t.is_empty() || t.ends_with(':') => out.push(line.to_owned()),
                    _ => {
                        out.push(format!("{}{SECRET_DATA}", " ".repeat(indent)));
                        changed = true;
                    }
                }
                continue;
            }
            under = None;
        }
        let key = t.trim_start_matches("- ");
        if let Some(rest) = key.strip_prefix("data:").or_else(|| key.strip_prefix("stringData:")) {
            if rest.trim().is_empty() {
                under = Some(indent + (t.len() - key.len()));
                out.push(line.to_owned());
            } else {
                let head = &line[..line.len() - rest.len()];
                out.push(format!("{head} {SECRET_DATA}"));
                changed = true;
            }
            continue;
        }
        out.push(line.to_owned());
    }
    changed.then(|| out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(text: &str) -> Node {
        crate::yaml::parse(&Arc::from("c.yaml"), text).unwrap()
    }

    fn secrets_of(value: &str) -> Secrets {
        let v = node(value);
        let public = node("endpoint: https://10.0.0.1:6443\n");
        Secrets::of_contract(
            "contracts/c.json",
            &[Sensitive {
                name: "s",
                value: &v,
                ty: None,
            }],
            &public,
        )
    }

    #[test]
    fn base64_matches_a_reference() {
        assert_eq!(base64(b"", STD), "");
        assert_eq!(base64(b"f", STD), "Zg==");
        assert_eq!(base64(b"fo", STD), "Zm8=");
        assert_eq!(base64(b"foobar", STD), "Zm9vYmFy");
        assert_eq!(base64(&[0xfb, 0xff], URL), "-_8=");
    }

    #[test]
    fn base64_of_a_secret_is_found_inside_longer_base64_at_any_alignment() {
        let s = secrets_of("\"hunter2-very-secret\"");
        for prefix in ["", "x", "xy", "some text before: "] {
            let whole = format!("{prefix}hunter2-very-secret and after");
            for table in [STD, URL] {
                let enc = base64(whole.as_bytes(), table);
                assert!(s.holds(&enc), "{prefix:?} {enc}");
                assert_ne!(s.redact_text(&enc), enc);
            }
        }
        assert!(!s.holds(&base64(b"hunter3-very-secret and after", STD)));
        // The whole encoded run is hidden, not only the part that depends
        // on the secret alone.
        let enc = base64(b"user:hunter2-very-secret", URL);
        assert_eq!(s.redact_text(&format!("b64: {enc} end")), format!("b64: {MARK} end"));
    }

    #[test]
    fn every_encoding_is_found_and_redacted() {
        let secret = "Sx-\"q\\t\"\ttab\u{1b}<&>\u{2028}é";
        let s = secrets_of(&serde_json::to_string(secret).unwrap());
        for e in encodings(secret) {
            let text = format!("before {e} after");
            let red = s.redact_text(&text);
            assert_eq!(red, format!("before {MARK} after"), "{e:?}");
        }
        // As Go writes it inside JSON inside JSON (an annotation in a JSON document).
        let inner = serde_json::to_string(&serde_json::json!({"k": secret})).unwrap();
        let outer = serde_json::to_string(&inner).unwrap();
        assert!(s.text_holds(&outer), "{outer}");
    }

    #[test]
    fn only_the_occurrence_is_redacted() {
        let s = secrets_of("\"p4ssw0rd-XYZ\"");
        assert_eq!(
            s.redact_text("`a`: expected an integer, found the string \"p4ssw0rd-XYZ\""),
            format!("`a`: expected an integer, found the string \"{MARK}\"")
        );
        assert_eq!(s.redact_text("nothing here"), "nothing here");
    }

    #[test]
    fn a_value_cut_short_by_an_ellipsis_is_redacted() {
        let long = "A".repeat(10) + &"0123456789abcdef".repeat(5);
        let s = secrets_of(&format!("\"{long}\""));
        let cut: String = long.chars().take(60).collect();
        let msg = format!("found the string \"{cut}…\"");
        assert_eq!(s.redact_text(&msg), format!("found the string \"{MARK}\""));
    }

    #[test]
    fn short_secrets_match_whole_values_and_quoted_text_only() {
        let s = secrets_of("{pin: 4711, code: ab}");
        assert!(s.holds("ab") && s.holds("4711"));
        assert!(!s.holds("about") && !s.holds("47110"));
        assert!(s.is_number_secret(&serde_json::Number::from(4711)));
        assert_eq!(s.redact_text("found \"ab\" in a tab"), format!("found {MARK} in a tab"));
        // From four characters, a short secret is hidden as a word too.
        assert_eq!(
            s.redact_text("expected a string, found 4711"),
            format!("expected a string, found {MARK}")
        );
        assert_eq!(s.redact_text("port 47110 and x4711"), "port 47110 and x4711");
        // Keys of a sensitive mapping are secrets too.
        assert!(s.holds("code") && s.holds("pin"));
    }

    #[test]
    fn declared_attribute_names_and_published_texts_are_not_secrets() {
        let v = node("{host: https://10.0.0.1:6443, password: correct-horse}");
        let ty = node("[object, {host: string, password: string}]");
        let public = node("endpoint: https://10.0.0.1:6443\n");
        let s = Secrets::of_contract(
            "c.json",
            &[Sensitive {
                name: "db",
                value: &v,
                ty: Some(&ty),
            }],
            &public,
        );
        assert!(s.holds("correct-horse"));
        assert!(!s.holds("password") && !s.holds("host"));
        assert!(!s.holds("https://10.0.0.1:6443"));
        assert_eq!(s.outputs().collect::<Vec<_>>(), ["`db` of c.json"]);
    }

    #[test]
    fn lines_of_a_multi_line_secret_are_searched_but_armour_and_short_lines_are_not() {
        let pem = "\"-----BEGIN KEY-----\\nMIIBfakeLINEofBASE64text0123\\nshort\\n-----END KEY-----\\n\"";
        let s = secrets_of(pem);
        assert!(s.text_holds("  MIIBfakeLINEofBASE64text0123"));
        assert!(!s.text_holds("-----BEGIN KEY-----"));
        assert!(!s.text_holds("short"));
        assert!(!format!("{s:?}").contains("MIIB"));
    }

    #[test]
    fn snippets_hide_every_line_a_secret_spans() {
        let s = secrets_of("\"one two three four five six\"");
        let text = "a: 1\nfolded: >-\n  one two three\n  four five six\nb: 2\nc: \"one two\n  three four five six\"\n";
        let hidden = hidden_lines(text, &s);
        assert_eq!(hidden.into_iter().collect::<Vec<_>>(), [3, 4, 6, 7]);
    }

    #[test]
    fn secret_shaped_content_is_hidden_at_any_depth_and_inside_text() {
        let annotation = serde_json::to_string(&serde_json::json!({
            "apiVersion": "v1", "kind": "Secret", "stringData": {"password": "hunter2-plain"}
        }))
        .unwrap();
        let v = serde_json::json!({
            "kind": "HelmRelease",
            "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": annotation}},
            "spec": {"values": {
                "extraObjects": [{"apiVersion": "v1", "kind": "Secret", "data": {"token": "c2VjcmV0"}}],
                "asText": "- apiVersion: v1\n  kind: Secret\n  stringData:\n    token: {{ .Values.token }}-raw\n",
                "yamlText": "apiVersion: v1\nkind: Secret\nstringData:\n  key: yaml-secret-value\n",
            }}
        });
        let (red, hidden) = redact_for_display(&v, &Secrets::default()).unwrap();
        let text = serde_json::to_string(&red).unwrap();
        for leak in ["hunter2-plain", "c2VjcmV0", "-raw", "yaml-secret-value"] {
            assert!(!text.contains(leak), "{leak}: {text}");
        }
        assert!(
            hidden.data.contains_key("spec.values.extraObjects[0].data.token"),
            "{hidden:?}"
        );
        assert_eq!(hidden.data.len(), 4, "{hidden:?}");
        assert!(hidden.sensitive.is_empty());
        // Nothing to hide: no copy.
        assert!(
            redact_for_display(
                &serde_json::json!({"kind": "ConfigMap", "data": {"a": "b"}}),
                &Secrets::default()
            )
            .is_none()
        );
    }

    #[test]
    fn secrets_are_taken_out_of_values_keys_and_numbers() {
        let s = secrets_of("{token: abcdef-123456, pin: 4711}");
        let mut v = serde_json::json!({"a": "Bearer abcdef-123456", "abcdef-123456": 1, "n": 4711, "m": 47});
        assert!(s.redact_json(&mut v));
        let text = v.to_string();
        assert!(!text.contains("abcdef-123456") && !text.contains("4711"), "{text}");
        assert!(text.contains("47"));
    }

    #[test]
    fn union_keeps_every_set() {
        let a = secrets_of("\"first-secret-value\"");
        let b = secrets_of("\"second-secret-value\"");
        let u = Secrets::union([&a, &b]);
        assert!(u.holds("x first-secret-value") && u.holds("second-secret-value"));
        assert!(Secrets::union([]).is_empty());
    }
}
