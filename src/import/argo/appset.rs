//! ApplicationSets: the list generator's elements and the git generator's
//! folders and files (read from the tree itself) give parameters, built as
//! Argo CD's applicationset controller builds them
//! (argoproj/argo-cd `applicationset/generators/list.go`, `git.go`):
//!
//! - with `goTemplate: true` the parameters keep their shape: a list
//!   element as written, and the git generator's `path` a mapping (`path`,
//!   `basename`, `basenameNormalized`, `segments`, and for a file
//!   `filename`, `filenameNormalized`);
//! - without it they are flat strings: a list element's keys as they are
//!   (so an element may have a key `path`, or `path.basename`), its
//!   `values` as `values.<key>`; the git generator's `path`,
//!   `path.basename`, `path.basenameNormalized`, `path[N]`; a file's
//!   content flattened with dots;
//! - `pathParamPrefix` puts the path parameters under a prefix, and the
//!   generator's `values` are filled from the parameters and added as
//!   `values`.
//!
//! Each set of parameters fills the template: `{{.a.b}}` with Go
//! templates, else fasttemplate's `{{ key }}`, where a key that is no
//! parameter stays as it is written (`applicationset/utils/utils.go`,
//! `Replace`). Template functions and the other generators are listed as
//! not converted.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::super::glob::{glob, path_match};
use super::super::tree::Doc;
use super::super::{Read, dns_label, not_converted};
use super::{App, Ctx, destination_env};
use crate::yaml::Origin;

/// The most folders and files a git generator looks through.
const MAX_ENTRIES: usize = 50_000;

