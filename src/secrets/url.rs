//! The credentials a URL carries in its user information
//! (`https://user:password@host/`, `https://TOKEN@host/`): never printed.
//! A repository, mirror, git or proxy URL may hold them, and any message
//! that names such a URL shows it with its user information replaced by
//! [`HIDDEN`], the user name included (a token is often the user name:
//! `https://x-access-token:…@`, `https://ghp_…@`); only an SSH URL's
//! account name alone (`ssh://git@host/…`) is shown, SSH taking no
//! password in it.
//!
//! A URL is recognised in printed text by `scheme://`, and also by
//! `scheme%3A//` (GitHub workflow commands write `:` as `%3A` in their
//! properties); its authority runs to the first `/`, `?`, `#`, whitespace
//! or quote, and its user information to the last `@` in it, so that a
//! password with an unescaped `@` is hidden whole.

use std::borrow::Cow;

/// What stands for the user information of a URL.
pub const HIDDEN: &str = "<credentials>";

/// Where the authority of a URL ends.
fn ends_authority(c: char) -> bool {
    matches!(c, '/' | '?' | '#' | '"' | '\'' | '`' | '<' | '>' | '\\') || c.is_whitespace()
}

/// The byte ranges of the user information of the URLs in `text`.
fn userinfo_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let lower = text.to_ascii_lowercase();
    for sep in ["://", "%3a//"] {
        let mut from = 0;
        while let Some(i) = lower[from..].find(sep) {
            let start = from + i + sep.len();
            from = start;
            // A scheme is at least one letter right before the separator.
            if !text[..start - sep.len()]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric())
            {
                continue;
            }
            let rest = &text[start..];
            let end = rest.find(ends_authority).unwrap_or(rest.len());
            if let Some(at) = rest[..end].rfind('@')
                && !rest[..at].starts_with(HIDDEN)
                && !ssh_account(&lower[..start - sep.len()], &rest[..at])
            {
                out.push((start, start + at));
            }
        }
    }
    out.sort_unstable();
    out
}

/// Whether `info` is an SSH URL's account name alone (`ssh://git@host`):
/// SSH authenticates with keys, and its user name is no credential.
fn ssh_account(before: &str, info: &str) -> bool {
    let scheme: String = before
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        .collect::<String>()
        .chars()
        .rev()
        .collect();
    matches!(scheme.as_str(), "ssh" | "git+ssh" | "ssh+git") && !info.contains(':')
}

/// `text` with the user information of every URL in it replaced by
/// [`HIDDEN`].
pub fn redact_userinfo(text: &str) -> Cow<'_, str> {
    if !text.contains("//") {
        return Cow::Borrowed(text);
    }
    let ranges = userinfo_ranges(text);
    if ranges.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in ranges {
        if start < at {
            continue;
        }
        out.push_str(&text[at..start]);
        out.push_str(HIDDEN);
        at = end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// Whether `text` names a URL with user information.
pub fn has_userinfo(text: &str) -> bool {
    text.contains("//") && !userinfo_ranges(text).is_empty()
}

/// The secrets of the user information of the URLs in a text: the whole
/// of it, the user and the password, each as written and percent-decoded
/// (empty when no URL has any).
pub fn credentials(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (start, end) in userinfo_ranges(url) {
        let info = &url[start..end];
        let (user, password) = info.split_once(':').unwrap_or((info, ""));
        for part in [info, user, password] {
            if part.is_empty() {
                continue;
            }
            out.push(part.to_owned());
            let decoded = percent_decode(part);
            if decoded != part {
                out.push(decoded);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `%XX` escapes decoded (an escape that is not one stays as written);
/// bytes that are not UTF-8 are replaced.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_information_is_hidden_in_every_url_of_a_text() {
        let t = "error: HTTPS_PROXY=gopher://alice:s3cr%40t@proxy.example:3128 is not a proxy URL";
        assert_eq!(
            redact_userinfo(t),
            "error: HTTPS_PROXY=gopher://<credentials>@proxy.example:3128 is not a proxy URL"
        );
        // An unescaped `@` in the password, a token as the user, two URLs.
        let t = "from http://bob:p@ss@10.0.0.1/x and https://ghp_abcdef123456@github.example/o/r.git";
        assert_eq!(
            redact_userinfo(t),
            "from http://<credentials>@10.0.0.1/x and https://<credentials>@github.example/o/r.git"
        );
        // GitHub's escaping of `:`, JSON, and URLs without user information.
        assert_eq!(
            redact_userinfo("title=https%3A//u%3Apw@h/x"),
            "title=https%3A//<credentials>@h/x"
        );
        assert_eq!(
            redact_userinfo("{\"url\":\"oci://robot:tok@registry.example/charts\"}"),
            "{\"url\":\"oci://<credentials>@registry.example/charts\"}"
        );
        assert_eq!(
            redact_userinfo("ssh://git@git.example/r.git and ssh://git:pw@git.example/r.git"),
            "ssh://git@git.example/r.git and ssh://<credentials>@git.example/r.git"
        );
        for plain in [
            "https://registry.example/@scope/pkg",
            "mailto:a@b.example",
            "no url",
            "a // comment @ here",
        ] {
            assert_eq!(redact_userinfo(plain), plain);
        }
        // Redacting twice changes nothing more.
        let once = redact_userinfo("http://a:b@h/").into_owned();
        assert_eq!(redact_userinfo(&once), once);
        assert!(has_userinfo("x http://a@h") && !has_userinfo(&once));
    }

    #[test]
    fn a_url_s_credentials_are_its_user_information_and_its_parts() {
        assert_eq!(
            credentials("https://al%69ce:pa%2Fss@host/"),
            ["al%69ce", "al%69ce:pa%2Fss", "alice", "alice:pa/ss", "pa%2Fss", "pa/ss"]
        );
        assert!(credentials("https://host/").is_empty());
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%41"), "%zzA");
    }
}
