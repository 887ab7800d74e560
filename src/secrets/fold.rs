//! Secrets written over several lines: a YAML writer folds a long text at
//! its spaces (`>-`), a literal block (`|`) indents each line of a
//! multi-line text, and either may sit inside another YAML text held in a
//! string, escaped (`\n`). The text of a secret is then in the printed text
//! only up to whitespace. Both the secret and the text are looked at with
//! every run of whitespace — spaces, tabs, line breaks and their escapes
//! `\n`, `\r`, `\t` — read as one space ([`squeeze`]); a match is mapped
//! back to the text as printed, so the whole run is hidden, however many
//! lines it spans.

/// A text with every run of whitespace (and of the escapes `\n`, `\r`,
/// `\t`) as one space, and its ends trimmed; with, for each byte of it, the
/// byte of `text` it comes from (a space: the first of its run).
pub(super) fn squeeze_mapped(text: &str) -> (String, Vec<usize>) {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut from = Vec::with_capacity(text.len());
    let mut i = 0;
    let mut pending: Option<usize> = None;
    while i < bytes.len() {
        let space = match bytes[i] {
            b' ' | b'\t' | b'\n' | b'\r' => 1,
            b'\\' if matches!(bytes.get(i + 1), Some(b'n' | b'r' | b't')) => 2,
            _ => 0,
        };
        if space > 0 {
            pending.get_or_insert(i);
            i += space;
            continue;
        }
        if let Some(at) = pending.take()
            && !out.is_empty()
        {
            out.push(' ');
            from.push(at);
        }
        // One character, all its bytes.
        let len = text[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&text[i..i + len]);
        from.extend(i..i + len);
        i += len;
    }
    (out, from)
}

/// [`squeeze_mapped`] without the map: the form a secret is searched for in.
pub fn squeeze(text: &str) -> String {
    squeeze_mapped(text).0
}

/// Whether a text may hold a secret written otherwise than it is: past
/// its indentation, it has whitespace other than single spaces, or an
/// escape that may stand for it. (A line of a diff is indented, and most
/// lines hold nothing else.)
pub(super) fn may_be_folded(text: &str) -> bool {
    let t = text.trim_matches([' ', '\t']);
    t.bytes().any(|b| matches!(b, b'\n' | b'\t' | b'\r' | b'\\')) || t.contains("  ")
}

/// The pieces a printer may cut a secret into when it writes it over lines
/// (a literal block keeps its lines, a folded one breaks at spaces): each
/// line and each word of at least [`super::MIN_SEARCH`] characters. strata
/// hides a secret whole, before it is written, so that none of these is
/// printed on a line of its own; a test may look for them.
pub fn pieces(secret: &str) -> Vec<String> {
    let long = |s: &&str| s.chars().count() >= super::MIN_SEARCH;
    let mut out: Vec<String> = secret
        .lines()
        .map(str::trim)
        .filter(long)
        .chain(secret.split_whitespace().filter(long))
        .map(str::to_owned)
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_and_its_escapes_read_as_one_space() {
        assert_eq!(squeeze("  a \n\t  b\\n  c\\td "), "a b c d");
        assert_eq!(squeeze("é\n  日本"), "é 日本");
        let text = "k: >-\n  one two\n  three";
        let (s, from) = squeeze_mapped(text);
        assert_eq!(s, "k: >- one two three");
        let at = s.find("two three").unwrap();
        assert_eq!(&text[from[at]..], "two\n  three");
        // A backslash that escapes nothing of the kind is kept.
        assert_eq!(squeeze("a\\\\b \\x"), "a\\\\b \\x");
    }

    #[test]
    fn pieces_are_long_lines_and_words() {
        assert_eq!(
            pieces("short\nlonger line here\n  tiny wordlong"),
            ["here", "longer", "longer line here", "tiny wordlong", "wordlong"]
                .iter()
                .filter(|p| p.chars().count() >= 6)
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
        );
    }
}
