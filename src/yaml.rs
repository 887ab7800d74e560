//! YAML in and out: a spanned value tree read with Helm's scalar semantics,
//! and canonical YAML that Go's YAML 1.1 readers read back unchanged.
//!
//! Reading. Every YAML file strata reads goes through [`parse`], which gives a
//! [`Node`] tree where every node knows the file, line and column it came from.
//! Plain scalars are resolved the way Helm resolves values files (go-yaml v2,
//! a YAML 1.1 reader): `true/yes/y/on` and `false/no/n/off` are booleans,
//! `0755` is the octal integer 493, `1_000` is 1000, `0x1F` is 31, `~`, `null`
//! and an empty value are null, and timestamps such as `2024-01-01` stay
//! strings. Quoted scalars are always strings. Duplicate keys are errors, and
//! the parser's budgets stop alias bombs and runaway nesting.
//!
//! Writing. [`to_canonical_yaml`] writes one object with the canonical key
//! order (`apiVersion`, `kind`, `metadata`, `spec`, then the rest sorted; every
//! nested mapping sorted) and quotes every string a YAML 1.1 reader would take
//! for something else.

use std::cell::Cell;
use std::fmt;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_saphyr::Spanned;

mod emit;
mod file;
mod lines;
pub mod path;
mod read;
pub(crate) mod words;

pub use emit::Texts;
pub use file::FileName;

/// Largest YAML or JSON input strata reads, in bytes. Values files of real
/// charts are well under 1 MiB; the limit keeps a stray binary or generated
/// dump from taking the machine's memory.
pub const MAX_INPUT_BYTES: usize = 8 * 1024 * 1024;

/// Deepest nesting accepted in an input document.
pub const MAX_DEPTH: usize = 128;

/// Where a value was written: a file relative to the repository root, and a
/// 1-based line and column with the length of the written text in characters.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin {
    pub file: FileName,
    pub line: u32,
    pub col: u32,
    pub len: u32,
}

impl Origin {
    pub fn new(file: impl Into<FileName>, line: u32, col: u32, len: u32) -> Self {
        Origin {
            file: file.into(),
            line,
            col,
            len,
        }
    }

    /// The start of a file, for findings about a file as a whole.
    pub fn file_start(file: impl Into<FileName>) -> Self {
        Origin::new(file, 1, 1, 0)
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// A YAML value whose every node carries its [`Origin`].
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub value: Value,
    pub origin: Origin,
}

/// A mapping entry: the key's origin and the value node.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub key_origin: Origin,
    pub node: Node,
}

/// A mapping, in its written order. Its keys are hashed with foldhash,
/// seeded at random per process (no input can be made to collide on
/// purpose): hashing every key with SipHash was a tenth of reading a values
/// file.
pub type Map = IndexMap<String, Entry, foldhash::fast::RandomState>;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Shared, not copied: a merged tree shares every mapping it does not
    /// change with its layers (and with the merged trees of the other
    /// environments), so a large values file is held about once. A pointer
    /// also keeps every node small (48 bytes).
    Map(Arc<Map>),
}

impl Value {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) | Value::UInt(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

impl Node {
    pub fn as_map(&self) -> Option<&Map> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?.get(key).map(|e| &e.node)
    }

    /// Follows a dot-separated path of mapping keys.
    pub fn get_path(&self, path: &str) -> Option<&Node> {
        path.split('.')
            .filter(|k| !k.is_empty())
            .try_fold(self, |node, key| node.get(key))
    }

    /// The plain JSON form, without origins.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::UInt(u) => J::from(*u),
            Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(m) => J::Object(m.iter().map(|(k, e)| (k.clone(), e.node.to_json())).collect()),
        }
    }

    /// Builds a node tree from JSON, every node at `origin`.
    pub fn from_json(value: &serde_json::Value, origin: &Origin) -> Node {
        use serde_json::Value as J;
        let value = match value {
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(*b),
            J::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Value::Int(i)
                } else if let Some(u) = n.as_u64() {
                    Value::UInt(u)
                } else {
                    Value::Float(n.as_f64().unwrap_or(0.0))
                }
            }
            J::String(s) => Value::Str(s.clone()),
            J::Array(items) => Value::Seq(items.iter().map(|v| Node::from_json(v, origin)).collect()),
            J::Object(m) => Value::Map(Arc::new(
                m.iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            Entry {
                                key_origin: origin.clone(),
                                node: Node::from_json(v, origin),
                            },
                        )
                    })
                    .collect(),
            )),
        };
        Node {
            value,
            origin: origin.clone(),
        }
    }
}

