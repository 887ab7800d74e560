//! The shape of the code, kept by a test: the top-level modules of `src/`
//! depend on each other one way only, in the order `lib.rs` declares them
//! (and its stage map lists them), and no file or function grows past what
//! a newcomer can hold.
//!
//! A module's dependencies are the `crate::<module>` paths in its code,
//! outside comments and `#[cfg(test)]` items (a unit test may reach up).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The most lines a source file may have.
const MAX_FILE_LINES: usize = 1_000;
/// The most lines a function may have, its signature and body together.
const MAX_FN_LINES: usize = 100;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level modules in the order `lib.rs` declares them, lowest first.
fn declared() -> Vec<String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';').to_owned())
        .collect()
}

/// The modules the stage map at the top of `lib.rs` names, in its order.
fn stage_map() -> Vec<String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let mut out = Vec::new();
    for line in lib.lines().take_while(|l| l.starts_with("//!")) {
        let mut rest = line;
        while let Some(i) = rest.find("[`") {
            rest = &rest[i + 2..];
            let Some(j) = rest.find("`]") else { break };
            let name = &rest[..j];
            if name.chars().all(|c| c.is_ascii_lowercase() || c == '_') && !out.iter().any(|n| n == name) {
                out.push(name.to_owned());
            }
            rest = &rest[j..];
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file belongs to (`None` for lib.rs and main.rs).
fn top_module(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src()).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_owned();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
    (name != "lib" && name != "main").then_some(name)
}

/// The text with comments, string and char literals blanked out (newlines
/// kept, so line numbers stay), as far as these checks need: `//` and
/// `/* */` comments, `"…"` strings (with escapes), raw strings `r#"…"#`.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |out: &mut String, s: &[u8]| {
        for &c in s {
            out.push(if c == b'\n' { '\n' } else { ' ' });
        }
    };
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
            blank(&mut out, &b[i..end]);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let end = text[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
            blank(&mut out, &b[i..end]);
            i = end;
        } else if b[i] == b'r' && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#')) {
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                out.push(b[i] as char);
                i += 1;
                continue;
            }
            let close = format!("\"{}", "#".repeat(hashes));
            let start = i + 2 + hashes;
            let end = text[start..].find(&close).map_or(b.len(), |p| start + p + close.len());
            blank(&mut out, &b[i..end]);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            blank(&mut out, &b[i..end]);
            i = end;
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            blank(&mut out, &b[i..i + 3]);
            i += 3;
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            let end = text[i + 2..].find('\'').map_or(b.len(), |p| i + 2 + p + 1);
            blank(&mut out, &b[i..end]);
            i = end;
        } else {
            let ch = text[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// The byte range of the item that starts at `from` (its braces matched),
/// or to the first `;` for an item without a body.
fn item_end(code: &str, from: usize) -> usize {
    let mut depth = 0usize;
    for (i, c) in code[from..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return from + i + 1;
                }
            }
            ';' if depth == 0 => return from + i + 1,
            _ => {}
        }
    }
    code.len()
}

/// The code without `#[cfg(test)]` items, blanked out.
fn without_tests(code: &str) -> String {
    let mut out = code.to_owned();
    let mut from = 0;
    while let Some(at) = out[from..].find("#[cfg(test)]").map(|p| from + p) {
        let end = item_end(&out, at + "#[cfg(test)]".len());
        let blanked: String = out[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..end, &blanked);
        from = at + blanked.len();
    }
    out
}

/// Every `crate::<module>` a file's code names, with its line.
fn references(code: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            let before = rest[..i].chars().last();
            rest = &rest[i + "crate::".len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            out.push((name, n + 1));
        }
    }
    out
}

#[test]
fn top_level_modules_depend_on_each_other_one_way() {
    let order = declared();
    let rank: BTreeMap<&str, usize> = order.iter().enumerate().map(|(i, m)| (m.as_str(), i)).collect();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let Some(top) = top_module(file) else { continue };
        let Some(&own) = rank.get(top.as_str()) else {
            wrong.push(format!("{}: module `{top}` is not declared in lib.rs", file.display()));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for (name, line) in references(&without_tests(&code_only(&text))) {
            match rank.get(name.as_str()) {
                Some(&r) if r > own => wrong.push(format!(
                    "{}:{line}: `{top}` names `crate::{name}`, a module above it in lib.rs",
                    file.strip_prefix(src()).unwrap().display()
                )),
                Some(_) => {}
                None => wrong.push(format!(
                    "{}:{line}: `crate::{name}` is no top-level module",
                    file.strip_prefix(src()).unwrap().display()
                )),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the stages must depend on each other one way (lib.rs declares them lowest first):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_stage_map_lists_the_modules_in_their_order() {
    assert_eq!(
        stage_map(),
        declared(),
        "the stage map at the top of lib.rs must name every module, in the order lib.rs declares them"
    );
}

#[test]
fn files_and_functions_stay_small() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let rel = file.strip_prefix(src()).unwrap().display().to_string();
        let lines = text.lines().count();
        if lines > MAX_FILE_LINES {
            wrong.push(format!("{rel}: {lines} lines (at most {MAX_FILE_LINES})"));
        }
        let code = code_only(&text);
        for (start, name) in functions(&code) {
            let end = item_end(&code, start);
            let n = code[start..end].lines().count();
            if n > MAX_FN_LINES {
                let line = code[..start].lines().count() + 1;
                wrong.push(format!(
                    "{rel}:{line}: fn {name} has {n} lines (at most {MAX_FN_LINES})"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "split these where a name would explain the piece:\n{}",
        wrong.join("\n")
    );
}

/// The byte offset and name of every `fn` item.
fn functions(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("fn ").map(|p| from + p) {
        from = i + 3;
        let before = code[..i].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = code[i + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.push((i, name));
        }
    }
    out
}

#[test]
fn the_checks_see_what_they_look_for() {
    let code = code_only(
        "// crate::cli\nlet s = \"crate::cli\";\nuse crate::load;\n#[cfg(test)]\nmod t { use crate::cli; }\n",
    );
    let refs = references(&without_tests(&code));
    assert_eq!(refs, vec![("load".to_owned(), 3)]);
    let f = code_only("fn a() {\n let x = '{';\n}\nfn b();\n");
    let found = functions(&f);
    assert_eq!(found.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(f[found[0].0..item_end(&f, found[0].0)].lines().count(), 3);
}
