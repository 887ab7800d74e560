//! A quick writer for the YAML strata emits: block mappings and sequences
//! with the layout, key order and scalar styles of the full writer
//! (serde-saphyr with its default options), written straight into one
//! string. Every object strata writes passes through here, and the full
//! writer's per-scalar bookkeeping was a quarter of a compile.
//!
//! What the quick writer is sure of it writes itself: plain words, numbers,
//! booleans, nulls, literal blocks and single-word folded lines. A scalar
//! whose style it is not sure of (quoting, escapes, YAML 1.1 words) is
//! written by the full writer alone, in the same position, and spliced in.
//! Anything whose layout it does not know — a sequence directly inside a
//! sequence, a block whose first line is indented, a long line with
//! spaces — gives `None`, and the caller writes the whole document with
//! the full writer. Debug builds check every answer against the full
//! writer.

use std::fmt::Write;

use serde_json::Value as J;

use super::words::{self, string_word};
use super::{Node, Value, WELL_KNOWN};

/// Columns one nesting level adds.
const STEP: usize = 2;
/// Longer single-line strings are folded (`>-`) by the full writer.
const FOLD_AT: usize = 80;

/// A value as the writer sees it.
enum View<'a, T> {
    Null,
    Bool(bool),
    UInt(u64),
    Int(i64),
    Float(f64),
    Str(&'a str),
    Seq(&'a [T]),
    /// Entries in the order they are written.
    Map(Vec<(&'a str, &'a T)>),
}

trait Tree: Sized {
    /// `top` is whether this is the document's root.
    fn view(&self, top: bool) -> View<'_, Self>;
}

/// JSON objects in the canonical order: at the root, the four well-known
/// keys first, then byte order. A JSON map iterates in byte order already.
impl Tree for J {
    fn view(&self, top: bool) -> View<'_, J> {
        match self {
            J::Null => View::Null,
            J::Bool(b) => View::Bool(*b),
            J::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => View::UInt(u),
                (None, Some(i), _) => View::Int(i),
                (None, None, Some(f)) => View::Float(f),
                (None, None, None) => View::Null,
            },
            J::String(s) => View::Str(s),
            J::Array(items) => View::Seq(items),
            J::Object(m) if top => {
                let mut entries: Vec<(&str, &J)> = Vec::with_capacity(m.len());
                for key in WELL_KNOWN {
                    if let Some((k, v)) = m.get_key_value(key) {
                        entries.push((k, v));
                    }
                }
                entries.extend(
                    m.iter()
                        .filter(|(k, _)| !WELL_KNOWN.contains(&k.as_str()))
                        .map(|(k, v)| (k.as_str(), v)),
                );
                View::Map(entries)
            }
            J::Object(m) => View::Map(m.iter().map(|(k, v)| (k.as_str(), v)).collect()),
        }
    }
}

/// Nodes as their JSON form writes: keys sorted, non-negative integers
/// unsigned, non-finite numbers null.
impl Tree for Node {
    fn view(&self, _top: bool) -> View<'_, Node> {
        match &self.value {
            Value::Null => View::Null,
            Value::Bool(b) => View::Bool(*b),
            Value::Int(i) if *i >= 0 => View::UInt(*i as u64),
            Value::Int(i) => View::Int(*i),
            Value::UInt(u) => View::UInt(*u),
            Value::Float(f) if f.is_finite() => View::Float(*f),
            Value::Float(_) => View::Null,
            Value::Str(s) => View::Str(s),
            Value::Seq(items) => View::Seq(items),
            Value::Map(m) => {
                let mut entries: Vec<(&str, &Node)> = m.iter().map(|(k, e)| (k.as_str(), &e.node)).collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                View::Map(entries)
            }
        }
    }
}

/// A JSON value as YAML, canonical key order at the root; `None` when the
/// full writer must write it.
pub fn json(value: &J, top: bool) -> Option<String> {
    document(value, top)
}

/// A node as its JSON form writes, keys sorted; `None` when the full
/// writer must write it.
pub fn node(node: &Node) -> Option<String> {
    document(node, false)
}

