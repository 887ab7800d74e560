//! A quick reader for input files: builds the node tree straight from the
//! parser's events, with the places and scalar semantics of the full reader
//! (serde-saphyr over the same parser), without its per-value machinery.
//! Reading the inputs was a quarter of a compile, half of it that machinery.
//!
//! What it is sure of it reads itself: mappings and sequences, quoted and
//! block scalars, and plain nulls, booleans, decimal integers, decimal
//! fractions and words. A plain scalar of another shape on one line
//! (`0755`, `1_000`, `0x1F`, a date) is read by the full reader alone and
//! spliced in. Anything else — an anchor, an alias, a tag, a merge key, a
//! complex or null key, a repeated key, a document of one scalar, a parse
//! error, a document near the limits — gives `None`, and the caller reads
//! the whole text with the full reader, which also words every error.
//! Debug builds check every answer against the full reader.

use std::borrow::Cow;
use std::sync::Arc;

use granit_parser::{Event, Parser, ScalarStyle, Span};

use super::words::{quantity, string_word, yaml11_bool};
use super::{Entry, FileName, MAX_DEPTH, MAX_VALUES, Map, Node, Origin, Value};

/// The documents of `text` that hold something, or `None` when the full
/// reader must read it. `multi`: a stream of documents may be read.
pub fn read(file: FileName, text: &str, multi: bool) -> Option<Vec<Node>> {
    let mut reader = Reader {
        file,
        parser: Parser::new_from_str(text),
        values: 0,
    };
    let mut docs = Vec::new();
    let mut seen = 0;
    loop {
        let (event, _) = reader.next()?;
        match event {
            Event::StreamStart => {}
            Event::StreamEnd => return Some(docs),
            Event::DocumentStart(_, None) => {
                seen += 1;
                if seen > 1 && !multi {
                    return None;
                }
                let (event, span) = reader.next()?;
                match event {
                    Event::MappingStart(..) | Event::SequenceStart(..) => docs.push(reader.node(event, span, 0)?),
                    // An empty document, or one of a null, holds nothing.
                    Event::Scalar(text, ScalarStyle::Plain, 0, None) if null(&text) => {}
                    _ => return None,
                }
                if !matches!(reader.next()?.0, Event::DocumentEnd) {
                    return None;
                }
            }
            _ => return None,
        }
    }
}

struct Reader<'i> {
    file: FileName,
    parser: Parser<'i, granit_parser::StrInput<'i>>,
    /// Values read so far, against the full reader's limit.
    values: usize,
}

impl<'i> Reader<'i> {
    fn next(&mut self) -> Option<(Event<'i>, Span)> {
        self.parser.next_event()?.ok()
    }

    /// Where an event is, as the full reader places it.
    fn origin(&self, span: &Span) -> Origin {
        let len = (span.end.index() - span.start.index()).min(u32::MAX as usize) as u32;
        Origin::new(
            self.file,
            span.start.line().max(1) as u32,
            span.start.col() as u32 + 1,
            len,
        )
    }

    fn node(&mut self, event: Event<'i>, span: Span, depth: usize) -> Option<Node> {
        self.values += 1;
        if self.values >= MAX_VALUES / 2 || depth + 2 >= MAX_DEPTH {
            return None;
        }
        let origin = self.origin(&span);
        let value = match event {
            Event::Scalar(text, style, 0, None) => scalar(text, style, span.start.line() == span.end.line())?,
            Event::SequenceStart(_, 0, None) => {
                let mut items = Vec::new();
                loop {
                    let (event, span) = self.next()?;
                    if matches!(event, Event::SequenceEnd) {
                        break;
                    }
                    items.push(self.node(event, span, depth + 1)?);
                }
                items.shrink_to_fit();
                Value::Seq(items)
            }
            Event::MappingStart(_, 0, None) => {
                let mut map = Map::default();
                loop {
                    let (event, span) = self.next()?;
                    let key = match event {
                        Event::MappingEnd => break,
                        // `<<` merges and a null key is refused: the full
                        // reader's business.
                        Event::Scalar(key, style, 0, None)
                            if !(style == ScalarStyle::Plain && (null(&key) || key == "<<")) =>
                        {
                            key
                        }
                        _ => return None,
                    };
                    let key_origin = self.origin(&span);
                    let (event, span) = self.next()?;
                    let node = self.node(event, span, depth + 1)?;
                    if map.contains_key(key.as_ref()) {
                        return None;
                    }
                    map.insert(key.into_owned(), Entry { key_origin, node });
                }
                map.shrink_to_fit();
                Value::Map(Arc::new(map))
            }
            _ => return None,
        };
        Some(Node { value, origin })
    }
}

