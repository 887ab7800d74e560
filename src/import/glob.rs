//! The two glob dialects the engines match paths with: doublestar's, where
//! `**` spans any number of path segments (Argo CD's git files generator,
//! the source-watcher's `exclude`), and Go's `path.Match`, where every
//! pattern segment matches exactly one path segment and `**` is no more
//! than `*` (Argo CD's git directories generator, the source-watcher's
//! `from`). Both take `*` and `?` within a segment; matching is bounded by
//! the lengths, with no backtracking blow-up on hostile patterns.

/// doublestar: `*` and `?` within one segment, `**` across any number.
pub fn glob(pattern: &str, path: &str) -> bool {
    let p: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    let s: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    segments(&p, &s)
}

/// Go's `path.Match`: one segment for each segment of the pattern.
pub fn path_match(pattern: &str, path: &str) -> bool {
    let p: Vec<&str> = pattern.split('/').collect();
    let s: Vec<&str> = path.split('/').collect();
    p.len() == s.len() && p.iter().zip(&s).all(|(p, s)| one(p.as_bytes(), s.as_bytes()))
}

fn segments(p: &[&str], s: &[&str]) -> bool {
    // Positions (pattern, path) still possible, as a set: linear in their
    // product however many `**` the pattern has.
    let mut reach = vec![vec![false; s.len() + 1]; p.len() + 1];
    reach[0][0] = true;
    for i in 0..=p.len() {
        for j in 0..=s.len() {
            if !reach[i][j] || i == p.len() {
                continue;
            }
            if p[i] == "**" {
                reach[i + 1][j] = true;
                if j < s.len() {
                    reach[i][j + 1] = true;
                }
            } else if j < s.len() && one(p[i].as_bytes(), s[j].as_bytes()) {
                reach[i + 1][j + 1] = true;
            }
        }
    }
    reach[p.len()][s.len()]
}

/// One segment: `*` any run of characters, `?` one character.
fn one(p: &[u8], s: &[u8]) -> bool {
    let mut reach = vec![false; s.len() + 1];
    reach[0] = true;
    for &c in p {
        let mut next = vec![false; s.len() + 1];
        match c {
            b'*' => {
                let mut on = false;
                for j in 0..=s.len() {
                    on |= reach[j];
                    next[j] = on;
                }
            }
            b'?' => {
                next[1..].copy_from_slice(&reach[..s.len()]);
            }
            c => {
                for j in 0..s.len() {
                    next[j + 1] = reach[j] && s[j] == c;
                }
            }
        }
        reach = next;
    }
    reach[s.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_by_segment() {
        assert!(glob("apps/*", "apps/web"));
        assert!(!glob("apps/*", "apps/web/x"));
        assert!(glob("clusters/**/config.json", "clusters/a/b/config.json"));
        assert!(glob("clusters/**/config.json", "clusters/config.json"));
        assert!(glob("c?/*.yaml", "c1/x.yaml"));
        assert!(!glob("c?/*.yaml", "c12/x.yaml"));
        assert!(path_match("apps/*", "apps/web"));
        assert!(!path_match("apps/**", "apps/web/x"));
        assert!(path_match("apps/**", "apps/web"));
        // Many stars against a long name: answered at once, either way.
        let hostile = "*a".repeat(40);
        assert!(glob(&hostile, &"a".repeat(80)));
        assert!(!glob(&hostile, &"a".repeat(39)));
    }
}