/// The text of each shared mapping, written once: a merged values tree
/// shares every mapping a layer does not change with that layer, so with
/// the trees of the other environments.
#[derive(Default)]
pub struct Texts {
    /// By the mapping's address; the mapping is held, so that no other
    /// takes its address while it is here.
    known: std::sync::Mutex<HashMap<usize, Known>>,
}

type Known = (std::sync::Arc<super::Map>, Option<std::sync::Arc<str>>);
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

impl Texts {
    /// Drops the texts and the mappings they hold on every thread: the
    /// merged mappings of a whole platform, freed one by one, were
    /// milliseconds of one thread at the end of a render.
    pub fn drop_in_parallel(self) {
        use rayon::prelude::*;
        let known: Vec<Known> = self
            .known
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .into_values()
            .collect();
        known.into_par_iter().with_max_len(16).for_each(drop);
    }

    /// Lets go of the texts of mappings no tree holds any more: those an
    /// environment's merge made, once its trees are dropped. No later
    /// mapping can be one of them (a mapping asked about is held by the
    /// asker), and the texts of the layers' own mappings, which every
    /// environment shares, stay. Without this, each environment's texts
    /// stayed to the end of the compile, in fresh memory.
    pub fn forget_unheld(&self) {
        let mut known = self.known.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        known.retain(|_, (map, _)| std::sync::Arc::strong_count(map) > 1);
    }

    /// The text of a non-empty mapping, as [`node`] writes it.
    fn of(&self, map: &std::sync::Arc<super::Map>, node: &Node) -> Option<std::sync::Arc<str>> {
        let at = std::sync::Arc::as_ptr(map) as usize;
        let lock = || self.known.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, text)) = lock().get(&at) {
            return text.clone();
        }
        let text = document(node, false).map(std::sync::Arc::from);
        lock().insert(at, (std::sync::Arc::clone(map), text.clone()));
        text
    }
}

/// [`node`], each mapping at the root's first level taken from `texts`
/// (written there when it is new): the same text.
pub fn node_with(node: &Node, texts: &Texts) -> Option<String> {
    let Value::Map(m) = &node.value else {
        return None;
    };
    let mut entries: Vec<(&str, &Node)> = m.iter().map(|(k, e)| (k.as_str(), &e.node)).collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    if entries.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(1024);
    for (key, value) in entries {
        match &value.value {
            Value::Map(inner) if !inner.is_empty() => {
                let text = texts.of(inner, value)?;
                write_key(&mut out, key)?;
                out.push_str(":\n");
                moved(&mut out, &text, STEP);
            }
            _ => map_body(&mut out, &[(key, value)], 0, false)?,
        }
    }
    Some(out)
}

/// A JSON object as YAML, canonical key order, with the value at the key
/// path `at` written as `text` instead: `text` is a non-empty mapping as
/// this writer writes it at column 0 ([`node`]), moved to its place.
/// `None` when the full writer must write the object.
pub fn json_spliced(value: &J, at: &[String], text: &str) -> Option<String> {
    let View::Map(entries) = value.view(true) else {
        return None;
    };
    if entries.is_empty() || at.is_empty() || text.is_empty() {
        return None;
    }
    exact(|out| {
        let mut done = false;
        map_at(out, &entries, 0, true, Some(Splice { at, text }), &mut done)?;
        // A path that leads nowhere: the full writer writes the object.
        done.then_some(())
    })
}

fn document<T: Tree>(value: &T, top: bool) -> Option<String> {
    let View::Map(entries) = value.view(top) else {
        return None;
    };
    if entries.is_empty() {
        return None;
    }
    exact(|out| map_body(out, &entries, 0, true))
}

/// Writes a text into this thread's scratch buffer and gives back an
/// exact copy. A text's size is not known ahead, and a buffer grown by
/// doubling holds up to twice its text, in memory that is fresh the first
/// time: on the machines strata was measured on, the kernel's zeroing of
/// fresh memory was a sixth of a render.
fn exact(write: impl FnOnce(&mut String) -> Option<()>) -> Option<String> {
    thread_local! {
        static SCRATCH: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    /// A scratch buffer grown past this by one large document is let go.
    const KEEP: usize = 1 << 20;
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut buffer) => {
            buffer.clear();
            let written = write(&mut buffer).map(|()| buffer.as_str().to_owned());
            if buffer.capacity() > KEEP {
                *buffer = String::new();
            }
            written
        }
        // Not reached (no writer writes another document midway), but a
        // buffer of its own is as good.
        Err(_) => {
            let mut buffer = String::new();
            write(&mut buffer).map(|()| buffer)
        }
    })
}

