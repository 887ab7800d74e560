//! What a plain YAML scalar means, for the quick readers and the quick
//! writer: the words YAML reads as something other than a string, and the
//! shapes every reader takes for a string.

/// YAML 1.1's boolean words, as Helm's Go reader reads them, compared
/// without case.
const TRUE_WORDS: [&str; 4] = ["true", "yes", "y", "on"];
const FALSE_WORDS: [&str; 4] = ["false", "no", "n", "off"];
/// The other words some reader takes for a null or a number.
const OTHER_WORDS: [&str; 4] = ["null", "nan", "inf", "infinity"];

/// The boolean a plain word is in YAML 1.1.
pub fn yaml11_bool(word: &str) -> Option<bool> {
    let is = |words: &[&str]| words.iter().any(|w| word.eq_ignore_ascii_case(w));
    if is(&TRUE_WORDS) {
        Some(true)
    } else if is(&FALSE_WORDS) {
        Some(false)
    } else {
        None
    }
}

/// A word every YAML reader takes for a string when it stands plain: a
/// letter, then letters, digits and `-_./`, and no boolean, null or number
/// word.
pub fn string_word(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
        && yaml11_bool(s).is_none()
        && !OTHER_WORDS.iter().any(|w| s.eq_ignore_ascii_case(w))
}

/// A quantity such as `250m`, `64Mi` or `30s`: a number without a leading
/// zero, then letters. No YAML reader takes it for anything but a string
/// (an exponent, `1e3`, and the prefixes `0x`, `0o`, `0b` are left out).
pub fn quantity(s: &str) -> bool {
    let letters = s.trim_start_matches(|c: char| c.is_ascii_digit());
    let digits = s.len() - letters.len();
    digits > 0
        && !s.starts_with('0')
        && letters.starts_with(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        && letters.bytes().all(|b| b.is_ascii_alphabetic())
}

/// A plain value every YAML reader takes for a string in a block mapping:
/// it starts with a [`string_word`], holds only letters, digits and
/// `._/-:=+@` (a URL, `CreateNamespace=true`, a media type), and does not
/// end with `:`.
pub fn plain_text(s: &str) -> bool {
    plain_chars(s) && plain_text_of_plain_chars(s)
}

/// Whether every character of `s` is one a [`plain_text`] may hold (so
/// none is a line break).
pub fn plain_chars(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'/' | b'-' | b':' | b'=' | b'+' | b'@'))
}

/// [`plain_text`] of a text already known to hold only [`plain_chars`].
pub fn plain_text_of_plain_chars(s: &str) -> bool {
    !s.ends_with(':') && string_word(s.split([':', '=', '+', '@']).next().unwrap_or(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_texts() {
        assert_eq!(yaml11_bool("On"), Some(true));
        assert_eq!(yaml11_bool("N"), Some(false));
        assert_eq!(yaml11_bool("onion"), None);
        for s in ["v1.2.3", "registry.example.com/x", "a_b-c"] {
            assert!(string_word(s) && plain_text(s), "{s}");
        }
        for s in ["yes", "NULL", "nan", "Infinity", "1a", "_a", "a b", "a:b", ""] {
            assert!(!string_word(s), "{s}");
        }
        for s in [
            "https://example.com/a",
            "CreateNamespace=true",
            "text/plain+json",
            "a@b",
        ] {
            assert!(plain_text(s), "{s}");
        }
        for s in ["on:x", "a:", "a,b", "a b", "1.7.0", "null=1"] {
            assert!(!plain_text(s), "{s}");
        }
        for s in ["250m", "64Mi", "1Gi", "30s", "10Ki"] {
            assert!(quantity(s), "{s}");
        }
        for s in ["0x1F", "1e3", "1E3", "5e", "01m", "m", "12", "1m2", "1.5Gi", "-1m", ""] {
            assert!(!quantity(s), "{s}");
        }
    }
}
