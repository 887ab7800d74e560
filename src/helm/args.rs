//! What may reach helm's command line from a file strata reads: chart
//! names, versions and version ranges are checked here before any of them
//! becomes an argument, so that a chart named `--post-renderer=x` or `-f`,
//! or a version with a comma, is refused with a message and never read by
//! helm as a flag or as two values. And what helm prints that strata keeps:
//! the OCI manifest digest of a pull.

/// The longest chart name or version strata passes on.
const MAX_LEN: usize = 128;

/// Checks a chart name as it comes from a `config.yaml`, a `Chart.yaml` or
/// `strata.lock`: letters, digits, `.`, `_` and `-`, starting with a letter
/// or digit (so never a flag, `.` or `..`), at most 128 characters. Helm's
/// own rule is that a name is one path segment; `helm create` takes the
/// same characters as here.
pub fn check_chart_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_LEN
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not a chart name: letters, digits, `.`, `_` and `-`, starting with a letter or digit, at most {MAX_LEN} characters",
            shown(name)
        ))
    }
}

/// Checks a chart version: a SemVer 2 version, optionally after a `v`
/// (letters, digits, `.`, `+` and `-`, starting with a letter or digit).
pub fn check_version(version: &str) -> Result<(), String> {
    let ok = !version.is_empty()
        && version.len() <= MAX_LEN
        && version.as_bytes()[0].is_ascii_alphanumeric()
        && version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not a chart version: a SemVer version such as 1.2.3 (letters, digits, `.`, `+` and `-`), at most {MAX_LEN} characters",
            shown(version)
        ))
    }
}

/// Checks a version range as a `Chart.yaml` dependency writes it
/// (`^1.2.0`, `>=1.0.0 <2.0.0`, `1.x || 2.x`): the characters of versions
/// and of Helm's range operators, not starting with `-`.
pub fn check_range(range: &str) -> Result<(), String> {
    let ok = !range.trim().is_empty()
        && range.len() <= MAX_LEN
        && !range.trim_start().starts_with('-')
        && range.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'.' | b'+' | b'-' | b'^' | b'~' | b'<' | b'>' | b'=' | b'!' | b'*' | b'|' | b',' | b' '
                )
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not a version range: versions and the operators ^ ~ < > = != * || , (for example ^1.2.0), at most {MAX_LEN} characters",
            shown(range)
        ))
    }
}

/// The OCI manifest digest `helm pull oci://…` prints on standard output
/// (`Digest: sha256:<64 hex>`), if it printed one.
pub fn pulled_manifest_digest(stdout: &str) -> Option<String> {
    stdout.lines().find_map(|l| {
        let d = l.trim().strip_prefix("Digest:")?.trim();
        let hex = d.strip_prefix("sha256:")?;
        (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))).then(|| d.to_owned())
    })
}

/// A value as a message shows it: at most 80 characters, control
/// characters escaped.
fn shown(s: &str) -> String {
    let cut: String = s.chars().take(80).collect();
    let escaped = cut.escape_debug().to_string();
    if s.chars().count() > 80 {
        format!("{escaped}…")
    } else {
        escaped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_be_flags_or_paths_are_refused() {
        for bad in [
            "",
            "-f",
            "--post-renderer=x",
            "..",
            ".",
            "a/b",
            "a b",
            "a,b",
            "é",
            &"a".repeat(129),
        ] {
            assert!(check_chart_name(bad).is_err(), "{bad}");
        }
        for good in ["web", "cert-manager", "kube-prometheus-stack", "a.b_c", "Web2"] {
            assert!(check_chart_name(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn versions_and_ranges() {
        for good in ["1.0.0", "v1.2.3", "1.0.0-rc.1+build.5"] {
            assert!(check_version(good).is_ok(), "{good}");
        }
        for bad in ["", "-1", "--set=x", "1.0,2.0", "1 0", "^1"] {
            assert!(check_version(bad).is_err(), "{bad}");
        }
        for good in [
            "^1.2.0",
            ">=1.0.0 <2.0.0",
            "1.x || 2.x",
            "~1.2",
            "*",
            ">= 1.0, != 1.3.0",
        ] {
            assert!(check_range(good).is_ok(), "{good}");
        }
        for bad in ["", " -f", "--version=1", "1;rm", "1\n2"] {
            assert!(check_range(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_manifest_digest_is_read_from_helm_pull_output() {
        let d = format!("sha256:{}", "ab".repeat(32));
        let out = format!("Pulled: registry.example.com/charts/web:1.0.0\nDigest: {d}\n");
        assert_eq!(pulled_manifest_digest(&out), Some(d));
        assert_eq!(pulled_manifest_digest("Digest: sha256:XYZ\n"), None);
        assert_eq!(
            pulled_manifest_digest(&format!("Digest: sha256:{}\n", "AB".repeat(32))),
            None
        );
        assert_eq!(pulled_manifest_digest(""), None);
    }
}