/// A mapping written elsewhere, and the keys that lead to it.
#[derive(Clone, Copy)]
struct Splice<'a> {
    at: &'a [String],
    text: &'a str,
}

/// Writes the entries of a non-empty mapping whose keys sit at `column`.
/// `first_inline` is whether the first key continues a line already
/// started (after `- `), so gets no indentation.
fn map_body<T: Tree>(out: &mut String, entries: &[(&str, &T)], column: usize, first_inline: bool) -> Option<()> {
    map_at(out, entries, column, first_inline, None, &mut false)
}

/// [`map_body`], with a [`Splice`] on the way down from this mapping.
fn map_at<T: Tree>(
    out: &mut String,
    entries: &[(&str, &T)],
    column: usize,
    first_inline: bool,
    splice: Option<Splice<'_>>,
    done: &mut bool,
) -> Option<()> {
    for (i, (key, value)) in entries.iter().enumerate() {
        if i > 0 || !first_inline {
            indent(out, column);
        }
        write_key(out, key)?;
        out.push(':');
        let here = splice.filter(|s| s.at[0] == *key);
        if let Some(Splice { at: [_], text }) = here {
            out.push('\n');
            moved(out, text, column + STEP);
            *done = true;
            continue;
        }
        match value.view(false) {
            View::Map(inner) if inner.is_empty() => out.push_str(" {}\n"),
            View::Map(inner) => {
                out.push('\n');
                let deeper = here.map(|s| Splice { at: &s.at[1..], ..s });
                map_at(out, &inner, column + STEP, false, deeper, done)?;
            }
            // The path leads through something other than a mapping.
            _ if here.is_some() => return None,
            View::Seq([]) => out.push_str(" []\n"),
            View::Seq(items) => {
                out.push('\n');
                // Compact: the dashes line up with the key.
                seq_body(out, items, column)?;
            }
            scalar => {
                out.push(' ');
                write_scalar(out, scalar, column + STEP)?;
            }
        }
    }
    Some(())
}

/// Writes the items of a non-empty sequence, dashes at `column`.
fn seq_body<T: Tree>(out: &mut String, items: &[T], column: usize) -> Option<()> {
    for item in items {
        indent(out, column);
        out.push_str("- ");
        match item.view(false) {
            View::Map(inner) if inner.is_empty() => out.push_str("{}\n"),
            View::Map(inner) => map_body(out, &inner, column + STEP, true)?,
            View::Seq([]) => out.push_str("[]\n"),
            // `- - x`: its layout is left to the full writer.
            View::Seq(_) => return None,
            View::Str(s) if s.contains('\n') || s.len() > FOLD_AT => return None,
            scalar => write_scalar(out, scalar, column + STEP)?,
        }
    }
    Some(())
}

/// Writes a text written at column 0 with every line that has characters
/// moved to `column`; empty lines (in a literal block) stay empty.
fn moved(out: &mut String, text: &str, column: usize) {
    // The line breaks found in one pass over the whole text, not line by
    // line: its lines are short.
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', text.as_bytes()) {
        if end > start {
            indent(out, column);
        }
        out.push_str(&text[start..=end]);
        start = end + 1;
    }
    if start < text.len() {
        indent(out, column);
        out.push_str(&text[start..]);
    }
}

fn indent(out: &mut String, column: usize) {
    const SPACES: &str = "                                                                ";
    let mut left = column;
    while left > 0 {
        let n = left.min(SPACES.len());
        out.push_str(&SPACES[..n]);
        left -= n;
    }
}

