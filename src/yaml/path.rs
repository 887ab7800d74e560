//! Paths into Helm values, written `a.b."c.d"[0].e`: keys separated by
//! dots, a key that holds dots (Helm values such as
//! `configs.params."server.insecure"`, or an annotation
//! `"app.kubernetes.io/name"`) in double quotes, and list items as `[N]`.

use std::fmt;

use serde_json::Value as J;

use super::{Node, Value};

/// Paths that show each form of the syntax, for help texts.
pub const PATH_EXAMPLES: &str = "deployment.replicas, configs.params.\"server.insecure\", tolerations[0].key";

/// One step of a values path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Seg {
    /// A mapping key.
    Key(String),
    /// A list item, from 0.
    Index(usize),
}

/// A path into a component's values.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct ValuesPath(pub Vec<Seg>);

/// Why a path could not be read, at a 1-based column (in characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathError {
    pub column: usize,
    pub message: String,
}

/// An error at the character `i` (counted from 0) of a path.
fn error_at(i: usize, message: &str) -> PathError {
    PathError {
        column: i + 1,
        message: message.to_owned(),
    }
}

/// The quoted key that starts at `chars[i]` (a `"`), and where the path
/// goes on after its closing quote.
fn quoted_key(chars: &[char], i: usize) -> Result<(String, usize), PathError> {
    let mut key = String::new();
    let mut j = i + 1;
    loop {
        match chars.get(j) {
            None => return Err(error_at(i, "the quoted key is not closed: end it with `\"`")),
            Some('"') => return Ok((key, j + 1)),
            Some('\\') => match chars.get(j + 1) {
                Some(&c @ ('"' | '\\')) => {
                    key.push(c);
                    j += 2;
                }
                Some(c) => {
                    return Err(error_at(
                        j,
                        &format!("unknown escape `\\{c}` in a quoted key: only `\\\"` and `\\\\` are escapes"),
                    ));
                }
                None => return Err(error_at(j, "the quoted key ends with `\\`")),
            },
            Some(&c) => {
                key.push(c);
                j += 1;
            }
        }
    }
}

/// The list index that starts at `chars[i]` (a `[`), and where the path
/// goes on after its `]`.
fn list_index(chars: &[char], i: usize) -> Result<(usize, usize), PathError> {
    let start = i + 1;
    let mut j = start;
    while chars.get(j).is_some_and(char::is_ascii_digit) {
        j += 1;
    }
    if j == start {
        return Err(error_at(
            j,
            "`[` must be followed by a list index, a number such as [0]",
        ));
    }
    if chars.get(j) != Some(&']') {
        return Err(error_at(j, "a list index is a number closed by `]`, as in [0]"));
    }
    let digits: String = chars[start..j].iter().collect();
    let n = digits
        .parse()
        .map_err(|_| error_at(start, "the list index is too large"))?;
    Ok((n, j + 1))
}

impl ValuesPath {
    /// Reads `a.b."c.d"[0].e`. In a quoted key, `\"` and `\\` are the only
    /// escapes; an unquoted key is anything up to the next `.`, `[` or `]`.
    pub fn parse(text: &str) -> Result<ValuesPath, PathError> {
        let chars: Vec<char> = text.chars().collect();
        let err = error_at;
        if chars.is_empty() {
            return Err(err(0, "the path is empty"));
        }
        let mut segs = Vec::new();
        let mut i = 0;
        let mut want_key = true;
        while want_key || i < chars.len() {
            if want_key {
                want_key = false;
                match chars.get(i) {
                    None => return Err(err(i, "the path ends with `.`: a key must follow it")),
                    Some('.') if i == 0 => return Err(err(i, "the path starts with `.`: start with a key")),
                    Some('.') => return Err(err(i, "two dots in a row: a key must come between them")),
                    Some('[') if i == 0 => {
                        return Err(err(
                            i,
                            "the path starts with a list index, but the values are a mapping: start with a key",
                        ));
                    }
                    Some('[') => {
                        return Err(err(
                            i,
                            "a key must follow `.`; a list index follows its key directly, as in tolerations[0]",
                        ));
                    }
                    Some(']') => return Err(err(i, "`]` without `[`")),
                    Some('"') => {
                        let (key, next) = quoted_key(&chars, i)?;
                        segs.push(Seg::Key(key));
                        i = next;
                    }
                    Some(_) => {
                        let start = i;
                        while let Some(&c) = chars.get(i) {
                            match c {
                                '.' | '[' => break,
                                ']' => return Err(err(i, "`]` without `[`")),
                                '"' => {
                                    return Err(err(
                                        i,
                                        "a `\"` inside a key: quote the whole key, as in \"server.insecure\"",
                                    ));
                                }
                                _ => i += 1,
                            }
                        }
                        segs.push(Seg::Key(chars[start..i].iter().collect()));
                    }
                }
            } else {
                match chars[i] {
                    '.' => {
                        i += 1;
                        want_key = true;
                    }
                    '[' => {
                        let (n, next) = list_index(&chars, i)?;
                        segs.push(Seg::Index(n));
                        i = next;
                    }
                    c => {
                        return Err(err(
                            i,
                            &format!("expected `.`, `[` or the end of the path after a key, found `{c}`"),
                        ));
                    }
                }
            }
        }
        Ok(ValuesPath(segs))
    }

