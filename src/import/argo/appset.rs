//! ApplicationSets: the list generator's elements and the git generator's
//! folders and files (read from the tree itself) give parameters; each set
//! of parameters fills the template, in either of Argo CD's template
//! syntaxes (`{{cluster}}`, or `{{.cluster}}` with `goTemplate: true`), as
//! `docs/operator-manual/applicationset/Generators-List.md` and
//! `Generators-Git.md` describe them. Template functions and the other
//! generators are listed as not converted.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::super::tree::{Doc, Tree};
use super::super::{Read, dns_label, not_converted};
use super::App;
use crate::yaml::Origin;

/// The most folders and files a git generator looks through.
const MAX_ENTRIES: usize = 50_000;

pub(super) fn read(doc: &Doc, tree: &Tree, app_folders: &BTreeSet<String>, read: &mut Read) {
    let spec = &doc.value["spec"];
    let name = doc.name();
    let go = spec["goTemplate"].as_bool() == Some(true);
    if spec.get("templatePatch").is_some() {
        read.notes.push(not_converted(
            doc.origin_of("spec/templatePatch"),
            format!("ApplicationSet {name}: its templatePatch is not applied"),
            "apply the patch to the template by hand before importing",
        ));
    }
    let mut params: Vec<(Value, Origin)> = Vec::new();
    for (i, g) in spec["generators"].as_array().into_iter().flatten().enumerate() {
        let at = format!("spec/generators/{i}");
        if let Some(list) = g.get("list") {
            for (j, e) in list["elements"].as_array().into_iter().flatten().enumerate() {
                params.push((e.clone(), doc.origin_of(&format!("{at}/list/elements/{j}"))));
            }
            if list.get("elementsYaml").is_some() {
                read.notes.push(not_converted(
                    doc.origin_of(&format!("{at}/list/elementsYaml")),
                    format!("ApplicationSet {name}: elementsYaml comes from another generator and is not read"),
                    "write the elements out in the list",
                ));
            }
        } else if let Some(git) = g.get("git") {
            match git_params(git, tree) {
                Ok(found) => params.extend(found.into_iter().map(|p| (p, doc.origin_of(&at)))),
                Err(why) => read.notes.push(not_converted(
                    doc.origin_of(&at),
                    format!("ApplicationSet {name}: its git generator cannot be resolved in the tree: {why}"),
                    "import from the checkout of the repository the generator reads",
                )),
            }
        } else {
            let kind = g.as_object().and_then(|m| m.keys().next().cloned()).unwrap_or_default();
            read.notes.push(not_converted(
                doc.origin_of(&at),
                format!("ApplicationSet {name}: the {kind} generator is not imported (only list and git are)"),
                "write the Applications it generates as list elements, or add them by hand",
            ));
        }
    }
    for (p, origin) in params {
        let rendered = match fill(&spec["template"], &p, go) {
            Ok(r) => r,
            Err(why) => {
                read.notes.push(not_converted(
                    origin,
                    format!("ApplicationSet {name}: the template cannot be filled: {why}"),
                    "strata fills plain parameters only; write this Application out by hand",
                ));
                continue;
            }
        };
        let Some(env) = env_of(&p) else {
            read.notes.push(not_converted(
                origin,
                format!("ApplicationSet {name}: these parameters have no `cluster` or `name` to name the environment"),
                "give each list element a `cluster` (or `name`) key",
            ));
            continue;
        };
        let app = App {
            key: name.to_owned(),
            name: name.to_owned(),
            env: Some(env),
            spec: &rendered["spec"],
            origin,
        };
        app.read(tree, app_folders, read);
    }
}

/// The environment a set of parameters is for.
fn env_of(p: &Value) -> Option<String> {
    let name = p["cluster"]
        .as_str()
        .or(p["name"].as_str())
        .or(p["cluster"]["name"].as_str())
        .or(p["path"]["basename"].as_str())?;
    dns_label(name, 63)
}