/// Writes a scalar and its line's end; a block scalar's lines sit at
/// `body` columns.
fn write_scalar<T>(out: &mut String, scalar: View<'_, T>, body: usize) -> Option<()> {
    match scalar {
        View::Null => out.push_str("null"),
        View::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        View::UInt(u) => {
            let _ = write!(out, "{u}");
        }
        View::Int(i) => {
            let _ = write!(out, "{i}");
        }
        View::Float(f) => float(out, f)?,
        View::Str(s) => return string(out, s, body),
        View::Seq(_) | View::Map(_) => return None,
    }
    out.push('\n');
    Some(())
}

/// A float as YAML 1.1 reads it back as a float: the shortest digits that
/// round-trip, always with a decimal point, and a signed exponent.
fn float(out: &mut String, f: f64) -> Option<()> {
    if !f.is_finite() {
        return None;
    }
    let mut buf = zmij::Buffer::new();
    let digits = buf.format_finite(f);
    match digits.find(['e', 'E']) {
        Some(e) => {
            let (mantissa, exponent) = (&digits[..e], &digits[e + 1..]);
            out.push_str(mantissa);
            if !mantissa.contains('.') {
                out.push_str(".0");
            }
            out.push('e');
            if !exponent.starts_with(['+', '-']) {
                out.push('+');
            }
            out.push_str(exponent);
        }
        None => {
            out.push_str(digits);
            if !digits.contains('.') {
                out.push_str(".0");
            }
        }
    }
    Some(())
}

/// The full writer's line for a mapping of one entry, `key: value`.
fn full_entry(key: &str, value: J) -> Option<String> {
    let mut one = serde_json::Map::new();
    one.insert(key.to_owned(), value);
    serde_saphyr::to_string(&J::Object(one)).ok()
}

fn write_key(out: &mut String, key: &str) -> Option<()> {
    if string_word(key) {
        out.push_str(key);
        return Some(());
    }
    // Keys are never folded; a long or multi-line one may take another form.
    if key.len() > super::MAX_IMPLICIT_KEY || key.contains('\n') {
        return None;
    }
    let written = full_word(key, true, || {
        let text = full_entry(key, J::Null)?;
        let written = text.strip_suffix(": null\n")?;
        (!written.contains('\n')).then(|| written.into())
    })?;
    out.push_str(&written);
    Some(())
}

/// The full writer's word for a string that takes quotes or escapes, as a
/// key (`key`) or a value, remembered on each thread: the same few such
/// words (`"on"`, a file mode, a version) come back in every component, and
/// each was a run of the serialiser. `None` where the full writer does not
/// write it on one line.
fn full_word(s: &str, key: bool, write: impl FnOnce() -> Option<std::rc::Rc<str>>) -> Option<std::rc::Rc<str>> {
    type Words = HashMap<Box<str>, Option<std::rc::Rc<str>>>;
    thread_local! {
        static WORDS: std::cell::RefCell<[Words; 2]> = std::cell::RefCell::new(Default::default());
    }
    /// Longer words are written each time; past this many, the words are
    /// forgotten and gathered again.
    const LONGEST: usize = 128;
    const MOST: usize = 4096;
    if s.len() > LONGEST {
        return write();
    }
    let known = WORDS.with(|w| w.borrow()[usize::from(key)].get(s).cloned());
    if let Some(known) = known {
        return known;
    }
    let written = write();
    WORDS.with(|w| {
        let mut w = w.borrow_mut();
        let words = &mut w[usize::from(key)];
        if words.len() >= MOST {
            words.clear();
        }
        words.insert(s.into(), written.clone());
    });
    written
}

/// Writes a string value whose block body (if it takes one) sits at `body`
/// columns, and its line's end.
fn string(out: &mut String, s: &str, body: usize) -> Option<()> {
    // Nearly every string is plain text: its characters are looked at once,
    // and a line break is looked for only in the others.
    let plain_chars = words::plain_chars(s);
    if !plain_chars && s.contains('\n') {
        return literal(out, s, body);
    }
    let plain = plain_chars && words::plain_text_of_plain_chars(s);
    if s.len() > FOLD_AT {
        // One long word is folded onto a line of its own; anything else
        // (wrapping at spaces, quoting) is the full writer's.
        if plain {
            out.push_str(">-\n");
            indent(out, body);
            out.push_str(s);
            out.push('\n');
            return Some(());
        }
        return None;
    }
    if plain {
        out.push_str(s);
        out.push('\n');
        return Some(());
    }
    // Quoting and escapes: the full writer's word, in a value's position.
    let written = full_word(s, false, || {
        let text = full_entry("k", J::String(s.to_owned()))?;
        let written = text.strip_prefix("k: ")?;
        (written.find('\n') == Some(written.len() - 1)).then(|| written.into())
    })?;
    out.push_str(&written);
    Some(())
}