/// A YAML syntax or structure error at a place in a file.
#[derive(Clone, Debug, PartialEq)]
pub struct ParseError {
    pub origin: Origin,
    pub message: String,
}

thread_local! {
    /// The file being parsed on this thread. `Spanned` gives positions but no
    /// way to pass context down, so [`parse`] sets this for the duration of one
    /// call; nothing else reads it.
    static CURRENT_FILE: Cell<Option<FileName>> = const { Cell::new(None) };
}

fn current_file() -> FileName {
    CURRENT_FILE.get().unwrap_or_else(|| FileName::new("<input>"))
}

/// The most values (parser events and nodes) a document may hold: far
/// beyond any values file (the largest charts' defaults hold thousands),
/// and low enough that a file of tiny values (`[1,1,1,…]`) is refused in
/// seconds and a few hundred MiB.
pub const MAX_VALUES: usize = 2_000_000;

fn options(multi: bool) -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_depth: MAX_DEPTH,
            max_documents: if multi { 10_000 } else { 1 },
            max_aliases: 10_000,
            max_anchors: 10_000,
            max_recorded_anchor_events: 200_000,
            max_recorded_anchor_bytes: 16 * 1024 * 1024,
            max_events: MAX_VALUES,
            max_nodes: MAX_VALUES,
        },
        legacy_octal_numbers: true,
        with_snippet: false,
    }
}

/// Reads one YAML document. An empty file is an empty mapping.
pub fn parse(file: &Arc<str>, text: &str) -> Result<Node, ParseError> {
    let docs = parse_inner(file, text, false)?;
    Ok(docs.into_iter().next().unwrap_or_else(|| Node {
        value: Value::Map(Arc::default()),
        origin: Origin::file_start(file),
    }))
}

/// Reads every document of a YAML stream, skipping empty ones.
pub fn parse_multi(file: &Arc<str>, text: &str) -> Result<Vec<Node>, ParseError> {
    parse_inner(file, text, true)
}

