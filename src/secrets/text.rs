//! Redaction of printed text: the search over whatever strata prints (the
//! second line of defence, after values are redacted while still parsed),
//! and the lines of a file a snippet must never show.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;

use super::set::Secrets;
use super::{MARK, MIN_LINE};
use crate::yaml::{Node, Value};

impl Secrets {
    /// Printed text with every occurrence of a secret replaced by [`MARK`],
    /// and the user information of every URL in it by
    /// [`super::url::HIDDEN`].
    pub fn redact_text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match self.redact_secrets(text) {
            Cow::Borrowed(t) => super::url::redact_userinfo(t),
            Cow::Owned(t) => Cow::Owned(super::url::redact_userinfo(&t).into_owned()),
        }
    }

    /// [`Secrets::redact_text`] for the contract's secrets alone.
    fn redact_secrets<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let i = &self.inner;
        if self.is_empty() || text.is_empty() {
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
        // A secret written over lines (folded, a literal block, escaped).
        if self.may_hold_folded(text) {
            let (squeezed, from) = super::fold::squeeze_mapped(text);
            if let Some(ac) = &i.folded {
                ranges.extend(
                    ac.find_iter(&squeezed)
                        .map(|m| (from[m.start()], from[m.end() - 1] + 1)),
                );
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