/// A multi-line string as a literal block, the chomping indicator keeping
/// its trailing newlines exactly.
fn literal(out: &mut String, s: &str, body: usize) -> Option<()> {
    let content = s.trim_end_matches('\n');
    let trailing = s.len() - content.len();
    // A first line that starts with blanks needs an indentation indicator;
    // characters a block cannot hold need quoting.
    let first = content.split('\n').find(|l| !l.is_empty()).unwrap_or("");
    if content.is_empty() || first.starts_with([' ', '\t']) || !block_safe(s) {
        return None;
    }
    out.push('|');
    match trailing {
        0 => out.push('-'),
        1 => {}
        _ => out.push('+'),
    }
    out.push('\n');
    for line in content.split('\n') {
        if !line.is_empty() {
            indent(out, body);
            out.push_str(line);
        }
        out.push('\n');
    }
    for _ in 1..trailing {
        out.push('\n');
    }
    Some(())
}

/// Whether every character can stand in a block scalar as it is.
fn block_safe(s: &str) -> bool {
    // Printable ASCII, tabs and line ends: most blocks, byte by byte.
    if s.bytes().all(|b| matches!(b, b'\n' | b'\t' | 0x20..=0x7E)) {
        return true;
    }
    s.chars().all(|c| {
        matches!(c, '\n' | '\t')
            || matches!(c as u32, 0x20..=0x7E | 0xA0..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10_FFFF)
                && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{FEFF}')
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn moved_indents_every_line_but_the_empty_ones() {
        let by_lines = |text: &str, column: usize| {
            let mut out = String::new();
            for line in text.split_inclusive('\n') {
                if line != "\n" {
                    out.push_str(&" ".repeat(column));
                }
                out.push_str(line);
            }
            out
        };
        for text in [
            "",
            "a",
            "a\n",
            "\n",
            "\n\n",
            "a\n\nb",
            "a: 1\nb:\n  c: 2\n\n\n",
            "  x\ny",
        ] {
            for column in [0, 2, 70] {
                let mut out = String::from("k:\n");
                moved(&mut out, text, column);
                assert_eq!(out, format!("k:\n{}", by_lines(text, column)), "{text:?} at {column}");
            }
        }
    }

    /// The full writer's text of the same value.
    fn full(value: &J, top: bool) -> String {
        super::super::with_newline(if top {
            super::super::full_canonical(value)
        } else {
            super::super::full_sorted(value)
        })
    }

    /// Checks the quick text against the full writer's; returns whether
    /// there was one.
    fn same(value: J) -> bool {
        let mut quick_at_all = false;
        for top in [true, false] {
            if let Some(quick) = json(&value, top) {
                assert_eq!(quick, full(&value, top), "{value}");
                quick_at_all = true;
            }
        }
        quick_at_all
    }

    #[test]
    fn layouts_match_the_full_writer() {
        assert!(same(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "labels": {"app.kubernetes.io/name": "x"}, "annotations": {}},
            "data": {"a": "on", "b": "0755", "c": "1.7.0", "d": "", "e": "a: b", "f": "#x", "g": "x #y", "h": "-", "i": "é"},
            "list": [1, -2, 2.5, 1e300, 1e-9, 3.0, null, true, "x", {}, [], {"a": 1, "b": [{"c": {"d": [1]}}]}],
            "empty": [], "nested": {"seq": [{"k": "v", "m": {"n": null}}]},
        })));
    }

    #[test]
    fn blocks_match_the_full_writer() {
        for s in [
            "a\nb",
            "a\nb\n",
            "a\nb\n\n",
            "a\n\nb\n",
            "\n",
            "\n\n",
            "a\n",
            " a\nb",
            "\na\n",
            "a\tb\nc",
            "x\r\ny",
            "a\u{2028}b\nc",
        ] {
            same(json!({"k": s, "m": {"k": s}, "s": [{"k": s}], "l": [s]}));
            same(json!({"k": s, "m": {"k": s}, "s": [{"k": s}]}));
        }
        // The usual blocks are the quick writer's own.
        for s in ["a\nb", "a\nb\n", "a\nb\n\n", "a\n\nb\n", "a:\n  b: c\n"] {
            assert!(same(json!({"k": s, "m": {"k": s}, "s": [{"k": s}]})), "{s:?}");
        }
        let long = "x".repeat(100);
        let spaced = format!("{} {}", "y".repeat(50), "z".repeat(50));
        let quoted = format!("0{}", "9".repeat(90));
        for s in [long, spaced, quoted] {
            same(json!({"k": s, "m": {"k": s}, "s": [{"k": s}], "l": [s]}));
            same(json!({"k": s, "m": {"k": s}, "s": [{"k": s}]}));
        }
        assert!(same(json!({"k": "x".repeat(100), "s": [{"k": "x".repeat(100)}]})));
    }

    #[test]
    fn words_match_the_full_writer() {
        let words = [
            "y",
            "Y",
            "yes",
            "No",
            "ON",
            "off",
            "True",
            "NULL",
            "~",
            "nan",
            "Inf",
            ".inf",
            "-.5",
            "1e3",
            "0x1F",
            "0o7",
            "1:20",
            "2024-01-01",
            "<<",
            "=",
            "a=b",
            "a,b",
            "[x]",
            "{x}",
            "*a",
            "&a",
            "!t",
            "%x",
            "@x",
            "`x",
            "?x",
            "? x",
            "- x",
            "-x",
            "--- x",
            "...",
            "a:",
            "a:b",
            "a: b",
            "a #b",
            "a#b",
            "a b",
            " a",
            "a ",
            "a\tb",
            "'a",
            "\"a",
            "a\\b",
            "v1.2.3",
            "registry.example.com/x@sha256:abc",
            "https://example.com/a?b=c",
            "a+b",
            "_x",
            "/x",
        ];
        for w in words {
            assert!(same(json!({ w: w, "list": [w], "m": {w: [w]} })), "{w:?}");
        }
    }

    /// A xorshift generator: the same trees on every run.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }
    const PIECES: &[&str] = &[
        "a", "Z", "x1", "0", "7", ".", "-", "_", "/", ":", " ", "#", ",", "=", "@", "+", "~", "'", "\"", "\\", "\n",
        "\t", "é", "yes", "on", "null", "1.5", "e3", "0x", "[", "{", "*", "&", "!", "%", "|", ">", "?",
    ];
    fn word(rng: &mut Rng) -> String {
        (0..rng.below(6))
            .map(|_| PIECES[rng.below(PIECES.len() as u64) as usize])
            .collect()
    }
    /// A random tree of tricky words and shapes.
    fn tree(rng: &mut Rng, depth: u32) -> J {
        match rng.below(if depth > 3 { 6 } else { 9 }) {
            0 => J::Null,
            1 => J::Bool(rng.below(2) == 0),
            2 => json!(rng.below(1000) as i64 - 500),
            3 => json!(rng.below(100_000) as f64 / 64.0),
            4 | 5 => J::String(word(rng)),
            6 | 7 => J::Object((0..rng.below(4)).map(|_| (word(rng), tree(rng, depth + 1))).collect()),
            _ => J::Array((0..rng.below(4)).map(|_| tree(rng, depth + 1)).collect()),
        }
    }

    /// A random non-empty mapping of up to `most` keys.
    fn mapping(rng: &mut Rng, most: u64) -> J {
        J::Object((0..1 + rng.below(most)).map(|_| (word(rng), tree(rng, 0))).collect())
    }

    /// Random trees of tricky words and shapes, from a fixed seed.
    #[test]
    fn random_trees_match_the_full_writer() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut quick = 0;
        for _ in 0..3000 {
            quick += usize::from(same(mapping(&mut rng, 4)));
        }
        // Most of them are the quick writer's own.
        assert!(quick > 1500, "{quick}");
    }

    /// A values tree written on its own and moved into its object is the
    /// object written whole, whatever the tree, and wherever it sits.
    #[test]
    fn spliced_values_are_the_object_written_whole() {
        let origin = super::super::Origin::file_start("values.yaml");
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        let mut spliced = 0;
        for i in 0..3000 {
            let values = mapping(&mut rng, 5);
            let node = Node::from_json(&values, &origin);
            let Some(text) = super::node(&node) else { continue };
            let at: Vec<String> = if i % 2 == 0 {
                vec!["spec".into(), "values".into()]
            } else {
                vec!["spec".into(), "source".into(), "helm".into(), "valuesObject".into()]
            };
            let mut object = json!({
                "apiVersion": "example.com/v1", "kind": "Release",
                "metadata": {"name": "x"},
                "spec": {"a": 1, "source": {"helm": {"b": "c"}}, "z": [{"y": "x"}]},
            });
            let marker = J::String("marker".into());
            let place = |o: &mut J, v: J| *at.iter().fold(o, |o, k| &mut o[k.as_str()]) = v;
            place(&mut object, marker);
            let with_marker = object.clone();
            place(&mut object, values.clone());
            let Some(whole) = json(&object, true) else { continue };
            assert_eq!(
                json_spliced(&with_marker, &at, &text).as_deref(),
                Some(whole.as_str()),
                "{values}"
            );
            spliced += 1;
        }
        assert!(spliced > 1000, "{spliced}");
        // A path that leads nowhere, or through a scalar, is the full
        // writer's.
        let object = json!({"apiVersion": "v1", "kind": "K", "spec": {"values": "m"}});
        assert_eq!(json_spliced(&object, &["spec".into(), "other".into()], "a: 1\n"), None);
        assert_eq!(
            json_spliced(&object, &["spec".into(), "values".into(), "x".into()], "a: 1\n"),
            None
        );
        assert!(json_spliced(&object, &["spec".into(), "values".into()], "a: 1\n").is_some());
    }

    /// Mappings one tree shares with another are written once, and the
    /// text is the same as written afresh.
    #[test]
    fn shared_mappings_are_written_once() {
        let origin = super::super::Origin::file_start("values.yaml");
        let texts = Texts::default();
        let mut rng = Rng(0x1234_5678_9ABC_DEF1);
        for _ in 0..500 {
            let a = Node::from_json(&mapping(&mut rng, 5), &origin);
            assert_eq!(node_with(&a, &texts), node(&a));
            // Another root over the same mappings, one key more.
            let mut m = a.as_map().cloned().unwrap_or_default();
            let extra = Node::from_json(&json!({"k": [1, "two"]}), &origin);
            m.insert(
                word(&mut rng) + "x",
                super::super::Entry {
                    key_origin: origin.clone(),
                    node: extra,
                },
            );
            let b = Node {
                value: Value::Map(std::sync::Arc::new(m)),
                origin: origin.clone(),
            };
            assert_eq!(node_with(&b, &texts), node(&b));
        }
        let known = texts.known.lock().unwrap();
        assert!(!known.is_empty());
    }

    /// The texts of mappings no tree holds go; those still held stay, and
    /// are given back as before.
    #[test]
    fn texts_of_dropped_trees_are_let_go() {
        let origin = super::super::Origin::file_start("values.yaml");
        let texts = Texts::default();
        let kept = Node::from_json(&json!({"image": {"tag": "v1"}, "replicas": {"min": 2}}), &origin);
        let gone = Node::from_json(&json!({"image": {"tag": "v2"}}), &origin);
        let written = node_with(&kept, &texts);
        assert_eq!(node_with(&gone, &texts), node(&gone));
        assert_eq!(texts.known.lock().unwrap().len(), 3);
        drop(gone);
        texts.forget_unheld();
        let mut held: Vec<usize> = match &kept.value {
            Value::Map(m) => m
                .values()
                .filter_map(|e| match &e.node.value {
                    Value::Map(inner) => Some(std::sync::Arc::as_ptr(inner) as usize),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let mut left: Vec<usize> = texts.known.lock().unwrap().keys().copied().collect();
        left.sort_unstable();
        held.sort_unstable();
        assert_eq!(left, held);
        assert_eq!(node_with(&kept, &texts), written);
    }
}