pub(super) fn read(doc: &Doc, ctx: &mut Ctx<'_>, read: &mut Read) {
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
    let params = generate(doc, ctx, go, read);
    let mut apps: Vec<(String, Value, Origin)> = Vec::new();
    for (p, origin) in params {
        let mut unresolved = Vec::new();
        let rendered = match fill(&spec["template"], &p, go, &mut unresolved) {
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
        if !unresolved.is_empty() {
            unresolved.sort();
            unresolved.dedup();
            read.notes.push(not_converted(
                origin.clone(),
                format!(
                    "ApplicationSet {name}: {} name(s) no parameter; Argo CD leaves them as written",
                    unresolved.join(", ")
                ),
                "check the template: each `{{…}}` should name a parameter of the generator",
            ));
        }
        let templated = spec["template"]["spec"]["destination"].to_string().contains("{{");
        match env_of(&p, go, templated).or_else(|| destination_env(&rendered["spec"]["destination"])) {
            Some(env) => apps.push((env, rendered, origin)),
            None => read.notes.push(not_converted(
                origin,
                format!("ApplicationSet {name}: these parameters name no cluster, and the destination none either"),
                "give each list element a `cluster` (or `name`) key",
            )),
        }
    }
    // One Application per environment: the ApplicationSet is a component.
    // Several in one environment (a folder each): each is its own.
    let mut per_env: BTreeMap<&str, usize> = BTreeMap::new();
    for (env, _, _) in &apps {
        *per_env.entry(env.as_str()).or_default() += 1;
    }
    let fan_out = per_env.values().any(|n| *n > 1);
    let first = read.releases.len();
    for (env, rendered, origin) in &apps {
        let own = rendered["metadata"]["name"].as_str().unwrap_or(name);
        let id = if fan_out { own } else { name };
        let app = App {
            key: id.to_owned(),
            name: id.to_owned(),
            env: Some(env.clone()),
            spec: &rendered["spec"],
            origin: origin.clone(),
        };
        app.read(ctx, read);
    }
    // The patch may set anything of the Applications, their values too.
    if spec.get("templatePatch").is_some() {
        for r in &mut read.releases[first..] {
            r.unread
                .push(format!("what the templatePatch of ApplicationSet {name} sets"));
        }
    }
}

/// Every set of parameters the generators give.
fn generate(doc: &Doc, ctx: &Ctx<'_>, go: bool, read: &mut Read) -> Vec<(Value, Origin)> {
    let name = doc.name();
    let mut params: Vec<(Value, Origin)> = Vec::new();
    for (i, g) in doc.value["spec"]["generators"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("spec/generators/{i}");
        if let Some(list) = g.get("list") {
            for (j, e) in list["elements"].as_array().into_iter().flatten().enumerate() {
                let origin = doc.origin_of(&format!("{at}/list/elements/{j}"));
                match list_params(e, go) {
                    Ok(p) => params.push((p, origin)),
                    Err(why) => read.notes.push(not_converted(
                        origin,
                        format!("ApplicationSet {name}: this list element is refused by Argo CD: {why}"),
                        "give every key a string value (or set goTemplate: true)",
                    )),
                }
            }
            if list.get("elementsYaml").is_some() {
                read.notes.push(not_converted(
                    doc.origin_of(&format!("{at}/list/elementsYaml")),
                    format!("ApplicationSet {name}: elementsYaml comes from another generator and is not read"),
                    "write the elements out in the list",
                ));
            }
        } else if let Some(git) = g.get("git") {
            match git_params(git, ctx, go) {
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
    params
}

/// A list element's parameters: as written with Go templates; else each
/// key a string, `values` spread as `values.<key>`.
fn list_params(e: &Value, go: bool) -> Result<Value, String> {
    if go {
        return Ok(e.clone());
    }
    let mut out = Map::new();
    for (k, v) in e.as_object().into_iter().flatten() {
        if k == "values" {
            let values = v.as_object().ok_or("its `values` is not a mapping")?;
            for (vk, vv) in values {
                let s = vv.as_str().ok_or_else(|| format!("values.{vk} is not a string"))?;
                out.insert(format!("values.{vk}"), json!(s));
            }
        } else {
            let s = v.as_str().ok_or_else(|| format!("`{k}` is not a string"))?;
            out.insert(k.clone(), json!(s));
        }
    }
    Ok(Value::Object(out))
}

/// The environment a set of parameters names: its `cluster` (or
/// `cluster.name`), or its `name` when the template's destination is
/// filled from the parameters.
fn env_of(p: &Value, go: bool, templated: bool) -> Option<String> {
    let get = |path: &str| -> Option<&str> {
        if go {
            path.split('.').try_fold(p, |v, k| v.get(k))?.as_str()
        } else {
            p.get(path)?.as_str()
        }
    };
    let name = get("cluster")
        .or_else(|| get("cluster.name"))
        .or_else(|| if templated { get("name") } else { None })?;
    dns_label(name, 63)
}

/// The template with every `{{…}}` in its strings filled from `p`; names
/// that are no parameter (fasttemplate) go into `unresolved`.
pub fn fill(t: &Value, p: &Value, go: bool, unresolved: &mut Vec<String>) -> Result<Value, String> {
    Ok(match t {
        Value::String(s) => Value::String(fill_str(s, p, go, unresolved)?),
        Value::Array(l) => Value::Array(l.iter().map(|x| fill(x, p, go, unresolved)).collect::<Result<_, _>>()?),
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                out.insert(k.clone(), fill(v, p, go, unresolved)?);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

fn fill_str(s: &str, p: &Value, go: bool, unresolved: &mut Vec<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let Some(j) = rest[i..].find("}}") else {
            if go {
                return Err(format!("`{s}` has an unclosed `{{{{`"));
            }
            out.push_str(&rest[i..]);
            return Ok(out);
        };
        let tag = &rest[i + 2..i + j];
        if go {
            out.push_str(&go_lookup(tag, p)?);
        } else {
            // fasttemplate: the trimmed tag is a parameter's name, or the
            // tag stays as written.
            match p.get(tag.trim()).and_then(Value::as_str) {
                Some(v) if !tag.trim().is_empty() => out.push_str(v),
                _ => {
                    unresolved.push(format!("`{{{{{tag}}}}}`"));
                    out.push_str(&rest[i..i + j + 2]);
                }
            }
        }
        rest = &rest[i + j + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A Go template action that is a plain field path, `.a.b`.
fn go_lookup(tag: &str, p: &Value) -> Result<String, String> {
    let expr = tag.trim();
    let expr = expr.strip_prefix('-').unwrap_or(expr).trim();
    let expr = expr.strip_suffix('-').unwrap_or(expr).trim();
    let unsupported = || format!("`{{{{{expr}}}}}` is not a plain parameter");
    // `index .list N`, as Go's text/template takes it.
    if let Some(rest) = expr.strip_prefix("index ") {
        let (list, n) = rest.trim().rsplit_once(' ').ok_or_else(unsupported)?;
        let n: usize = n.trim().parse().map_err(|_| unsupported())?;
        let v = field(list.trim(), p).ok_or_else(|| format!("no parameter `{list}`"))?;
        return v
            .get(n)
            .and_then(scalar)
            .ok_or_else(|| format!("`{expr}`: no single value there"));
    }
    let path = expr.strip_prefix('.').ok_or_else(unsupported)?;
    if path.is_empty() || !path.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.') {
        return Err(unsupported());
    }
    let mut at = p;
    for k in path.split('.') {
        at = at.get(k).ok_or_else(|| format!("no parameter `{expr}`"))?;
    }
    scalar(at).ok_or_else(|| format!("parameter `{expr}` is not a single value"))
}

/// The value at a Go template field path (`.a.b`).
fn field<'a>(path: &str, p: &'a Value) -> Option<&'a Value> {
    let path = path.strip_prefix('.')?;
    path.split('.').try_fold(p, |v, k| v.get(k))
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
fn git_params(git: &Value, ctx: &Ctx<'_>, go: bool) -> Result<Vec<Value>, String> {
    let entries = entries(&ctx.tree.root)?;
    let prefix = git["pathParamPrefix"].as_str().unwrap_or("");
    let mut out = Vec::new();
    if let Some(dirs) = git["directories"].as_array() {
        // Folders match as Go's path.Match: one segment per `*`.
        let (include, exclude) = globs(dirs);
        for (rel, is_dir) in &entries {
            let wanted = include.iter().any(|g| path_match(g, rel)) && !exclude.iter().any(|g| path_match(g, rel));
            if *is_dir && wanted {
                out.push(path_params(prefix, rel, None, go));
            }
        }
    } else if let Some(files) = git["files"].as_array() {
        let (include, exclude) = globs(files);
        for (rel, is_dir) in &entries {
            let wanted = include.iter().any(|g| glob(g, rel)) && !exclude.iter().any(|g| glob(g, rel));
            if !*is_dir && wanted {
                out.extend(file_params(ctx, rel, prefix, go)?);
            }
        }
    } else {
        return Err("it names neither directories nor files".into());
    }
    if out.is_empty() {
        return Err("no folder or file of the tree matches its paths".into());
    }
    if let Some(values) = git["values"].as_object() {
        for p in &mut out {
            let mut filled = Map::new();
            for (k, v) in values {
                let text = v.as_str().unwrap_or("");
                filled.insert(k.clone(), json!(fill_str(text, p, go, &mut Vec::new())?));
            }
            let Some(m) = p.as_object_mut() else { continue };
            if go {
                m.insert("values".into(), Value::Object(filled));
            } else {
                for (k, v) in filled {
                    m.insert(format!("values.{k}"), v);
                }
            }
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

fn file_params(ctx: &Ctx<'_>, rel: &str, prefix: &str, go: bool) -> Result<Vec<Value>, String> {
    let tree = ctx.tree;
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
        .map(|d| {
            let mut m = if go {
                d.as_object().cloned().unwrap_or_default()
            } else {
                let mut flat = Map::new();
                flatten(&d, "", &mut flat);
                flat
            };
            if let Value::Object(p) = path_params(prefix, dir, Some(rel), go) {
                m.extend(p);
            }
            Value::Object(m)
        })
        .collect())
}

/// A document's leaves under dotted keys, each as Go's `%v` prints it.
fn flatten(v: &Value, at: &str, out: &mut Map<String, Value>) {
    let key = |k: &str| {
        if at.is_empty() {
            k.to_owned()
        } else {
            format!("{at}.{k}")
        }
    };
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| flatten(x, &key(k), out)),
        Value::Array(l) => l
            .iter()
            .enumerate()
            .for_each(|(i, x)| flatten(x, &key(&i.to_string()), out)),
        Value::Null => {
            out.insert(at.to_owned(), json!("<nil>"));
        }
        other => {
            out.insert(at.to_owned(), json!(scalar(other).unwrap_or_default()));
        }
    }
}

/// The git generator's path parameters for folder `dir` (and, for a
/// file, `file`), in either shape.
fn path_params(prefix: &str, dir: &str, file: Option<&str>, go: bool) -> Value {
    let base = dir.rsplit('/').next().unwrap_or(dir);
    let filename = file.map(|f| f.rsplit('/').next().unwrap_or(f));
    if go {
        let mut p = json!({
            "path": dir,
            "basename": base,
            "basenameNormalized": sanitize_name(base),
            "segments": dir.split('/').collect::<Vec<_>>(),
        });
        if let Some(f) = filename {
            p["filename"] = json!(f);
            p["filenameNormalized"] = json!(sanitize_name(f));
        }
        return if prefix.is_empty() {
            json!({ "path": p })
        } else {
            json!({ prefix: { "path": p } })
        };
    }
    let name = if prefix.is_empty() {
        "path".to_owned()
    } else {
        format!("{prefix}.path")
    };
    let mut p = Map::new();
    p.insert(name.clone(), json!(dir));
    p.insert(format!("{name}.basename"), json!(base));
    p.insert(format!("{name}.basenameNormalized"), json!(sanitize_name(base)));
    if let Some(f) = filename {
        p.insert(format!("{name}.filename"), json!(f));
        p.insert(format!("{name}.filenameNormalized"), json!(sanitize_name(f)));
    }
    for (i, s) in dir.split('/').enumerate().filter(|(_, s)| !s.is_empty()) {
        p.insert(format!("{name}[{i}]"), json!(s));
    }
    Value::Object(p)
}

/// Argo CD's `SanitizeName` (`applicationset/utils/template_functions.go`):
/// lowercase, every character but `a-z0-9-.` a `-`, at most 253, no `-`
/// or `.` at either end.
pub fn sanitize_name(name: &str) -> String {
    let lower: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let cut: String = lower.chars().take(253).collect();
    cut.trim_matches(['-', '.']).to_owned()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_template_syntaxes_are_filled() {
        let go = json!({"cluster": "staging", "path": {"path": "apps/web", "basename": "web"}});
        let mut un = Vec::new();
        assert_eq!(
            fill_str("{{ .cluster }}/{{- .path.basename -}}", &go, true, &mut un).unwrap(),
            "staging/web"
        );
        assert!(fill_str("{{ .cluster | upper }}", &go, true, &mut un).is_err());
        assert!(fill_str("{{ cluster }}", &go, true, &mut un).is_err());
        let segs = json!({"path": {"segments": ["services", "api"]}});
        assert_eq!(
            fill_str("{{ index .path.segments 1 }}", &segs, true, &mut un).unwrap(),
            "api"
        );
        // fasttemplate: flat names, a key named `path` as any other, and a
        // name that is no parameter left as written.
        let flat = json!({"cluster": "staging", "path": "apps/web", "path.basename": "web", "values.replicas": "2"});
        assert_eq!(
            fill_str(
                "{{cluster}}-{{ values.replicas }} {{path}} {{path.basename}} {{missing}}",
                &flat,
                false,
                &mut un
            )
            .unwrap(),
            "staging-2 apps/web web {{missing}}"
        );
        assert_eq!(un, ["`{{missing}}`"]);
    }

    #[test]
    fn list_elements_are_strings_without_go_templates() {
        let e = json!({"cluster": "a", "path": "apps/x", "values": {"n": "1"}});
        assert_eq!(
            list_params(&e, false).unwrap(),
            json!({"cluster": "a", "path": "apps/x", "values.n": "1"})
        );
        assert!(list_params(&json!({"replicas": 2}), false).is_err());
        assert_eq!(
            list_params(&json!({"replicas": 2}), true).unwrap(),
            json!({"replicas": 2})
        );
    }

    #[test]
    fn path_parameters_take_argo_cds_shapes() {
        let flat = path_params("", "apps/Web_1", None, false);
        assert_eq!(flat["path"], "apps/Web_1");
        assert_eq!(flat["path.basenameNormalized"], "web-1");
        assert_eq!(flat["path[1]"], "Web_1");
        let go = path_params("app", "apps/web", Some("apps/web/config.json"), true);
        assert_eq!(go["app"]["path"]["segments"], json!(["apps", "web"]));
        assert_eq!(go["app"]["path"]["filename"], "config.json");
        assert_eq!(sanitize_name("--My.App_--"), "my.app");
    }
}
