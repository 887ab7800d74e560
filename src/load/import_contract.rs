//! `strata contract import`: what `tofu output -json` (or `terraform output
//! -json`) prints, written as the environment's contract with every
//! sensitive output reduced to its name, type and `sensitive: true`, so that
//! the repository holds no secret and rules and references still know the
//! output exists and is sensitive.
//!
//! The file written is the one the environment's `contract:` names, and
//! only that: a path that leaves the repository or passes through a
//! symbolic link is refused, and so is a file there that is not a contract,
//! unless the caller says to replace it. It is written atomically, its keys
//! sorted, as JSON (or YAML, for a `.yaml`/`.yml` path): the same outputs
//! give the same bytes, and an unchanged contract is not rewritten.
//!
//! The input's values are never quoted in a message: an error says where
//! (line and column) and what, not what the text there is.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value as J};

use super::environment;
use super::project::Project;
use crate::diag::{Diagnostic, Sources, codes};
use crate::world::{self, World};
use crate::yaml::{self, Origin};

/// What to import, and where the repository is.
pub struct Request<'a> {
    /// The repository's root on disk, where the contract is written.
    pub root: &'a Path,
    pub world: &'a dyn World,
    pub sources: &'a Sources,
    /// The environment whose contract is written; `None`: the only one.
    pub env: Option<&'a str>,
    /// How the input is named in messages (`<stdin>`, or its path).
    pub input_name: &'a str,
    /// `tofu output -json`.
    pub input: &'a str,
    /// Replace a file that is not a contract, and write outputs whose
    /// `substrate` is not the environment's.
    pub force: bool,
}

/// What was written.
#[derive(Debug, PartialEq, Eq)]
pub struct Imported {
    pub env: String,
    /// The contract's path, relative to the root.
    pub path: String,
    pub outputs: usize,
    pub sensitive: usize,
    /// The file already held these bytes; nothing was written.
    pub unchanged: bool,
    /// The outputs had no `substrate`: the environment's was written.
    pub substrate_from_env: Option<String>,
}

fn refusal(origin: Origin, message: impl Into<String>, help: impl Into<String>) -> Diagnostic {
    Diagnostic::error(codes::CONTRACT_IMPORT, origin, message).with_help(help)
}

/// Writes the environment's contract from `tofu output -json`.
pub fn import(req: &Request<'_>) -> Result<Imported, Vec<Diagnostic>> {
    let target = target(req)?;
    let env_substrate = target.substrate.as_ref().map(|(s, _)| s.as_str());
    let converted = convert(req.input_name, req.input, &target.rel, env_substrate)?;
    if let (Some((want, origin)), Some(got)) = (&target.substrate, &converted.substrate)
        && want != got
        && !req.force
    {
        return Err(vec![
            refusal(
                Origin::file_start(req.input_name),
                format!(
                    "these outputs are of a `{got}` substrate, but environment `{}` is `{want}`: are they another stack's?",
                    target.env
                ),
                "import the outputs of this environment's stack, or pass --force to write them anyway",
            )
            .with_related(origin.clone(), "the environment's substrate"),
        ]);
    }
    let path = req.root.join(&target.rel);
    folders_are_real(req.root, &target.rel, &target.origin).map_err(|d| vec![d])?;
    let existing = writable(&path, &target.rel, req.force, &target.origin).map_err(|d| vec![d])?;
    let unchanged = existing.as_deref() == Some(converted.text.as_bytes());
    if !unchanged {
        write(
            req.root,
            &target.rel,
            &path,
            existing.is_some(),
            converted.text.as_bytes(),
        )
        .map_err(|e| {
            vec![refusal(
                target.origin.clone(),
                format!("cannot write {}: {e}", target.rel),
                "check the folder's permissions",
            )]
        })?;
    }
    Ok(Imported {
        env: target.env,
        path: target.rel,
        outputs: converted.outputs,
        sensitive: converted.sensitive,
        unchanged,
        substrate_from_env: converted
            .substrate_from_env
            .then(|| converted.substrate.unwrap_or_default()),
    })
}