fn parse_inner(file: &Arc<str>, text: &str, multi: bool) -> Result<Vec<Node>, ParseError> {
    let file = FileName::from(file);
    if text.len() > MAX_INPUT_BYTES {
        return Err(ParseError {
            origin: Origin::file_start(file),
            message: format!(
                "file is {} bytes, over the limit of {} bytes for an input file",
                text.len(),
                MAX_INPUT_BYTES
            ),
        });
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Some((line, col)) = find_tab_indent(text) {
        return Err(ParseError {
            origin: Origin::new(file, line, col, 1),
            message: "a tab character indents this line; YAML indentation must use spaces".into(),
        });
    }
    if let Some(docs) = lines::read(file, text).or_else(|| read::read(file, text, multi)) {
        #[cfg(debug_assertions)]
        assert_eq!(
            Ok(&docs),
            parse_full(file, text, multi).as_ref(),
            "the quick YAML reader differs from the full reader"
        );
        return Ok(docs);
    }
    parse_full(file, text, multi)
}

/// The full reader, which also words every error.
fn parse_full(file: FileName, text: &str, multi: bool) -> Result<Vec<Node>, ParseError> {
    CURRENT_FILE.set(Some(file));
    let result = if multi {
        serde_saphyr::from_multiple_with_options::<Option<Spanned<Raw>>>(text, options(true))
            .map(|docs| docs.into_iter().flatten().map(Raw::into_node).collect())
    } else {
        serde_saphyr::from_str_with_options::<Option<Spanned<Raw>>>(text, options(false))
            .map(|doc| doc.into_iter().map(Raw::into_node).collect())
    };
    CURRENT_FILE.set(None);
    result.map_err(|e| convert_error(file, text, &e))
}

/// Reads every document of a YAML stream into plain JSON values, without
/// origins: for strata's own template output, where places are not needed
/// and spans would only cost time. Same scalar semantics as [`parse`].
pub fn parse_plain_multi(file: &Arc<str>, text: &str) -> Result<Vec<serde_json::Value>, ParseError> {
    serde_saphyr::from_multiple_with_options::<Option<serde_json::Value>>(text, options(true))
        .map(|docs| docs.into_iter().flatten().collect())
        .map_err(|e| convert_error(file, text, &e))
}

/// A line indented with a tab (before any other text) is an error in YAML, and
/// the parser's message for it is vague; say it plainly. A document that is
/// one flow collection (JSON, `tofu output -json`) has no indentation: tabs
/// there are whitespace, as JSON allows.
fn find_tab_indent(text: &str) -> Option<(u32, u32)> {
    // Nearly every file has no tab at all: one pass of memchr, not a line
    // walk.
    if !text.as_bytes().contains(&b'\t') {
        return None;
    }
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or("");
    if first.starts_with('{') || first.starts_with('[') {
        return None;
    }
    let mut in_block_scalar = false;
    for (i, line) in text.lines().enumerate() {
        let indent: String = line.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
        if in_block_scalar {
            if line.trim().is_empty() || indent.starts_with(' ') {
                continue;
            }
            in_block_scalar = false;
        }
        if let Some(pos) = indent.find('\t') {
            let rest = line[indent.len()..].trim_start();
            if !rest.is_empty() && !rest.starts_with('#') {
                return Some((i as u32 + 1, pos as u32 + 1));
            }
        }
        let t = line.trim_end();
        if t.ends_with('|') || t.ends_with('>') || t.ends_with("|-") || t.ends_with(">-") {
            in_block_scalar = true;
        }
    }
    None
}

/// The longest plain (implicit) mapping key YAML allows, in characters.
pub const MAX_IMPLICIT_KEY: usize = 1024;

/// A plain-words message, with the remedy, for the parser's terse ones.
fn clearer(message: &str, text: &str, line: u32, col: u32) -> Option<String> {
    let line_text = text.lines().nth(line.saturating_sub(1) as usize).unwrap_or("");
    let from_col: String = line_text.chars().skip(col.saturating_sub(1) as usize).collect();
    if let Some(breach) = message.strip_prefix("budget breached: ") {
        let what = breach.split([' ', '{']).next().unwrap_or(breach);
        return Some(match what {
            "Documents" => "this file holds more than one YAML document (a second one starts here); \
                            strata reads one: merge them into one mapping, or remove this `---`"
                .into(),
            "Depth" => format!("the document is nested deeper than {MAX_DEPTH} levels"),
            "Aliases" | "Anchors" | "AliasAnchorRatio" | "MergeKeys" => {
                "the document uses too many anchors, aliases or merge keys (more than 10,000): \
                 an alias bomb expands to far more data than the file holds"
                    .into()
            }
            "Nodes" | "Events" | "ScalarBytes" | "InputBytes" => {
                format!(
                    "the document holds too many values for an input file (over {} million)",
                    MAX_VALUES / 1_000_000
                )
            }
            _ => return None,
        });
    }
    if message.starts_with("recursion limit exceeded") {
        return Some(format!("the document is nested deeper than {MAX_DEPTH} levels"));
    }
    if message.starts_with("mapping values are not allowed") {
        // YAML ends an implicit key at 1024 characters; the parser then
        // sees the `:` as a stray one.
        let key = line_text.trim_start().trim_start_matches("- ");
        let key_len = key.split(": ").next().map_or(0, |k| k.chars().count());
        if key_len > MAX_IMPLICIT_KEY {
            return Some(format!(
                "this mapping key is {key_len} characters long; YAML allows at most {MAX_IMPLICIT_KEY} in a plain key \
                 (write a longer one as an explicit key: `? key` on one line, `: value` on the next)"
            ));
        }
    }
    let tagged = |kind: &str| {
        let token: String = from_col
            .chars()
            .take_while(|c| !matches!(c, ',' | ']' | '}' | '#'))
            .collect();
        let token = token.trim();
        let tag = line_text[..line_text.len() - from_col.len()]
            .rsplit("!!")
            .next()
            .and_then(|t| t.split_whitespace().next())
            .unwrap_or(kind);
        format!("`{token}` is not {kind}, but its tag `!!{tag}` says it is; remove the tag, or write {kind}")
    };
    if message.starts_with("invalid u") || message.starts_with("invalid i") {
        return Some(tagged("an integer"));
    }
    if message.starts_with("invalid f") {
        return Some(tagged("a number"));
    }
    if message.starts_with("invalid boolean") {
        return Some(tagged("a boolean"));
    }
    if message.starts_with("expected string scalar") {
        return Some(
            "a mapping key must be a string, and this one is a list or a mapping; quote it if you mean the text".into(),
        );
    }
    None
}

fn convert_error(file: impl Into<FileName>, text: &str, e: &serde_saphyr::Error) -> ParseError {
    let inner = e.without_snippet();
    let (line, col) = inner
        .location()
        .map(|l| (l.line() as u32, l.column() as u32))
        .unwrap_or((1, 1));
    let mut message = inner.to_string();
    // The library appends " at line L column C"; strata prints the place itself.
    if let Some(idx) = message.rfind(" at line ") {
        message.truncate(idx);
    }
    let mut len = 1;
    if let Some(rest) = message.strip_prefix("duplicate mapping key: ") {
        let key = rest.split(", set DuplicateKeyPolicy").next().unwrap_or(rest).to_owned();
        len = key.chars().count() as u32;
        message = format!(
            "duplicate key `{key}`: a YAML mapping may not repeat a key (Go's readers would silently keep the last one)"
        );
    }
    if message.starts_with("cannot deserialize null into string") {
        message = "a mapping key is null (`~`, `null` or nothing); quote it if you mean the text".into();
    }
    if let Some(clear) = clearer(&message, text, line, col) {
        message = clear;
    }
    ParseError {
        origin: Origin::new(file, line.max(1), col.max(1), len),
        message,
    }
}

/// The value as the deserializer gives it; [`Spanned`] wraps each node.
enum Raw {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    // Children are built into nodes as soon as the deserializer gives
    // them, so the parser's own spanned tree never exists whole beside
    // the node tree.
    Seq(Vec<Node>),
    Map(Map),
}

fn origin_of(loc: &serde_saphyr::Location, file: FileName) -> Origin {
    let len = loc.span().len().min(u32::MAX as u64) as u32;
    Origin::new(file, loc.line().max(1) as u32, loc.column().max(1) as u32, len)
}

impl Raw {
    fn into_node(spanned: Spanned<Raw>) -> Node {
        Raw::build(spanned, current_file())
    }

    fn build(spanned: Spanned<Raw>, file: FileName) -> Node {
        let origin = origin_of(&spanned.referenced, file);
        let value = match spanned.value {
            Raw::Null => Value::Null,
            Raw::Bool(b) => Value::Bool(b),
            Raw::Int(i) => Value::Int(i),
            Raw::UInt(u) => {
                if let Ok(i) = i64::try_from(u) {
                    Value::Int(i)
                } else {
                    Value::UInt(u)
                }
            }
            Raw::Float(f) => Value::Float(f),
            Raw::Str(s) => Value::Str(s),
            Raw::Seq(mut items) => {
                items.shrink_to_fit();
                Value::Seq(items)
            }
            Raw::Map(mut map) => {
                map.shrink_to_fit();
                Value::Map(Arc::new(map))
            }
        };
        Node { value, origin }
    }
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Raw, E> {
        Ok(Raw::UInt(v))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Raw, E> {
        i64::try_from(v)
            .map(Raw::Int)
            .map_err(|_| E::custom("integer out of range"))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Raw, E> {
        u64::try_from(v)
            .map(Raw::UInt)
            .map_err(|_| E::custom("integer out of range"))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Raw, E> {
        Ok(Raw::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Raw, E> {
        Ok(Raw::Str(v))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Raw, E> {
        String::from_utf8(v.to_vec())
            .map(Raw::Str)
            .map_err(|_| E::custom("binary data that is not UTF-8 text"))
    }
    fn visit_unit<E>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_none<E>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Raw, D::Error> {
        Raw::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let file = current_file();
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Raw>>()? {
            items.push(Raw::build(item, file));
        }
        Ok(Raw::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let file = current_file();
        let mut entries = Map::default();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            let value = map.next_value::<Spanned<Raw>>()?;
            let key_origin = origin_of(&key.referenced, file);
            entries.insert(
                key.value,
                Entry {
                    key_origin,
                    node: Raw::build(value, file),
                },
            );
        }
        Ok(Raw::Map(entries))
    }
}

/// Serialises a JSON value with the canonical key order.
pub struct Canonical<'a> {
    value: &'a serde_json::Value,
    top: bool,
}

impl<'a> Canonical<'a> {
    pub fn object(value: &'a serde_json::Value) -> Self {
        Canonical { value, top: true }
    }
}

/// Where a key of a Kubernetes object goes: the four well-known keys first,
/// then the rest in byte order.
fn key_rank(key: &str, top: bool) -> (usize, &str) {
    let first = if top {
        WELL_KNOWN.iter().position(|k| *k == key)
    } else {
        None
    };
    (first.unwrap_or(WELL_KNOWN.len()), key)
}

/// The keys that open a Kubernetes object, in this order.
const WELL_KNOWN: [&str; 4] = ["apiVersion", "kind", "metadata", "spec"];

impl Serialize for Canonical<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde_json::Value as J;
        match self.value {
            J::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort_by(|a, b| key_rank(a, self.top).cmp(&key_rank(b, self.top)));
                let mut map = s.serialize_map(Some(keys.len()))?;
                for k in keys {
                    map.serialize_entry(
                        k,
                        &Canonical {
                            value: &m[k.as_str()],
                            top: false,
                        },
                    )?;
                }
                map.end()
            }
            J::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Canonical {
                        value: item,
                        top: false,
                    })?;
                }
                seq.end()
            }
            other => other.serialize(s),
        }
    }
}

