//! Kubernetes names, checked before they reach a file name, a command line
//! or an object: DNS-1123 labels, kinds and API versions.

/// Whether `s` is a DNS-1123 label (what Kubernetes wants for names).
pub fn is_dns_label(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Whether `s` is a DNS-1035 label of at most `max` characters, letters of
/// either case allowed (`[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?`).
fn is_label(s: &str, max: usize, upper: bool) -> bool {
    let ok = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || (upper && b.is_ascii_uppercase());
    !s.is_empty() && s.len() <= max && s.bytes().all(ok) && s.as_bytes()[0].is_ascii_alphabetic() && !s.ends_with('-')
}

/// Checks that an object's apiVersion and kind are Kubernetes names before
/// they become parts of a file name: a kind is a DNS-1035 label (any case),
/// an apiVersion a version (`v1`) or a DNS-1123 subdomain, `/` and a
/// version (`apps/v1`). So `../`, `/`, `\` and the like never reach a path.
pub fn check_names(api_version: &str, kind: &str) -> Result<(), String> {
    if !is_label(kind, 63, true) {
        return Err(format!(
            "kind `{}` is not a Kubernetes kind: letters and digits (and `-`), starting with a letter, at most 63",
            shorten(kind)
        ));
    }
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (Some(g), v),
        None => (None, api_version),
    };
    let group_ok = group.is_none_or(|g| {
        !g.is_empty()
            && g.len() <= 253
            && g.split('.').all(|l| {
                !l.is_empty()
                    && l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            })
    });
    if !group_ok || !is_label(version, 63, false) {
        return Err(format!(
            "apiVersion `{}` is not a Kubernetes API version: `v1`, or a group and a version such as `apps/v1`",
            shorten(api_version)
        ));
    }
    Ok(())
}

/// A name as a message shows it: at most 80 characters.
fn shorten(s: &str) -> String {
    if s.chars().count() <= 80 {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(80).collect::<String>())
    }
}