/// The environment and the contract path it names.
struct Target {
    env: String,
    rel: String,
    /// Where `contract:` is written.
    origin: Origin,
    substrate: Option<(String, Origin)>,
}

/// The environment asked for, or the only one, and its contract's path.
fn target(req: &Request<'_>) -> Result<Target, Vec<Diagnostic>> {
    let (world, sources) = (req.world, req.sources);
    let project = Project::read(world, sources, &mut Vec::new()).map_err(|d| vec![d])?;
    let folder = Origin::file_start(project.environments.as_str());
    let names: Vec<String> = world
        .list(&project.environments)
        .map_err(|e| vec![super::files::io_error(&Arc::from(project.environments.as_str()), &e)])?
        .into_iter()
        .filter(|e| !e.is_dir)
        .filter_map(|e| e.name.strip_suffix(".yaml").map(str::to_owned))
        .collect();
    let env = match (req.env, names.as_slice()) {
        (Some(e), _) if names.iter().any(|n| n == e) => e.to_owned(),
        (Some(e), _) => {
            let help = match super::decode::suggest(e, &names.iter().map(String::as_str).collect::<Vec<_>>()) {
                Some(s) => format!("did you mean `{s}`?"),
                None => format!("environments: {}", names.join(", ")),
            };
            return Err(vec![refusal(
                folder,
                format!("no environment `{e}`: there is no {}/{e}.yaml", project.environments),
                help,
            )]);
        }
        (None, [only]) => only.clone(),
        (None, []) => {
            return Err(vec![refusal(
                folder,
                format!("no environments: {} holds no <env>.yaml file", project.environments),
                "add environments/<name>.yaml with `substrate`, `contract` and `git`, then import its contract with --env",
            )]);
        }
        (None, many) => {
            return Err(vec![refusal(
                folder,
                "which environment's contract? The platform has more than one",
                format!("pass --env, one of: {}", many.join(", ")),
            )]);
        }
    };
    let file = world::join(&project.environments, &format!("{env}.yaml"));
    let node = super::files::read_yaml(world, sources, &file).map_err(|d| vec![d])?;
    let header = environment::decode_header(&node, &file, &mut Vec::new());
    let Some((path, origin)) = header.contract else {
        return Err(vec![refusal(
            node.origin,
            format!("environment `{env}` names no `contract:` file"),
            format!("add `contract: contracts/{env}.json` to {file}"),
        )]);
    };
    let rel = world::normalize(&path).map_err(|e| {
        vec![refusal(
            origin.clone(),
            format!("`contract:` {e}; strata writes only inside the repository"),
            "name a file inside the repository in `contract:`",
        )]
    })?;
    Ok(Target {
        env,
        rel,
        origin,
        substrate: header.substrate,
    })
}

/// The contract's text, and what it holds.
struct Converted {
    text: String,
    outputs: usize,
    sensitive: usize,
    /// The `substrate` output's value.
    substrate: Option<String>,
    /// It is the environment's: the outputs had none.
    substrate_from_env: bool,
}

/// An error of the input at a line and column, its text never quoted.
fn input_error(name: &str, line: usize, col: usize, what: impl Into<String>) -> Vec<Diagnostic> {
    let (line, col) = (
        u32::try_from(line).unwrap_or(u32::MAX),
        u32::try_from(col).unwrap_or(u32::MAX),
    );
    vec![refusal(
        Origin::new(name, line.max(1), col.max(1), 0),
        what,
        "give the JSON that `tofu output -json` (or `terraform output -json`) prints for the substrate stack, unchanged",
    )]
}

