//! The README's examples parse as written: every YAML block reads with
//! strata's YAML reader, and the blocks that are a `strata.yaml`, a
//! `config.yaml` or an environment file validate against their schemas.

use std::sync::Arc;

fn blocks(lang: &str) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
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

#[test]
fn every_yaml_example_parses_and_the_input_files_validate() {
    let examples = blocks("yaml");
    assert!(examples.len() >= 8, "{}", examples.len());
    let mut validated = 0;
    for (line, body) in examples {
        let docs = strata::yaml::parse_multi(&Arc::from(format!("README.md:{line}")), &body)
            .unwrap_or_else(|e| panic!("README.md block at line {line} does not parse: {}\n{body}", e.message));
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
        assert!(
            errors.is_empty(),
            "README.md block at line {line} breaks {schema}: {errors:?}"
        );
        validated += 1;
    }
    assert!(validated >= 3, "only {validated} input examples were validated");
}

#[test]
fn every_shell_example_names_a_command_strata_has() {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    for (line, body) in blocks("sh").into_iter().chain(blocks("console")) {
        for l in body.lines() {
            let l = l.trim_start_matches("$ ").trim();
            let Some(rest) = l.strip_prefix("strata ") else {
                continue;
            };
            let Some(cmd) = rest.split_whitespace().find(|w| !w.starts_with('-')) else {
                continue;
            };
            assert!(
                help.contains(&format!("  {cmd} ")) || help.contains(&format!("  {cmd}\n")),
                "README.md block at line {line}: `strata {cmd}` is no command"
            );
        }
    }
}