/// The template with every `{{…}}` in its strings filled from `p`.
pub fn fill(t: &Value, p: &Value, go: bool) -> Result<Value, String> {
    Ok(match t {
        Value::String(s) => Value::String(fill_str(s, p, go)?),
        Value::Array(l) => Value::Array(l.iter().map(|x| fill(x, p, go)).collect::<Result<_, _>>()?),
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                out.insert(k.clone(), fill(v, p, go)?);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

fn fill_str(s: &str, p: &Value, go: bool) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let Some(j) = rest[i..].find("}}") else {
            return Err(format!("`{s}` has an unclosed `{{{{`"));
        };
        let expr = rest[i + 2..i + j].trim();
        let expr = expr.strip_prefix('-').unwrap_or(expr).trim();
        let expr = expr.strip_suffix('-').unwrap_or(expr).trim();
        out.push_str(&lookup(expr, p, go)?);
        rest = &rest[i + j + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn lookup(expr: &str, p: &Value, go: bool) -> Result<String, String> {
    let unsupported = || format!("`{{{{{expr}}}}}` is not a plain parameter");
    let path = if go {
        let path = expr.strip_prefix('.').ok_or_else(unsupported)?;
        if path.is_empty() || !path.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.') {
            return Err(unsupported());
        }
        path.to_owned()
    } else {
        if expr.is_empty() || expr.contains(char::is_whitespace) {
            return Err(unsupported());
        }
        expr.to_owned()
    };
    let mut at = p;
    let mut keys: Vec<&str> = path.split('.').collect();
    // fasttemplate's `path` and `path[N]` are the git generator's path
    // and its segments.
    if !go && let Some(n) = keys[0].strip_prefix("path[").and_then(|r| r.strip_suffix(']')) {
        let n: usize = n.parse().map_err(|_| unsupported())?;
        return scalar(&p["path"]["segments"][n]).ok_or_else(|| format!("no parameter `{expr}`"));
    }
    if !go && keys == ["path"] {
        keys.push("path");
    }
    for k in keys {
        at = at.get(k).ok_or_else(|| format!("no parameter `{expr}`"))?;
    }
    scalar(at).ok_or_else(|| format!("parameter `{expr}` is not a single value"))
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The parameters of a git generator, from the tree.
fn git_params(git: &Value, tree: &Tree) -> Result<Vec<Value>, String> {
    let entries = entries(&tree.root)?;
    let prefix = git["pathParamPrefix"].as_str().unwrap_or("");
    let mut out = Vec::new();
    if let Some(dirs) = git["directories"].as_array() {
        let (include, exclude) = globs(dirs);
        for (rel, is_dir) in &entries {
            let wanted = include.iter().any(|g| glob(g, rel)) && !exclude.iter().any(|g| glob(g, rel));
            if *is_dir && wanted {
                out.push(with_prefix(prefix, path_params(rel, None)));
            }
        }
    } else if let Some(files) = git["files"].as_array() {
        let (include, exclude) = globs(files);
        for (rel, is_dir) in &entries {
            let wanted = include.iter().any(|g| glob(g, rel)) && !exclude.iter().any(|g| glob(g, rel));
            if !*is_dir && wanted {
                out.extend(file_params(tree, rel, prefix)?);
            }
        }
    } else {
        return Err("it names neither directories nor files".into());
    }
    if out.is_empty() {
        return Err("no folder or file of the tree matches its paths".into());
    }
    if let Some(values) = git.get("values") {
        for p in &mut out {
            let filled = fill(values, p, false).or_else(|_| fill(values, p, true))?;
            p["values"] = filled;
        }
    }
    Ok(out)
}

fn globs(list: &[Value]) -> (Vec<String>, Vec<String>) {
    let mut include = Vec::new();
    let mut exclude = Vec::new();
    for d in list {
        if let Some(p) = d["path"].as_str() {
            let p = p.trim_start_matches("./").to_owned();
            if d["exclude"].as_bool() == Some(true) {
                exclude.push(p);
            } else {
                include.push(p);
            }
        }
    }
    (include, exclude)
}

fn file_params(tree: &Tree, rel: &str, prefix: &str) -> Result<Vec<Value>, String> {
    let bytes = crate::world::disk::read_regular(&tree.root.join(rel), crate::yaml::MAX_INPUT_BYTES as u64)
        .map_err(|e| format!("{rel}: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{rel}: not UTF-8 text"))?;
    let name = std::sync::Arc::from(tree.shown_path(rel));
    let node = crate::yaml::parse(&name, &text).map_err(|e| format!("{}: {}", e.origin, e.message))?;
    let docs = match node.to_json() {
        Value::Array(l) => l,
        v => vec![v],
    };
    let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
    Ok(docs
        .into_iter()
        .filter(Value::is_object)
        .map(|mut d| {
            let path = path_params(dir, Some(rel));
            if let (Some(m), Value::Object(p)) = (d.as_object_mut(), with_prefix(prefix, path)) {
                m.extend(p);
            }
            d
        })
        .collect())
}

/// `path.path`, `path.basename`, `path.basenameNormalized`, `path.segments`
/// (and, for a file, `path.filename` and `path.filenameNormalized`).
fn path_params(dir: &str, file: Option<&str>) -> Value {
    let base = dir.rsplit('/').next().unwrap_or(dir);
    let normal = |s: &str| dns_label(s, 253).unwrap_or_default();
    let mut p = json!({
        "path": dir,
        "basename": base,
        "basenameNormalized": normal(base),
        "segments": dir.split('/').filter(|s| !s.is_empty()).collect::<Vec<_>>(),
    });
    if let Some(f) = file {
        let name = f.rsplit('/').next().unwrap_or(f);
        p["filename"] = json!(name);
        p["filenameNormalized"] = json!(normal(name));
    }
    json!({ "path": p })
}

fn with_prefix(prefix: &str, p: Value) -> Value {
    if prefix.is_empty() { p } else { json!({ prefix: p }) }
}

/// Every folder and YAML or JSON file below `root` (hidden ones left out),
/// relative, with whether it is a folder.
fn entries(root: &std::path::Path) -> Result<Vec<(String, bool)>, String> {
    let mut out = Vec::new();
    let walk = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    for e in walk.filter_map(Result::ok).skip(1) {
        if out.len() >= MAX_ENTRIES {
            return Err(format!("more than {MAX_ENTRIES} entries to look through"));
        }
        let rel = e
            .path()
            .strip_prefix(root)
            .unwrap_or(e.path())
            .to_string_lossy()
            .replace('\\', "/");
        out.push((rel, e.file_type().is_dir()));
    }
    Ok(out)
}

/// Whether a `/`-separated path matches a glob: `*` and `?` within one
/// segment, `**` across any number of them.
pub fn glob(pattern: &str, path: &str) -> bool {
    let p: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    let s: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    glob_segments(&p, &s)
}

fn glob_segments(p: &[&str], s: &[&str]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(&"**"), _) => glob_segments(&p[1..], s) || (!s.is_empty() && glob_segments(p, &s[1..])),
        (Some(pat), Some(seg)) => glob_one(pat.as_bytes(), seg.as_bytes()) && glob_segments(&p[1..], &s[1..]),
        _ => false,
    }
}

fn glob_one(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => glob_one(&p[1..], s) || (!s.is_empty() && glob_one(p, &s[1..])),
        (Some(b'?'), Some(_)) => glob_one(&p[1..], &s[1..]),
        (Some(a), Some(b)) if a == b => glob_one(&p[1..], &s[1..]),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_template_syntaxes_are_filled() {
        let p = json!({"cluster": "staging", "url": "https://x", "values": {"replicas": 2},
                       "path": {"path": "apps/web", "basename": "web", "segments": ["apps", "web"]}});
        assert_eq!(
            fill_str("{{cluster}}-{{values.replicas}}", &p, false).unwrap(),
            "staging-2"
        );
        assert_eq!(
            fill_str("{{ .cluster }}/{{- .path.basename -}}", &p, true).unwrap(),
            "staging/web"
        );
        assert_eq!(fill_str("{{path}} {{path[0]}}", &p, false).unwrap(), "apps/web apps");
        assert!(fill_str("{{ .cluster | upper }}", &p, true).is_err());
        assert!(fill_str("{{ cluster }}", &p, true).is_err());
        assert!(fill_str("{{missing}}", &p, false).is_err());
        assert!(fill_str("{{cluster", &p, false).is_err());
    }

    #[test]
    fn globs_match_by_segment() {
        assert!(glob("apps/*", "apps/web"));
        assert!(!glob("apps/*", "apps/web/x"));
        assert!(glob("clusters/**/config.json", "clusters/a/b/config.json"));
        assert!(glob("clusters/**/config.json", "clusters/config.json"));
        assert!(glob("c?/*.yaml", "c1/x.yaml"));
        assert!(!glob("c?/*.yaml", "c12/x.yaml"));
    }
}
