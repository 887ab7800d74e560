//! The documentation holds together: `docs/rules.md` is exactly what
//! `strata rule` prints, every relative link of the README, CONTRIBUTING and
//! the book in `docs/` leads to a file (and heading) that exists, and the
//! README stays a front door.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const README_MAX_LINES: usize = 500;

const RULES_PAGE: &str = "docs/rules.md";

const REGENERATE: &str = "run STRATA_BLESS=1 cargo test --test docs to regenerate";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// `strata rule ARGS…`, uncoloured; its standard output.
fn strata_rule(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["--color", "never", "rule"])
        .args(args)
        .env("NO_COLOR", "1")
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "strata rule {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("strata rule prints UTF-8")
}

/// A line of the list: code, name and summary; `None` for any other line.
fn list_entry(line: &str) -> Option<(&str, &str, &str)> {
    let code = line.split_whitespace().next()?;
    let letters = code.trim_end_matches(|c: char| c.is_ascii_digit());
    let is_code = letters.len() < code.len() && !letters.is_empty() && letters.chars().all(|c| c.is_ascii_uppercase());
    if !is_code {
        return None;
    }
    let rest = line[code.len()..].trim_start();
    let name = rest.split_whitespace().next()?;
    let summary = rest[name.len()..].trim();
    Some((code, name, summary))
}

/// A heading's anchor, as GitHub makes it: lower case, punctuation dropped,
/// spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The page `strata rule` and `strata rule CODE` make, in a fixed form: a
/// header, the list as tables linking to each code, then each code's
/// explanation under `## CODE name` (its own headings one level down).
fn rules_page() -> String {
    let list = strata_rule(&[]);
    let mut page = String::from(
        "# Rules and codes\n\
         \n\
         Every code strata reports, as the binary explains it: this page is made\n\
         from the output of `strata rule` (the list) and `strata rule CODE` (each\n\
         section), and a test keeps the two equal. The rules judge a compiled\n\
         platform (see [Invariants](invariants.md) for what they read and how to\n\
         waive one); the `E` codes are errors, warnings and notes about inputs,\n\
         charts and schemas. Edit the text in the source, then regenerate this page\n\
         with `STRATA_BLESS=1 cargo test --test docs`.\n",
    );
    let mut entries = Vec::new();
    let mut in_table = false;
    for line in list.lines() {
        if let Some((code, name, summary)) = list_entry(line) {
            if !in_table {
                page.push_str("\n| code | name | summary |\n|---|---|---|\n");
                in_table = true;
            }
            let anchor = slug(&format!("{code} {name}"));
            let summary_cell = summary.replace('|', "\\|");
            page.push_str(&format!("| [{code}](#{anchor}) | `{name}` | {summary_cell} |\n"));
            entries.push((code.to_owned(), name.to_owned(), summary.to_owned()));
        } else if !line.trim().is_empty() {
            page.push('\n');
            page.push_str(line.trim());
            page.push('\n');
            in_table = false;
        } else {
            in_table = false;
        }
    }
    assert!(entries.len() >= 20, "`strata rule` listed only {} codes", entries.len());
    for (code, name, summary) in &entries {
        let text = strata_rule(&[code]);
        let mut lines = text.lines();
        let first = lines.next().unwrap_or_default();
        let lead = format!("{code} ({name}): ");
        let own = first
            .strip_prefix(&lead)
            .unwrap_or_else(|| panic!("`strata rule {code}` starts with {first:?}, not {lead:?}"));
        assert_eq!(
            own, summary,
            "`strata rule` and `strata rule {code}` give different summaries"
        );
        page.push_str(&format!("\n## {code} {name}\n\n{summary}\n\n"));
        let mut fenced = false;
        let body: Vec<&str> = lines.skip_while(|l| l.trim().is_empty()).collect();
        for l in body {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            if !fenced && l.starts_with('#') {
                page.push('#');
            }
            page.push_str(l.trim_end());
            page.push('\n');
        }
        assert!(!fenced, "`strata rule {code}` leaves a code block open");
    }
    while page.ends_with("\n\n") {
        page.pop();
    }
    page
}

