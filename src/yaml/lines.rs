//! The line reader: reads the shape nearly every values file has — block
//! mappings and sequences of one-line scalars, with comments — a line at a
//! time, without a YAML scanner. It gives the nodes, places and scalar
//! types the full reader gives (debug builds check every answer against it).
//!
//! What it reads: plain keys of letters, digits and `-_./` (and quoted keys
//! without escapes); values that are a plain scalar on one line, a quoted
//! scalar on one line without a backslash, `{}` or `[]`, or nothing (a null,
//! or a block below); `- ` items, whose text may start a mapping. Anything
//! else — a tab, a carriage return, a document marker, a block scalar, a
//! flow collection with content, an anchor, an alias, a tag, a repeated key,
//! a plain scalar over several lines, an indentation it does not expect —
//! gives `None`, and the quick reader reads the text.

use std::borrow::Cow;
use std::sync::Arc;

use granit_parser::ScalarStyle;

use super::read::{null, scalar};
use super::{Entry, FileName, MAX_DEPTH, MAX_VALUES, Map, Node, Origin, Value};

/// The document of `text`, none when it holds only comments, or `None`
/// when the quick reader must read it.
pub fn read(file: FileName, text: &str) -> Option<Vec<Node>> {
    // Printable ASCII and newlines, checked 64 bytes at a time without a
    // branch per byte.
    let ascii = text.as_bytes().chunks(64).all(|chunk| {
        chunk
            .iter()
            .fold(true, |ok, &b| ok & (b == b'\n' || (b' '..=b'~').contains(&b)))
    });
    if !ascii && !text.chars().all(plain_char) {
        return None;
    }
    let mut lines = Vec::new();
    let all_ascii = ascii || text.is_ascii();
    let mut rest = text;
    let mut number: u32 = 0;
    loop {
        number = number.checked_add(1)?;
        let (raw, next) = match rest.bytes().position(|b| b == b'\n') {
            Some(end) => (&rest[..end], Some(&rest[end + 1..])),
            None => (rest, None),
        };
        let indent = raw.bytes().take_while(|&b| b == b' ').count();
        let content = &raw[indent..];
        if !(content.is_empty() || content.starts_with('#')) {
            if indent == 0 && (content.starts_with("---") || content.starts_with("...") || content.starts_with('%')) {
                return None;
            }
            lines.push(Line {
                number,
                indent,
                text: content,
                ascii: all_ascii || content.is_ascii(),
            });
        }
        match next {
            Some(next) => rest = next,
            None => break,
        }
    }
    if lines.is_empty() {
        return Some(Vec::new());
    }
    let mut reader = Reader {
        file,
        lines,
        pos: 0,
        values: 0,
        entries: Vec::new(),
        items: Vec::new(),
    };
    let node = reader.block(0)?;
    (reader.pos == reader.lines.len()).then(|| vec![node])
}

/// A line that holds something: its number, the column its text starts at
/// (0-based), and its text from there to the end of the line.
#[derive(Clone, Copy)]
struct Line<'t> {
    number: u32,
    indent: usize,
    text: &'t str,
    ascii: bool,
}

impl Line<'_> {
    /// The 1-based column of a byte of the text.
    fn col(&self, byte: usize) -> u32 {
        let chars = if self.ascii {
            byte
        } else {
            self.text[..byte].chars().count()
        };
        (self.indent + chars + 1).min(u32::MAX as usize) as u32
    }

    fn chars(&self, from: usize, to: usize) -> u32 {
        let n = if self.ascii {
            to - from
        } else {
            self.text[from..to].chars().count()
        };
        n.min(u32::MAX as usize) as u32
    }
}