/// Writes one object as canonical YAML, ending in a newline.
pub fn to_canonical_yaml(value: &serde_json::Value) -> String {
    checked(emit::json(value, true), || full_canonical(value))
}

/// Writes any value (Helm values, not an object) as YAML with every
/// mapping's keys sorted, ending in a newline.
pub fn to_sorted_yaml(value: &serde_json::Value) -> String {
    checked(emit::json(value, false), || full_sorted(value))
}

/// [`to_sorted_yaml`] of a node's JSON form, written from the node itself,
/// so that a large values tree is not copied into JSON first.
pub fn node_to_sorted_yaml(node: &Node) -> String {
    checked(emit::node(node), || {
        serde_saphyr::to_string(&SortedNode(node)).unwrap_or_else(|_| full_sorted(&node.to_json()))
    })
}

/// The quick writer's text of a node's JSON form, keys sorted, as
/// [`node_to_sorted_yaml`] writes it; `None` where only the full writer
/// writes it (and for an empty mapping).
pub fn node_to_sorted_yaml_quick(node: &Node, texts: &Texts) -> Option<String> {
    let text = emit::node_with(node, texts)?;
    Some(checked(Some(text), || {
        serde_saphyr::to_string(&SortedNode(node)).unwrap_or_default()
    }))
}