pub(super) fn null(text: &str) -> bool {
    matches!(text, "" | "~" | "null" | "Null" | "NULL")
}

/// A scalar's value, as the full reader types it; `one_line`: its text is
/// on one line.
pub(super) fn scalar(text: Cow<'_, str>, style: ScalarStyle, one_line: bool) -> Option<Value> {
    if style != ScalarStyle::Plain {
        return Some(Value::Str(text.into_owned()));
    }
    let t = text.as_ref();
    if null(t) {
        return Some(Value::Null);
    }
    if let Some(b) = yaml11_bool(t) {
        return Some(Value::Bool(b));
    }
    if decimal_integer(t) {
        return t.parse().ok().map(Value::Int);
    }
    if decimal_fraction(t) {
        return t.parse().ok().map(Value::Float);
    }
    if string_word(t) || quantity(t) {
        return Some(Value::Str(text.into_owned()));
    }
    // Another shape: the full reader reads it alone, where alone it reads
    // the same — one line, no indicator first, nothing that would start a
    // mapping or a comment.
    let plain_alone = !t.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@`".contains(c) || c.is_whitespace())
        && !t.ends_with(|c: char| c == ':' || c.is_whitespace())
        && !t.contains(": ")
        && !t.contains(" #")
        && !t.contains(['\t', '\n', '\r']);
    if !(one_line && plain_alone) {
        return None;
    }
    let nodes = super::parse_full(FileName::new("<scalar>"), t, false).ok()?;
    match nodes.into_iter().next() {
        Some(Node { value, .. }) if !matches!(value, Value::Seq(_) | Value::Map(_)) => Some(value),
        _ => None,
    }
}

/// `0`, or up to 18 digits without a leading zero, signed or not: fits an i64.
fn decimal_integer(t: &str) -> bool {
    let digits = t.strip_prefix('-').unwrap_or(t);
    digits == "0"
        || (!digits.is_empty()
            && digits.len() <= 18
            && !digits.starts_with('0')
            && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// `12.5`, `-0.25`: digits, a point, digits; short enough to read exactly.
fn decimal_fraction(t: &str) -> bool {
    let unsigned = t.strip_prefix('-').unwrap_or(t);
    let Some((whole, fraction)) = unsigned.split_once('.') else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    unsigned.len() <= 15 && digits(whole) && digits(fraction) && (whole == "0" || !whole.starts_with('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads with both readers; returns whether the quick one answered.
    fn same(text: &str) -> bool {
        let file = FileName::new("t.yaml");
        let Some(quick) = read(file, text, true) else {
            return false;
        };
        let full = super::super::parse_full(file, text, true).expect("the full reader reads it");
        assert_eq!(quick, full, "{text}");
        true
    }

    #[test]
    fn values_match_the_full_reader() {
        let text = "a: 1\nb: -2\nc: 2.5\nd: on\ne: 'on'\nf: \"x\\ty\"\ng: ~\nh:\ni: 0755\nj: 1_000\nk: 0x1F\n\
                    l: 2024-01-01\nm: v1.2.3\nn: [1, two, {three: 3}]\no: {}\np: []\nq: |\n  x\n  y\nr: >-\n  folded\n  text\n\
                    s:\n- a\n- b: c\n  d: e\nt: a b c\nu: 1e3\nv: .5\nw: 12345678901234567890\nx: -0.0\ny: 007\nz: NaN\n\
                    \"quoted key\": 1\n1: one\ntrue: yes\nlong: https://example.com/a?b=c\n";
        assert!(same(text));
        assert!(same("- 1\n- [2]\n"));
        assert!(same("---\na: 1\n---\n---\n~\n---\nb: 2\n"));
        assert!(same(""));
        assert!(same("# only a comment\n"));
        assert!(same("a:\n  b:\n    c: d # comment\n  e: f\n"));
        assert!(same("a: é\nb: \"\\u00e9\"\nc: x\u{2028}y\n"));
    }

    #[test]
    fn what_it_leaves_to_the_full_reader() {
        for text in [
            "a: &x 1\nb: *x\n",
            "a: !!str 1\n",
            "<<: {a: 1}\n",
            "? [a]\n: 1\n",
            "a: 1\na: 2\n",
            "~: 1\n",
            "just a scalar\n",
            "a: b: c\n",
            "a: [\n",
            "a: multi\n  line plain\n",
        ] {
            let file = FileName::new("t.yaml");
            assert!(read(file, text, true).is_none(), "{text}");
        }
    }
}