/// `tofu output -json` as the contract's text: keys sorted, sensitive
/// outputs without `value`. A stack that prints no `substrate` (one
/// written before ADR 0032 asked for it) gets the environment's, `env`.
fn convert(name: &str, input: &str, rel: &str, env: Option<&str>) -> Result<Converted, Vec<Diagnostic>> {
    let parsed: J = serde_json::from_str(input).map_err(|e| {
        let what = e.to_string();
        let what = what.split(" at line ").next().unwrap_or(&what).to_owned();
        input_error(name, e.line(), e.column(), format!("not JSON: {what}"))
    })?;
    // Where each output is, and whether a key is repeated (which serde's
    // reader would take silently): a JSON document is YAML to strata's reader.
    let places = places(name, input)?;
    let at = |output: &str| places.iter().find(|(n, _)| n == output).map_or((1, 1), |(_, o)| *o);
    let J::Object(outputs) = parsed else {
        return Err(input_error(
            name,
            1,
            1,
            "not `tofu output -json`: the outputs must be a JSON object of output names",
        ));
    };
    let mut out = Map::new();
    let mut sensitive = 0;
    for (output, record) in sorted(outputs) {
        let (line, col) = at(&output);
        let J::Object(fields) = record else {
            return Err(input_error(
                name,
                line,
                col,
                format!(
                    "output `{output}` is not `{{\"value\", \"type\", \"sensitive\"}}`: is this `tofu output -json`?"
                ),
            ));
        };
        let is_sensitive = match fields.get("sensitive") {
            Some(J::Bool(b)) => *b,
            _ => {
                return Err(input_error(
                    name,
                    line,
                    col,
                    format!("output `{output}` has no `sensitive: true` or `false`: is this `tofu output -json`?"),
                ));
            }
        };
        let mut kept = Map::new();
        kept.insert("sensitive".into(), J::Bool(is_sensitive));
        if let Some(ty) = fields.get("type") {
            kept.insert("type".into(), sorted_value(ty.clone()));
        }
        match (fields.get("value"), is_sensitive) {
            (_, true) => sensitive += 1,
            (Some(v), false) => {
                kept.insert("value".into(), sorted_value(v.clone()));
            }
            (None, false) => {
                return Err(input_error(
                    name,
                    line,
                    col,
                    format!("output `{output}` has no `value`"),
                ));
            }
        }
        out.insert(output, J::Object(kept));
    }
    let mut substrate = out
        .get("substrate")
        .and_then(|r| r.get("value"))
        .and_then(J::as_str)
        .map(str::to_owned);
    let substrate_from_env = substrate.is_none() && !out.contains_key("substrate");
    if substrate_from_env && let Some(env) = env {
        out = with_substrate(out, env);
        substrate = Some(env.to_owned());
    }
    if substrate.is_none() {
        return Err(input_error(
            name,
            1,
            1,
            "the outputs have no `substrate` (kind, talos, …), which every substrate stack outputs (ADR 0032), and the environment names none",
        ));
    }
    let outputs = out.len();
    let doc = J::Object(out);
    let text = if rel.ends_with(".yaml") || rel.ends_with(".yml") {
        yaml::to_sorted_yaml(&doc)
    } else {
        serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
    };
    Ok(Converted {
        text,
        outputs,
        sensitive,
        substrate,
        substrate_from_env,
    })
}

/// The outputs with a `substrate` output of the value `env`, keys sorted.
fn with_substrate(mut out: Map<String, J>, env: &str) -> Map<String, J> {
    let mut record = Map::new();
    record.insert("sensitive".into(), J::Bool(false));
    record.insert("type".into(), J::from("string"));
    record.insert("value".into(), J::from(env));
    out.insert("substrate".into(), J::Object(record));
    sorted(out).into_iter().collect()
}

/// Each output's name, with the line and column of its key.
type Places = Vec<(String, (usize, usize))>;