/// One object as [`to_canonical_yaml`] writes it, but with the mapping at
/// the key path `at` taken from `text`, that mapping as
/// [`node_to_sorted_yaml_quick`] wrote it: a large values tree is not
/// copied into the object to be written. `None` where the full writer
/// must write the object.
pub fn to_canonical_yaml_spliced(value: &serde_json::Value, at: &[String], text: &str) -> Option<String> {
    emit::json_spliced(value, at, text)
}

/// The quick writer's text, or the full writer's where it has none; in
/// debug builds, every quick text is checked against the full writer's.
fn checked(quick: Option<String>, full: impl FnOnce() -> String) -> String {
    match quick {
        Some(text) => {
            #[cfg(debug_assertions)]
            assert_eq!(
                text,
                with_newline(full()),
                "the quick YAML writer differs from the full writer"
            );
            text
        }
        None => with_newline(full()),
    }
}

/// The text ending in a newline, as every file strata writes does.
fn with_newline(mut text: String) -> String {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The full writer, canonical key order at the root.
fn full_canonical(value: &serde_json::Value) -> String {
    let opts = serde_saphyr::ser_options! {
        indent_step: 2,
        compact_list_indent: true,
        prefer_block_scalars: true,
    };
    serde_saphyr::to_string_with_options(&Canonical::object(value), opts)
        // Serialising a JSON tree has no failure mode: keys are strings and
        // numbers are finite. Fall back to JSON, which is YAML, all the same.
        .unwrap_or_else(|_| serde_json::to_string_pretty(value).unwrap_or_default())
}

/// The full writer, every mapping's keys sorted.
fn full_sorted(value: &serde_json::Value) -> String {
    serde_saphyr::to_string(&Canonical { value, top: false })
        .unwrap_or_else(|_| serde_json::to_string_pretty(value).unwrap_or_default())
}

/// A node serialised as its JSON form ([`Node::to_json`]) serialises,
/// without making that JSON: keys of every mapping sorted, non-finite
/// numbers null. For templates and [`to_sorted_yaml`] output.
pub struct SortedNode<'a>(pub &'a Node);