    /// A path of plain keys, as profiles and [`Node::get_path`] write them.
    pub fn from_dotted(path: &str) -> ValuesPath {
        ValuesPath(
            path.split('.')
                .filter(|k| !k.is_empty())
                .map(|k| Seg::Key(k.to_owned()))
                .collect(),
        )
    }

    /// The dotted form profiles use: only for paths of keys without dots.
    pub fn dotted(&self) -> Option<String> {
        let keys: Option<Vec<&str>> = self
            .0
            .iter()
            .map(|s| match s {
                Seg::Key(k) if !k.contains('.') && !k.is_empty() => Some(k.as_str()),
                _ => None,
            })
            .collect();
        keys.map(|k| k.join("."))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The first `n` steps.
    pub fn prefix(&self, n: usize) -> ValuesPath {
        ValuesPath(self.0[..n.min(self.0.len())].to_vec())
    }

    /// This path followed by `segs`.
    pub fn then(&self, segs: &[Seg]) -> ValuesPath {
        let mut out = self.clone();
        out.0.extend_from_slice(segs);
        out
    }

    /// The last mapping key of the path.
    pub fn last_key(&self) -> Option<&str> {
        self.0.iter().rev().find_map(|s| match s {
            Seg::Key(k) => Some(k.as_str()),
            Seg::Index(_) => None,
        })
    }

    /// The node at the path.
    pub fn lookup<'n>(&self, node: &'n Node) -> Option<&'n Node> {
        self.0.iter().try_fold(node, |n, s| match (s, &n.value) {
            (Seg::Key(k), Value::Map(m)) => m.get(k).map(|e| &e.node),
            (Seg::Index(i), Value::Seq(items)) => items.get(*i),
            _ => None,
        })
    }

    /// The JSON value at the path.
    pub fn lookup_json<'j>(&self, value: &'j J) -> Option<&'j J> {
        self.0.iter().try_fold(value, |v, s| match s {
            Seg::Key(k) => v.as_object()?.get(k),
            Seg::Index(i) => v.as_array()?.get(*i),
        })
    }
}

/// Whether a key must be quoted to be read back as one key.
fn needs_quotes(key: &str) -> bool {
    key.is_empty() || key.contains(['.', '[', ']', '"'])
}

impl fmt::Display for ValuesPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, s) in self.0.iter().enumerate() {
            match s {
                Seg::Key(k) => {
                    if n > 0 {
                        f.write_str(".")?;
                    }
                    if needs_quotes(k) {
                        write!(f, "\"{}\"", k.replace('\\', "\\\\").replace('"', "\\\""))?;
                    } else {
                        f.write_str(k)?;
                    }
                }
                Seg::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ValuesPath {
        ValuesPath::parse(text).unwrap_or_else(|e| panic!("{text}: {e:?}"))
    }

    fn key(k: &str) -> Seg {
        Seg::Key(k.to_owned())
    }

    #[test]
    fn paths_with_quoted_keys_and_list_items() {
        assert_eq!(
            parse("a.b.\"c.d\"[0].e").0,
            vec![key("a"), key("b"), key("c.d"), Seg::Index(0), key("e")]
        );
        assert_eq!(
            parse("metadata.annotations.\"app.kubernetes.io/name\"").0[2],
            key("app.kubernetes.io/name")
        );
        assert_eq!(parse("m[1][2]").0, vec![key("m"), Seg::Index(1), Seg::Index(2)]);
        assert_eq!(parse(r#""say \"hi\" \\ bye""#).0, vec![key(r#"say "hi" \ bye"#)]);
        assert_eq!(parse("\"\"").0, vec![key("")]);
        // Display quotes exactly the keys that need it, and reads back.
        for text in [
            "a.b.\"c.d\"[0].e",
            "x[3]",
            "\"a[b]\".c",
            r#""q\"\\".r"#,
            "plain.key-with_odd/chars",
        ] {
            let p = parse(text);
            assert_eq!(p.to_string(), text);
            assert_eq!(parse(&p.to_string()), p);
        }
        assert_eq!(parse("a.b").dotted().as_deref(), Some("a.b"));
        assert_eq!(parse("a.\"b.c\"").dotted(), None);
        assert_eq!(parse("a[0]").dotted(), None);
    }

    #[test]
    fn path_errors_name_the_column() {
        let col = |t: &str| ValuesPath::parse(t).unwrap_err().column;
        assert_eq!(col(""), 1);
        assert_eq!(col(".a"), 1);
        assert_eq!(col("a..b"), 3);
        assert_eq!(col("a."), 3);
        assert_eq!(col("[0]"), 1);
        assert_eq!(col("a[x]"), 3);
        assert_eq!(col("a[1"), 4);
        assert_eq!(col("a[]"), 3);
        assert_eq!(col("a.\"b"), 3);
        assert_eq!(col("a.\"b\"c"), 6);
        assert_eq!(col("a.\"b\\n\""), 5);
        assert_eq!(col("a\"b"), 2);
        assert_eq!(col("a]"), 2);
        assert_eq!(col("a.[0]"), 3);
        assert!(
            ValuesPath::parse("a.\"b\\x\"")
                .unwrap_err()
                .message
                .contains("unknown escape `\\x`")
        );
    }
}