#[test]
#[allow(clippy::disallowed_methods)]
fn the_rules_page_is_what_strata_rule_prints() {
    let expected = rules_page();
    let path = repo().join(RULES_PAGE);
    if std::env::var_os("STRATA_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &expected).unwrap();
        return;
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{RULES_PAGE}: {e}; {REGENERATE}"));
    if actual == expected {
        return;
    }
    let (line, want, have) = expected
        .lines()
        .map(Some)
        .chain(std::iter::repeat(None))
        .zip(actual.lines().map(Some).chain(std::iter::repeat(None)))
        .enumerate()
        .find(|(_, (e, a))| e != a)
        .map(|(i, (e, a))| (i + 1, e.unwrap_or("(end of page)"), a.unwrap_or("(end of page)")))
        .unwrap_or((0, "a final newline", "none"));
    panic!(
        "{RULES_PAGE} differs from what `strata rule` prints, first at line {line}:\n  strata: {want}\n  page:   {have}\n{REGENERATE}"
    );
}

/// README.md, CONTRIBUTING.md and every Markdown file under docs/.
fn documents() -> Vec<String> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap()).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = format!("{rel}/{name}");
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), &rel, out);
            } else if name.ends_with(".md") {
                out.push(rel);
            }
        }
    }
    let mut out = vec!["README.md".to_owned(), "CONTRIBUTING.md".to_owned()];
    walk(&repo().join("docs"), "docs", &mut out);
    out
}

/// The lines of a Markdown text outside fenced code blocks, with inline code
/// spans blanked: (1-based line number, text).
fn prose(text: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut kept = String::new();
        for (n, part) in line.split('`').enumerate() {
            kept.push_str(if n % 2 == 0 { part } else { "" });
        }
        out.push((i + 1, kept));
    }
    out
}

/// The anchors of a Markdown file's headings, with GitHub's `-1`, `-2` for
/// repeats.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let hashes = line.len() - line.trim_start_matches('#').len();
        if fenced || !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 { base.clone() } else { format!("{base}-{n}") });
        *n += 1;
    }
    out
}

/// The targets of the inline links `[text](target)` of a line.
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        out.push(after[..end].trim().to_owned());
        rest = &after[end..];
    }
    out
}

#[test]
fn every_relative_link_leads_to_a_file_and_heading_that_exist() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = read(&doc);
        let dir = Path::new(&doc).parent().unwrap_or(Path::new(""));
        for (line, kept) in prose(&text) {
            for target in link_targets(&kept) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (file, anchor) = match target.split_once('#') {
                    Some((f, a)) => (f, Some(a)),
                    None => (target.as_str(), None),
                };
                let rel = if file.is_empty() {
                    PathBuf::from(&doc)
                } else {
                    dir.join(file)
                };
                let path = repo().join(&rel);
                if !path.exists() {
                    broken.push(format!("{doc}:{line}: `{target}`: no file {}", rel.display()));
                    continue;
                }
                if let Some(anchor) = anchor.filter(|_| path.extension().is_some_and(|e| e == "md")) {
                    let text = std::fs::read_to_string(&path).unwrap();
                    if !anchors(&text).contains(anchor) {
                        broken.push(format!(
                            "{doc}:{line}: `{target}`: no heading #{anchor} in {}",
                            rel.display()
                        ));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked >= 50, "only {checked} relative links were checked");
}

#[test]
fn the_readme_is_a_front_door() {
    let lines = read("README.md").lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; keep it at most {README_MAX_LINES} and move the rest into docs/"
    );
}

#[test]
fn anchors_follow_github() {
    assert_eq!(slug("What CI runs: `.ci/run`"), "what-ci-runs-cirun");
    assert_eq!(
        slug("TOPO001 too-few-control-plane-nodes"),
        "topo001-too-few-control-plane-nodes"
    );
    assert_eq!(slug("`strata.yaml`"), "stratayaml");
    let a = anchors("# A\n## Example\n```\n# not a heading\n```\n### Example\n");
    assert_eq!(a, BTreeSet::from(["a".into(), "example".into(), "example-1".into()]));
    assert_eq!(link_targets("see [x](a.md#b) and [y](c/)"), ["a.md#b", "c/"]);
}