impl Serialize for SortedNode<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0.value {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            // As serde_json's numbers serialise: non-negative as unsigned.
            Value::Int(i) if *i >= 0 => s.serialize_u64(*i as u64),
            Value::Int(i) => s.serialize_i64(*i),
            Value::UInt(u) => s.serialize_u64(*u),
            Value::Float(f) if f.is_finite() => s.serialize_f64(*f),
            Value::Float(_) => s.serialize_unit(),
            Value::Str(t) => s.serialize_str(t),
            Value::Seq(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&SortedNode(item))?;
                }
                seq.end()
            }
            Value::Map(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let mut map = s.serialize_map(Some(keys.len()))?;
                for k in keys {
                    map.serialize_entry(k, &SortedNode(&m[k.as_str()].node))?;
                }
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Node {
        parse(&Arc::from("t.yaml"), text).unwrap()
    }

    #[test]
    fn helm_scalar_semantics() {
        let n = p("a: on\nb: 'on'\nc: 0755\nd: 1_000\ne: 2024-01-01\nf: ~\ng:\nh: 0x1F\ni: 1.5\nj: no\n");
        let j = n.to_json();
        assert_eq!(j["a"], serde_json::json!(true));
        assert_eq!(j["b"], serde_json::json!("on"));
        assert_eq!(j["c"], serde_json::json!(493));
        assert_eq!(j["d"], serde_json::json!(1000));
        assert_eq!(j["e"], serde_json::json!("2024-01-01"));
        assert_eq!(j["f"], serde_json::Value::Null);
        assert_eq!(j["g"], serde_json::Value::Null);
        assert_eq!(j["h"], serde_json::json!(31));
        assert_eq!(j["i"], serde_json::json!(1.5));
        assert_eq!(j["j"], serde_json::json!(false));
    }

    #[test]
    fn origins_are_one_based() {
        let n = p("top:\n  child: value\n");
        let child = n.get_path("top.child").unwrap();
        assert_eq!((child.origin.line, child.origin.col), (2, 10));
        let key = &n.as_map().unwrap()["top"].key_origin;
        assert_eq!((key.line, key.col), (1, 1));
    }

    #[test]
    fn duplicate_keys_are_errors_with_a_place() {
        let e = parse(&Arc::from("t.yaml"), "a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(e.origin.line, 3, "{e:?}");
        assert!(e.message.to_lowercase().contains("duplicate"), "{e:?}");
    }

    #[test]
    fn tabs_are_named() {
        let e = parse(&Arc::from("t.yaml"), "a:\n\tb: 1\n").unwrap_err();
        assert_eq!((e.origin.line, e.origin.col), (2, 1));
    }

    #[test]
    fn json_may_be_indented_with_tabs() {
        let text = "{\n\t\"substrate\": {\n\t\t\"value\": \"kind\",\n\t\t\"list\": [\n\t\t\t1\n\t\t]\n\t}\n}\n";
        let n = parse(&Arc::from("c.json"), text).unwrap();
        assert_eq!(n.get_path("substrate.value").and_then(Node::as_str), Some("kind"));
    }

    #[test]
    fn ambiguous_strings_are_quoted() {
        let v = serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1",
            "data": {"a": "on", "b": "no", "c": "y", "d": "0755", "e": "1_000", "f": "2024-01-01", "g": "plain"}});
        let y = to_canonical_yaml(&v);
        assert!(y.starts_with("apiVersion: v1\nkind: ConfigMap\n"), "{y}");
        for s in ["on", "no", "y", "0755", "1_000", "2024-01-01"] {
            assert!(
                y.contains(&format!("\"{s}\"")) || y.contains(&format!("'{s}'")),
                "{s} unquoted in {y}"
            );
        }
        assert!(y.contains("g: plain"), "{y}");
    }

    #[test]
    fn a_node_writes_the_yaml_of_its_json() {
        let n = p("b: {z: 1, a: [x, 'on', 0755, -3, 18446744073709551615]}\na: null\nc: 1.5\ne: \"multi\\nline\\n\"\n");
        assert_eq!(node_to_sorted_yaml(&n), to_sorted_yaml(&n.to_json()));
    }

    #[test]
    fn terse_parser_messages_are_spelt_out() {
        let m = |text: &str| parse(&Arc::from("t.yaml"), text).unwrap_err();
        let e = m("a: 1\n---\nb: 2\n");
        assert!(
            e.message.contains("more than one YAML document") && e.origin.line == 2,
            "{e:?}"
        );
        let e = m(&format!("{}: 1\n", "k".repeat(1100)));
        assert!(
            e.message.contains("1100 characters") && e.message.contains("1024"),
            "{e:?}"
        );
        let e = m("a: !!int abc\n");
        assert!(
            e.message.contains("`abc` is not an integer") && e.message.contains("!!int"),
            "{e:?}"
        );
        let e = m("a: [!!bool maybe]\n");
        assert!(e.message.contains("`maybe` is not a boolean"), "{e:?}");
        let e = m("? [a, b]\n: 1\n");
        assert!(e.message.contains("must be a string"), "{e:?}");
    }

    #[test]
    fn alias_bomb_is_refused() {
        let mut text = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        let mut prev = 'a';
        for c in 'b'..='j' {
            text.push_str(&format!(
                "{c}: &{c} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
            ));
            prev = c;
        }
        assert!(parse(&Arc::from("t.yaml"), &text).is_err());
    }
}