struct Reader<'t> {
    file: FileName,
    lines: Vec<Line<'t>>,
    /// The next line to read.
    pos: usize,
    /// Values read so far, against the full reader's limit.
    values: usize,
    /// The entries of the mappings being read, innermost last: each
    /// mapping is made at its size once its entries are all read, rather
    /// than grown by doubling and shrunk (a copy, and its hash table built
    /// again, at each step).
    entries: Vec<(String, Entry)>,
    /// Likewise the items of the sequences being read.
    items: Vec<Node>,
}

impl Reader<'_> {
    fn origin(&self, line: &Line<'_>, byte: usize, len: u32) -> Origin {
        Origin::new(self.file, line.number, line.col(byte), len)
    }

    fn count(&mut self, depth: usize) -> Option<()> {
        self.values += 1;
        (self.values < MAX_VALUES / 2 && depth + 2 < MAX_DEPTH).then_some(())
    }

    /// The block that starts at the current line.
    fn block(&mut self, depth: usize) -> Option<Node> {
        let line = self.lines[self.pos];
        if item(line.text).is_some() {
            self.seq(line.indent, false, depth)
        } else {
            self.map(line.indent, depth)
        }
    }

    /// What follows a key or a `-` with nothing after it on its line: the
    /// block below it, when it is indented further than `indent` (or is a
    /// sequence at `indent` itself, under a key), else a null at `null_at`.
    fn below(&mut self, indent: usize, under_key: bool, null_at: Origin, depth: usize) -> Option<Node> {
        match self.lines.get(self.pos) {
            Some(next) if next.indent > indent => self.block(depth),
            Some(next) if under_key && next.indent == indent && item(next.text).is_some() => {
                self.seq(indent, true, depth)
            }
            _ => {
                self.count(depth)?;
                Some(Node {
                    value: Value::Null,
                    origin: null_at,
                })
            }
        }
    }

    fn map(&mut self, indent: usize, depth: usize) -> Option<Node> {
        self.count(depth)?;
        let origin = self.origin(&self.lines[self.pos], 0, 0);
        let start = self.entries.len();
        let read = self.entries_of(indent, depth);
        let entries = self.entries.drain(start..);
        read?;
        let mut map = Map::with_capacity_and_hasher(entries.len(), Default::default());
        for (key, entry) in entries {
            if map.insert(key, entry).is_some() {
                return None;
            }
        }
        Some(Node {
            value: Value::Map(Arc::new(map)),
            origin,
        })
    }

    /// Reads a mapping's entries onto [`Reader::entries`].
    fn entries_of(&mut self, indent: usize, depth: usize) -> Option<()> {
        while let Some(&line) = self.lines.get(self.pos) {
            if line.indent < indent {
                break;
            }
            if line.indent > indent || item(line.text).is_some() {
                return None;
            }
            let (key, colon) = key(line.text)?;
            let key_origin = self.origin(&line, 0, line.chars(0, colon));
            let rest = line.text[colon + 1..].trim_start_matches(' ');
            let rest_at = line.text.len() - rest.len();
            self.pos += 1;
            // The key is followed by a space or the end: a `#` here starts
            // a comment.
            let node = if rest.is_empty() || rest.starts_with('#') {
                let null_at = self.origin(&line, colon, 0);
                self.below(indent, true, null_at, depth + 1)?
            } else {
                self.inline(&line, rest_at, depth + 1)?
            };
            self.entries.push((key.into_owned(), Entry { key_origin, node }));
        }
        Some(())
    }

    /// A sequence whose `-` are at `indent`; `level`: at its key's indent,
    /// where the full reader places it at the first item's text.
    fn seq(&mut self, indent: usize, level: bool, depth: usize) -> Option<Node> {
        self.count(depth)?;
        let first = self.lines[self.pos];
        let origin = if level {
            let at = item(first.text)?;
            if at == first.text.len() || first.text[at..].starts_with('#') {
                return None;
            }
            self.origin(&first, at, 0)
        } else {
            self.origin(&first, 0, 0)
        };
        let start = self.items.len();
        let read = self.items_of(indent, depth);
        let items: Vec<Node> = self.items.drain(start..).collect();
        read?;
        Some(Node {
            value: Value::Seq(items),
            origin,
        })
    }

    /// Reads a sequence's items onto [`Reader::items`].
    fn items_of(&mut self, indent: usize, depth: usize) -> Option<()> {
        while let Some(&line) = self.lines.get(self.pos) {
            if line.indent < indent {
                break;
            }
            if line.indent > indent {
                return None;
            }
            let Some(rest_at) = item(line.text) else {
                break;
            };
            let rest = &line.text[rest_at..];
            let node = if rest.is_empty() || rest.starts_with('#') {
                self.pos += 1;
                let null_at = self.origin(&line, line.text.len(), 0);
                self.below(indent, false, null_at, depth + 1)?
            } else if item(rest).is_some() {
                return None;
            } else if key(rest).is_some() {
                // A mapping starts after the `- `: its keys line up with
                // the first one's column.
                let column = indent + line.chars(0, rest_at) as usize;
                self.lines[self.pos] = Line {
                    indent: column,
                    text: rest,
                    ..line
                };
                self.map(column, depth + 1)?
            } else {
                self.pos += 1;
                self.inline(&line, rest_at, depth + 1)?
            };
            self.items.push(node);
        }
        Some(())
    }

    /// The items of a flow sequence of words and quoted strings on one
    /// line, `[a, "b", 1]`, whose `[` is at byte `at` of the line's text;
    /// and the byte of the text after its `]`, counted from `at`.
    fn flow_seq(&mut self, line: &Line<'_>, at: usize, depth: usize) -> Option<(Vec<Node>, usize)> {
        let text = &line.text[at..];
        let bytes = text.as_bytes();
        let skip = |mut i: usize| {
            while bytes.get(i) == Some(&b' ') {
                i += 1;
            }
            i
        };
        let mut items = Vec::new();
        let mut i = 1;
        loop {
            let start = skip(i);
            self.count(depth + 1)?;
            let (value, end) = match *bytes.get(start)? {
                b'"' | b'\'' => {
                    let (value, len) = quoted(&text[start..])?;
                    (Value::Str(value.into_owned()), start + len)
                }
                _ => {
                    let len = word_len(&text[start..]);
                    if len == 0 {
                        return None;
                    }
                    let end = start + len;
                    (scalar(Cow::Borrowed(&text[start..end]), ScalarStyle::Plain, true)?, end)
                }
            };
            items.push(Node {
                value,
                origin: self.origin(line, at + start, line.chars(at + start, at + end)),
            });
            i = skip(end);
            match bytes.get(i)? {
                b',' => i += 1,
                b']' => break,
                _ => return None,
            }
        }
        items.shrink_to_fit();
        Some((items, i + 1))
    }

    /// A value written on its line, from byte `at` of the line's text.
    fn inline(&mut self, line: &Line<'_>, at: usize, depth: usize) -> Option<Node> {
        self.count(depth)?;
        let text = &line.text[at..];
        let (value, len) = match text.as_bytes()[0] {
            b'"' | b'\'' => {
                let (value, len) = quoted(text)?;
                if !ends(&text[len..]) {
                    return None;
                }
                (Value::Str(value.into_owned()), line.chars(at, at + len))
            }
            b'{' | b'[' => {
                let (value, end) = match text.get(..2)? {
                    "{}" => (Value::Map(Arc::default()), 2),
                    "[]" => (Value::Seq(Vec::new()), 2),
                    _ if text.starts_with('[') => {
                        let (items, end) = self.flow_seq(line, at, depth)?;
                        (Value::Seq(items), end)
                    }
                    _ => return None,
                };
                if !ends(&text[end..]) {
                    return None;
                }
                (value, 1)
            }
            b'-' if matches!(text.as_bytes().get(1), None | Some(b' ')) => return None,
            b'?' | b':' | b',' | b']' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>' | b'%' | b'@' | b'`' => {
                return None;
            }
            _ => {
                // Up to a comment; a `: ` (or a `:` at the end) would make
                // a mapping of it, which is an error here.
                let bytes = text.as_bytes();
                let mut end = bytes.len();
                for (i, &b) in bytes.iter().enumerate() {
                    match b {
                        b'#' if i > 0 && bytes[i - 1] == b' ' => {
                            end = i;
                            break;
                        }
                        b':' if matches!(bytes.get(i + 1), None | Some(b' ')) => return None,
                        _ => {}
                    }
                }
                let plain = text[..end].trim_end_matches(' ');
                let value = scalar(Cow::Borrowed(plain), ScalarStyle::Plain, true)?;
                (value, line.chars(at, at + plain.len()))
            }
        };
        Some(Node {
            value,
            origin: self.origin(line, at, len),
        })
    }
}

/// A character the line reader takes as it stands: YAML's printable
/// characters but for a tab, and no line break other than `\n` (YAML 1.1
/// also breaks lines at NEL and the Unicode separators).
fn plain_char(c: char) -> bool {
    matches!(c, '\n' | ' '..='~' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
        && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{FEFF}')
}

/// Where the text of a `- ` item starts, when the line is one.
fn item(text: &str) -> Option<usize> {
    match text.strip_prefix('-')? {
        "" => Some(1),
        rest if rest.starts_with(' ') => Some(text.len() - rest.trim_start_matches(' ').len()),
        _ => None,
    }
}

/// Nothing, or a comment after a space, ends the line after a value.
fn ends(rest: &str) -> bool {
    let trimmed = rest.trim_start_matches(' ');
    trimmed.is_empty() || (trimmed.starts_with('#') && trimmed.len() < rest.len())
}

/// A quoted scalar at the start of `text`, on one line: its value, and the
/// byte after its closing quote. A double-quoted one with an escape is left
/// to the quick reader; a single-quoted one's `''` is a quote.
fn quoted(text: &str) -> Option<(Cow<'_, str>, usize)> {
    if let Some(body) = text.strip_prefix('"') {
        let inner = &body[..body.find('"')?];
        return (!inner.contains('\\')).then_some((Cow::Borrowed(inner), inner.len() + 2));
    }
    let mut value = String::new();
    let mut from = 1;
    loop {
        let quote = from + text[from..].find('\'')?;
        if !text[quote + 1..].starts_with('\'') {
            return Some(if from == 1 {
                (Cow::Borrowed(&text[1..quote]), quote + 1)
            } else {
                value.push_str(&text[from..quote]);
                (Cow::Owned(value), quote + 1)
            });
        }
        value.push_str(&text[from..=quote]);
        from = quote + 2;
    }
}

/// The length of the word at the start of `text`: letters, digits and
/// `-_./`, the characters of a plain key or flow item the line reader reads.
fn word_len(text: &str) -> usize {
    text.bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/')))
        .unwrap_or(text.len())
}

/// A mapping key at the start of `text`: the key, and the byte of its `:`
/// (followed by a space or the end), which ends its written form.
fn key(text: &str) -> Option<(Cow<'_, str>, usize)> {
    let (key, end) = match text.as_bytes()[0] {
        b'"' | b'\'' => quoted(text)?,
        first if first.is_ascii_alphanumeric() || matches!(first, b'_' | b'.' | b'/') => {
            let key = &text[..word_len(text)];
            // Null keys are the full reader's business (as are `<<` merges,
            // which do not start this way).
            if null(key) {
                return None;
            }
            (Cow::Borrowed(key), key.len())
        }
        _ => return None,
    };
    // YAML bounds an implicit key at 1024 characters; the full reader
    // words the error.
    if end > 1000
        || text.as_bytes().get(end) != Some(&b':')
        || !matches!(text.as_bytes().get(end + 1), None | Some(b' '))
    {
        return None;
    }
    Some((key, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads with the line reader and the full reader; returns whether the
    /// line reader answered.
    fn same(text: &str) -> bool {
        let file = FileName::new("t.yaml");
        let Some(lines) = read(file, text) else {
            return false;
        };
        let full = super::super::parse_full(file, text, false).expect("the full reader reads it");
        assert_eq!(lines, full, "{text}");
        true
    }

    #[test]
    fn values_match_the_full_reader() {
        for text in [
            "a: 1\nb:\n  c: x\n  d: \"q q\"\n  e: 'sq'\nf:\ng: {}\nh: []\ni:\n- a\n-\n- k: v\n  l: w\n-   m: 1\nj: # c\n  x: 1 # c\n",
            "  a: 1\n  b: 2\n",
            "- a\n- b\n",
            "a: b\n  # c\nd: e\n",
            "\"k k\": 1\n'j': 2\nk: \"\"\nl: ''\n",
            "a:\n  - x\n  -\n    y: 1\n",
            "ff:\nb:   # c\nc:  \nd:",
            "- \n-   # c\n-\n  # x\n-",
            "a:\n  b:\n  c:\nd: 1",
            "a:\n    # more\n  b: 1\n",
            "a:\n- x\nb: 1\n",
            "a: 1\n\n\n",
            "a: x:y\nb: a#b\nc: -1\nd: http://x\ne: a , b\nf: 0755\ng: 1_000\nh: 2024-01-01\ni: on\nj: 'on'\n",
            "a: 'it''s'\nb: ''''\n",
            "'it''s': [x, 'y''z', \"\"]\n",
            "a:\n  - b: 1\n    c: 2\n  - d\n",
            "a: é # ü\nb: 1\n\"ü\": 'é'\nc: x\n",
            "- a:\n  - x\n  b: 1\n",
            "- a:\n    b: 1\n  c: [] # none\n",
            "-\n  - x\n- y\n",
            "# only\n# comments\n",
            "",
            "a: 12345678901234567890\nb: -0.0\nc: 007\nd: NaN\ne: 1e3\nf: .5\ng: true\nh: ~\ni: null\n",
            "cpu: 250m\nmemory: 64Mi\nx: 0x1F\ny: 1E3\nz: 5e\nw: 01m\nv: 1m2\nu: a:b # c:d\nt: a #b: c\n",
            "a: [x, \"y\", 'z', 1,   v1.2 ]\nb: [x]\nc: [ x , y ] # c\nd: [x,y]\ne:\n- [a]\n- [-1, 0x1F, 1.5, null]\n",
        ] {
            assert!(same(text), "the line reader left {text:?}");
        }
    }

    #[test]
    fn what_it_leaves_to_the_quick_reader() {
        for text in [
            "a: &x 1\nb: *x\n",
            "a: !!str 1\n",
            "<<: {a: 1}\n",
            "a: 1\na: 2\n",
            "~: 1\n",
            "just a scalar\n",
            "a: b: c\n",
            "a: [[1]]\n",
            "a: [x, ]\n",
            "a: [x\n",
            "a: [x]y\n",
            "a: [x: 1]\n",
            "a: [\"x\\\"\"]\n",
            "a: multi\n  line plain\n",
            "a:\n  b: 1\n c: 2\n",
            "- - a\n",
            "a: 1\n- b\n",
            "a: |\n  x\n",
            "a: \"x\\ty\"\n",
            "a: \"open\n  b\"\n",
            "---\na: 1\n",
            "a:\tb\n",
            "a: 1\r\n",
            "- #\u{13}\n",
            "a: x\u{85}y\n",
            "a: b\u{7f}\n",
            "a b: 1\n",
            "a:1\n",
            "\"a\"x: 1\n",
            "a: \"b\"c\n",
            "a: 'b'#c\n",
            "- a\nb: 1\n",
        ] {
            let file = FileName::new("t.yaml");
            assert!(read(file, text).is_none(), "{text:?}");
        }
    }
}