/// The line and column of each output of the input, by name; a key given
/// twice is an error at its second place.
fn places(name: &str, input: &str) -> Result<Places, Vec<Diagnostic>> {
    let file: Arc<str> = Arc::from(name);
    match yaml::parse(&file, input) {
        Ok(node) => Ok(node
            .as_map()
            .map(|m| {
                m.iter()
                    .map(|(k, e)| (k.clone(), (e.key_origin.line as usize, e.key_origin.col as usize)))
                    .collect()
            })
            .unwrap_or_default()),
        // The reader's words may quote the text: only the place is said.
        Err(e) if e.message.contains("duplicate key") => Err(input_error(
            name,
            e.origin.line as usize,
            e.origin.col as usize,
            "a key is given twice in one object",
        )),
        Err(_) => Ok(Vec::new()),
    }
}

/// An object's entries in key order.
fn sorted(m: Map<String, J>) -> Vec<(String, J)> {
    let mut v: Vec<(String, J)> = m.into_iter().collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// A value with every object's keys in order, whatever order the JSON
/// reader keeps.
fn sorted_value(v: J) -> J {
    match v {
        J::Object(m) => J::Object(sorted(m).into_iter().map(|(k, v)| (k, sorted_value(v))).collect()),
        J::Array(items) => J::Array(items.into_iter().map(sorted_value).collect()),
        other => other,
    }
}

/// An error if a folder on the way from the root to `rel` is not a real
/// folder (a symbolic link could send the write out of the repository).
fn folders_are_real(root: &Path, rel: &str, origin: &Origin) -> Result<(), Diagnostic> {
    let mut dir = root.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for (i, part) in parts[..parts.len().saturating_sub(1)].iter().enumerate() {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(m) => {
                return Err(refusal(
                    origin.clone(),
                    format!(
                        "`{}` is {}, not a folder: strata writes the contract only inside the repository",
                        parts[..=i].join("/"),
                        world::entry_kind(m.file_type())
                    ),
                    "put a real folder there, or name another path in `contract:`",
                ));
            }
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

/// The bytes of the file at `path` if there is one that may be replaced;
/// an error if it is not a regular file, or not a contract (and not
/// `force`).
fn writable(path: &Path, rel: &str, force: bool, origin: &Origin) -> Result<Option<Vec<u8>>, Diagnostic> {
    let refuse = |what: String, help: &str| refusal(origin.clone(), format!("{rel}: {what}"), help);
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refuse(e.to_string(), "check the file's permissions")),
    };
    if !meta.file_type().is_file() {
        return Err(refuse(
            format!("is {}, not a contract file", world::entry_kind(meta.file_type())),
            "strata writes the contract only as a regular file inside the repository; remove what is there",
        ));
    }
    let bytes = world::disk::read_regular(path, yaml::MAX_INPUT_BYTES as u64)
        .map_err(|e| refuse(e.to_string(), "check the file's permissions"))?;
    if !force && !is_contract(rel, &bytes) {
        return Err(refuse(
            "holds something that is not a substrate contract; it is left as it is".into(),
            "check `contract:` in the environment, or pass --force to replace the file",
        ));
    }
    Ok(Some(bytes))
}

/// Whether a file's bytes read as a contract: the tofu form, or a mapping
/// with a `substrate` output.
fn is_contract(rel: &str, bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    yaml::parse(&Arc::from(rel), text).is_ok_and(|node| super::contract::looks_like_contract(&node))
}

/// Writes the contract: every folder on the way made a real folder (a
/// link in its place is refused), then the file replaced or written at
/// once.
fn write(root: &Path, rel: &str, path: &Path, exists: bool, bytes: &[u8]) -> std::io::Result<()> {
    let mut dir = PathBuf::from(root);
    let folders: Vec<&str> = rel.split('/').collect();
    for f in &folders[..folders.len().saturating_sub(1)] {
        dir.push(f);
        world::real_dir(&dir).map_err(|e| std::io::Error::other(e.to_string()))?;
    }
    if exists {
        world::disk::replace_file(path, bytes)
    } else {
        world::disk::write_atomic(path, bytes)
    }
}
