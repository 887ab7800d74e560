//! Every form in which strata, Helm, Go or a terminal may print a text:
//! the escapes and encodings the search over printed text looks for.

/// Base64 needles shorter than this would match random base64 text.
const MIN_BASE64: usize = 8;

/// Every form of `t` that strata, Helm, Go or a terminal may print: see the
/// documentation of the `secrets` module. Each differs from the others or
/// is dropped.
pub fn encodings(t: &str) -> Vec<String> {
    forms(t).into_iter().map(|(f, _)| f).collect()
}

/// [`encodings`], each with whether it is a base64 form.
pub(super) fn forms(t: &str) -> Vec<(String, bool)> {
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
pub(super) fn quoted_forms(t: &str) -> Vec<String> {
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

pub(super) const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
pub(super) const URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The bytes of a base64 text (standard alphabet, padding optional,
/// whitespace between ignored); `None` if it is not one.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut bits: u32 = 0;
    let mut count = 0;
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let body = text.trim_end_matches(|c: char| c == '=' || c.is_ascii_whitespace());
    for c in body.bytes().filter(|b| !b.is_ascii_whitespace()) {
        let v = STD.iter().position(|t| *t == c)? as u32;
        bits = (bits << 6) | v;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    Some(out)
}

/// Base64 with padding, in the standard alphabet.
pub fn base64_encode(bytes: &[u8]) -> String {
    base64(bytes, STD)
}

/// Base64 with padding.
pub(super) fn base64(bytes: &[u8], table: &[u8; 64]) -> String {
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
