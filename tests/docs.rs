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

/// Splits a shell line into commands (at `|`, `&&`, `;`), each its words as
/// a POSIX shell reads them (single and double quotes, `\` escapes), with a
/// comment and an output redirection (`> FILE`) left out.
fn shell_commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    let mut redirect = false;
    let end_word = |word: &mut Option<String>, commands: &mut Vec<Vec<String>>, redirect: &mut bool| {
        if let Some(w) = word.take() {
            if *redirect {
                *redirect = false;
            } else {
                commands.last_mut().unwrap().push(w);
            }
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    w.push(c);
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => w.push(chars.next().unwrap()),
                        c => w.push(c),
                    }
                }
            }
            '\\' => {
                if let Some(c) = chars.next() {
                    word.get_or_insert_with(String::new).push(c);
                }
            }
            '#' if word.is_none() => break,
            c if c.is_whitespace() => end_word(&mut word, &mut commands, &mut redirect),
            '>' => {
                end_word(&mut word, &mut commands, &mut redirect);
                redirect = true;
            }
            '|' | ';' | '&' => {
                end_word(&mut word, &mut commands, &mut redirect);
                if chars.peek() == Some(&c) {
                    chars.next();
                }
                commands.push(Vec::new());
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    end_word(&mut word, &mut commands, &mut redirect);
    commands.retain(|c| !c.is_empty());
    commands
}

/// Every `strata …` command of the shell examples of the README and the
/// book, with where it is and what feeds its standard input: (place, the
/// words after `strata`, whether `tofu output -json` is piped into it).
fn documented_commands() -> Vec<(String, Vec<String>, bool)> {
    let mut out = Vec::new();
    for doc in documents() {
        let text = read(&doc);
        let mut lang: Option<String> = None;
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if let Some(l) = t.strip_prefix("```") {
                lang = if lang.is_some() { None } else { Some(l.to_owned()) };
                continue;
            }
            if !matches!(lang.as_deref(), Some("sh" | "console")) {
                continue;
            }
            let t = t.strip_prefix("$ ").unwrap_or(t);
            let commands = shell_commands(t);
            for (k, words) in commands.iter().enumerate() {
                if words.first().map(String::as_str) != Some("strata") {
                    continue;
                }
                let piped = k > 0 && commands[k - 1].first().map(String::as_str) == Some("tofu");
                out.push((format!("{doc}:{}", i + 1), words[1..].to_vec(), piped));
            }
        }
    }
    out
}

/// A scratch copy of the example platform, with the trees `strata import`
/// examples read, as a git repository whose `origin/main` is its one
/// commit: where the documented commands run.
fn example_checkout() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    copy(&repo().join("fixtures/homelab"), root);
    let _ = std::fs::remove_dir_all(root.join("rendered"));
    copy(&repo().join("tests/import"), &root.join("tests/import"));
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-qm",
            "example",
        ],
        &["update-ref", "refs/remotes/origin/main", "HEAD"],
    ] {
        let out = Command::new("git").arg("-C").arg(root).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    tmp
}

fn copy(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from).into_iter().filter_map(Result::ok) {
        let rel = e.path().strip_prefix(from).unwrap();
        if rel.components().any(|c| c.as_os_str() == ".strata") {
            continue;
        }
        let dest = to.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else if e.file_type().is_file() {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// Every command the README and the book show runs on the example
/// platform: none is refused as a usage or input error (exit 2); a finding
/// (exit 1) is what some examples show.
#[test]
fn every_documented_command_runs_on_the_example() {
    let commands = documented_commands();
    assert!(commands.len() >= 15, "only {} documented commands", commands.len());
    let tmp = example_checkout();
    let root = tmp.path();
    // What `tofu output -json` prints for the staging stack: the example's
    // contract is in that form.
    let tofu = std::fs::read_to_string(root.join("contracts/staging.json")).unwrap();
    let mut failed = Vec::new();
    for (at, args, piped) in &commands {
        // `init` writes a new platform: each in a folder of its own.
        let fresh = tempfile::tempdir().unwrap();
        let dir = if args.first().map(String::as_str) == Some("init") {
            fresh.path()
        } else {
            root
        };
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["--color", "never"])
            .args(args)
            .current_dir(dir)
            .env("STRATA_TODAY", "2026-12-02")
            .env("PATH", "/usr/bin:/bin")
            .env_remove("STRATA_HELM")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            if *piped {
                stdin.write_all(tofu.as_bytes()).unwrap();
            }
        }
        let out = child.wait_with_output().unwrap();
        let code = out.status.code();
        if !matches!(code, Some(0 | 1)) {
            failed.push(format!(
                "{at}: strata {} exited {code:?}\n{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn shell_lines_are_split_as_a_shell_splits_them() {
    assert_eq!(
        shell_commands(r#"strata explain --env staging argocd 'configs.params."server.insecure"'"#),
        vec![vec![
            "strata",
            "explain",
            "--env",
            "staging",
            "argocd",
            r#"configs.params."server.insecure""#
        ]]
    );
    assert_eq!(
        shell_commands("tofu output -json | strata contract import --env staging -   # a note"),
        vec![
            vec!["tofu", "output", "-json"],
            vec!["strata", "contract", "import", "--env", "staging", "-"]
        ]
    );
    assert_eq!(
        shell_commands("strata man > ~/.local/share/man/man1/strata.1 && cd x"),
        vec![vec!["strata", "man"], vec!["cd", "x"]]
    );
}
