//! The examples of the README and of the book in `docs/` parse as written:
//! every YAML block reads with strata's YAML reader, the blocks that are a
//! `strata.yaml`, a `config.yaml` or an environment file validate against
//! their schemas, and every shell example names a command strata has.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Commands that the specification lists and that are being built now. An
/// example may name them before the binary has them; each entry must be
/// removed once strata has the command (a test below says when).
const SPEC_COMMANDS_BEING_BUILT: &[&str] = &[];

/// Global flags that take a value, so that the word after them is not the command.
const GLOBAL_FLAGS_WITH_VALUES: &[&str] = &["--root", "--color", "--inflate", "--jobs", "-j", "--shard"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown file under docs/, as paths relative to the
/// repository, in a fixed order.
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
    let mut out = vec!["README.md".to_owned()];
    walk(&repo().join("docs"), "docs", &mut out);
    out
}

/// The fenced blocks of one language in one document: (first line of the
/// body, 1-based; body).
fn blocks_of(doc: &str, lang: &str) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(repo().join(doc)).unwrap();
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        match &mut current {
            None if line.trim() == format!("```{lang}") => current = Some((i + 2, String::new())),
            Some(_) if line.trim() == "```" => out.push(current.take().unwrap()),
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    out
}

/// Every block of the language in every document: ("doc:line", body).
fn blocks(lang: &str) -> Vec<(String, String)> {
    documents()
        .into_iter()
        .flat_map(|doc| {
            blocks_of(&doc, lang)
                .into_iter()
                .map(move |(line, body)| (format!("{doc}:{line}"), body))
        })
        .collect()
}

#[test]
fn every_yaml_example_parses_and_the_input_files_validate() {
    let examples = blocks("yaml");
    // The hand-written examples (the rules' page is generated from the
    // binary, and its examples are counted beside them, not instead).
    let written = examples
        .iter()
        .filter(|(at, _)| !at.starts_with("docs/rules.md:"))
        .count();
    assert!(written >= 11, "only {written} hand-written YAML examples");
    let mut validated: Vec<&str> = Vec::new();
    for (at, body) in &examples {
        let docs = strata::yaml::parse_multi(&Arc::from(at.as_str()), body)
            .unwrap_or_else(|e| panic!("the block at {at} does not parse: {}\n{body}", e.message));
        let Some(doc) = docs.first() else { continue };
        let schema = if doc.get("component").is_some() && doc.get("chart").is_some() {
            "config.schema.json"
        } else if doc.get("substrate").is_some() && doc.get("contract").is_some() {
            "environment.schema.json"
        } else if doc.get("platform").is_some() && doc.get("layers").is_some() {
            "strata.schema.json"
        } else {
            continue;
        };
        let compiled = strata::validate::schemas::get(schema).unwrap().unwrap();
        let errors: Vec<String> = compiled
            .validator
            .iter_errors(&doc.to_json())
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "the block at {at} breaks {schema}: {errors:?}");
        validated.push(schema);
    }
    assert!(
        validated.len() >= 3,
        "only {} input examples were validated",
        validated.len()
    );
    for schema in ["strata.schema.json", "config.schema.json", "environment.schema.json"] {
        assert!(validated.contains(&schema), "no example was validated against {schema}");
    }
}

/// The subcommands a command's `--help` lists (empty for a leaf command).
fn help_commands(path: &[&str]) -> Vec<String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(path)
        .args(["--color", "never", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success(), "strata {} --help failed", path.join(" "));
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let Some(list) = help.split("\nCommands:\n").nth(1) else {
        return Vec::new();
    };
    list.lines()
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .collect()
}

/// The command words of one `strata …` invocation: the command, and the
/// subcommand when the command has subcommands or is being built.
fn command_of(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut it = args.split_whitespace();
    while let Some(w) = it.next() {
        if GLOBAL_FLAGS_WITH_VALUES.contains(&w) {
            it.next();
        } else if !w.starts_with('-') {
            words.push(w.to_owned());
            if words.len() == 2 {
                break;
            }
        }
    }
    words
}

/// The `strata …` invocations of a shell line: after a `$ ` prompt, and in
/// each part of a pipeline or command list.
fn invocations(line: &str) -> Vec<String> {
    line.trim()
        .trim_start_matches("$ ")
        .split(['|', ';'])
        .flat_map(|part| part.split("&&"))
        .filter_map(|part| part.split('#').next())
        .filter_map(|part| part.trim().strip_prefix("strata ").map(str::to_owned))
        .collect()
}

#[test]
fn every_shell_example_names_a_command_strata_has() {
    let top = help_commands(&[]);
    assert!(top.iter().any(|c| c == "render"), "the help lists no commands: {top:?}");
    let mut named = 0;
    for (at, body) in blocks("sh").into_iter().chain(blocks("console")) {
        for line in body.lines() {
            for args in invocations(line) {
                let words = command_of(&args);
                let Some(cmd) = words.first() else { continue };
                named += 1;
                let being_built = |path: &str| SPEC_COMMANDS_BEING_BUILT.contains(&path);
                if !top.contains(cmd) {
                    let two = words.join(" ");
                    assert!(
                        being_built(cmd) || being_built(&two),
                        "the block at {at}: `strata {cmd}` is no command"
                    );
                    continue;
                }
                let subs = help_commands(&[cmd.as_str()]);
                if subs.is_empty() {
                    continue;
                }
                let sub = words
                    .get(1)
                    .unwrap_or_else(|| panic!("the block at {at}: `strata {cmd}` needs a subcommand"));
                assert!(
                    subs.contains(sub) || being_built(&format!("{cmd} {sub}")),
                    "the block at {at}: `strata {cmd} {sub}` is no command"
                );
            }
        }
    }
    assert!(named >= 10, "only {named} strata commands in the shell examples");
}

/// The allow-list holds only commands strata does not have yet: once one
/// exists, the examples are checked against the binary itself.
#[test]
fn the_commands_being_built_are_not_built_yet() {
    let top = help_commands(&[]);
    for entry in SPEC_COMMANDS_BEING_BUILT {
        let words: Vec<&str> = entry.split(' ').collect();
        let exists = match words.as_slice() {
            [cmd] => top.iter().any(|c| c == cmd),
            [cmd, sub] => top.iter().any(|c| c == cmd) && help_commands(&[cmd]).iter().any(|s| s == sub),
            _ => panic!("`{entry}` is not a command path"),
        };
        assert!(
            !exists,
            "strata now has `strata {entry}`: remove it from SPEC_COMMANDS_BEING_BUILT in tests/readme.rs"
        );
    }
}
