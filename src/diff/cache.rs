//! The diff cache, `.strata/cache/diff/`: the base revision's compile of
//! one environment, as a diff reads it, so that the next diff against the
//! same base, reaching the same components, compiles only the working
//! tree. Editing a change and running `strata diff --base main` again is
//! the loop this serves.
//!
//! An entry is keyed by everything that decides the base's compile of the
//! environment: strata's version, the base's files by git object id (two
//! commits of the same files are one base), the environment's contract as
//! the base reads it, the day (waivers expire), the components the change
//! reaches there (the base judges what the reach judges), the compile's
//! options, the helm and renderer programs that render charts, and what
//! the compile reads outside git (the chart store's archives, the schema
//! files). It holds the environment's
//! objects the diff compares (the reached components', and every CRD and
//! custom resource), their files, the merged values that trace a removed
//! line to its layer, each component's chart, and the findings but notes.
//! An environment whose objects hold a sensitive contract output is never
//! kept: nothing secret is written to disk.
//!
//! Entries are stored by the render cache's own store
//! ([`crate::inflate::cache`]): written atomically, bound to their key and
//! to a digest of their body, bounded in size, and neither read nor
//! written with `--no-cache`. The trust is the render cache's: whoever can
//! write `.strata/` can choose what the base is taken to be.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value as J, json};

use super::Finding;
use super::view::{Charts, View};
use crate::diag::Severity;
use crate::emit::layout::Files;
use crate::inflate::cache::{Cache, Entry, Key};
use crate::load::{Platform, Target};
use crate::merge::Merged;
use crate::pipeline::{Compiled, Options, Reach};
use crate::render::hydrate::Delivery;
use crate::render::{EnvRender, Object, Source};
use crate::secrets::Secrets;
use crate::world::World;
use crate::world::git::Revision;
use crate::yaml::{self, Node, Origin, Value};

const MAGIC: &str = "strata-diff-base 2";

/// One environment's base compile, as kept.
pub struct Kept {
    renders: Vec<EnvRender>,
    files: Files,
    scope: Vec<String>,
    findings: Vec<Finding>,
    charts: Charts,
    pins: super::bump::Pins,
}

impl Kept {
    /// The kept compile read as a side of the diff, with the working
    /// tree's platform (the same contracts, and so the same secrets, and
    /// the same output folder: the reach holds only if both are).
    pub fn view<'a>(&'a self, platform: &'a Platform) -> View<'a> {
        View {
            renders: &self.renders,
            files: &self.files,
            scope: &self.scope,
            findings: self.findings.clone(),
            platform,
            charts: Some(&self.charts),
        }
    }

    /// The remote chart each component pins at the base, for the chart
    /// bumps.
    pub fn pins(&self) -> &super::bump::Pins {
        &self.pins
    }
}

/// The store of kept compiles, in the working tree's `.strata/`; `None`
/// when there is no such folder to keep them in, or `--no-cache`.
pub fn store(opts: &Options) -> Option<Cache> {
    let root = opts.inflate.state_root.as_ref()?;
    if opts.inflate.no_cache {
        return None;
    }
    let dir = crate::world::ensure_state_dir(&root.join(".strata"), Path::new("cache/diff")).ok()?;
    Some(Cache::new(dir))
}

/// A program's identity for the key: its path, size and modification
/// time (a new helm is another file, or the same file written again).
fn program(k: &mut Key, path: Option<&Path>) {
    let Some(p) = path else {
        k.part(b"-");
        return;
    };
    k.part(p.as_os_str().as_encoded_bytes());
    if let Ok(m) = std::fs::metadata(p) {
        k.part(&m.len().to_le_bytes());
        if let Ok(t) = m.modified().and_then(|t| {
            t.duration_since(std::time::UNIX_EPOCH)
                .map_err(|e| std::io::Error::other(e.to_string()))
        }) {
            k.part(&t.as_nanos().to_le_bytes());
        }
    }
}

/// The most files of the schema locations fingerprinted for a key; a
/// location with more keeps nothing (its fingerprint would cost more than
/// the compile it saves).
const MAX_SCHEMA_FILES: usize = 100_000;

/// What decides the base's compile of every environment, beside the
/// environment's contract and what the change reaches there: the base's
/// files (by git object id, so two commits of the same files are one base),
/// the day (waivers expire), the compile's options, the programs that
/// render charts, and what the compile reads outside git (the chart
/// archives in the store, the schema files). Worked out once a diff.
pub struct Base(String);

impl Base {
    /// `None` when a schema location is too large to fingerprint.
    pub fn new(rev: &Revision, platform: &Platform, opts: &Options) -> Option<Base> {
        let mut k = Key::new();
        k.part(MAGIC.as_bytes()).part(env!("CARGO_PKG_VERSION").as_bytes());
        k.part(rev.inputs.as_bytes()).part(rev.world.today().as_bytes());
        for part in [
            format!("{:?}", opts.target),
            format!("{:?}", opts.schemas),
            format!("{:?}", opts.layout),
            format!("{:?}", opts.inflate.mode),
        ] {
            k.part(part.as_bytes());
        }
        program(&mut k, opts.inflate.helm.as_deref());
        program(&mut k, opts.inflate.renderer.as_deref());
        if let Some(root) = &opts.inflate.state_root {
            archives(&mut k, &root.join(crate::charts::STATE_DIR).join("charts"));
            let mut locations = platform.project.schemas.clone().unwrap_or_default();
            locations.extend(opts.schemas.locations.iter().cloned());
            locations.push(crate::validate::pull::DIR.to_owned());
            for l in locations {
                k.part(l.as_bytes());
                schema_files(&mut k, &root.join(&l))?;
            }
        }
        Some(Base(k.finish()))
    }

    /// The key of `env` compiled at the base with `contract`, reaching
    /// `only` there (`None`: every component).
    pub fn key(&self, env: &str, contract: &[u8], only: Option<&BTreeSet<String>>) -> String {
        let mut k = Key::new();
        k.part(self.0.as_bytes()).part(env.as_bytes()).part(contract);
        match only {
            None => {
                k.part(b"*");
            }
            Some(set) => {
                for c in set {
                    k.part(c.as_bytes());
                }
                k.part(b"/");
            }
        }
        k.finish()
    }
}

/// The archives of the chart store, by name (each is named by the digest
/// of its bytes) and size: the base renders a chart only if the store
/// holds it.
fn archives(k: &mut Key, dir: &Path) {
    let mut names: Vec<(String, u64)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| {
            let len = e.metadata().map_or(0, |m| m.len());
            (e.file_name().to_string_lossy().into_owned(), len)
        })
        .collect();
    names.sort();
    for (name, len) in names {
        k.part(name.as_bytes()).part(&len.to_le_bytes());
    }
}

/// Every file of a schema location (a folder or one file), by path, size
/// and modification time, links followed as the validator follows them;
/// nothing for a location that does not exist. `None`: over
/// [`MAX_SCHEMA_FILES`].
fn schema_files(k: &mut Key, location: &Path) -> Option<()> {
    let mut files = Vec::new();
    for e in walkdir::WalkDir::new(location).follow_links(true).sort_by_file_name() {
        let Ok(e) = e else { continue };
        if !e.file_type().is_file() {
            continue;
        }
        if files.len() == MAX_SCHEMA_FILES {
            return None;
        }
        let m = e.metadata().ok();
        let modified = m
            .as_ref()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        files.push((
            e.path()
                .strip_prefix(location)
                .unwrap_or(e.path())
                .to_string_lossy()
                .into_owned(),
            m.map_or(0, |m| m.len()),
            modified,
        ));
    }
    for (path, len, modified) in files {
        k.part(path.as_bytes())
            .part(&len.to_le_bytes())
            .part(&modified.to_le_bytes());
    }
    Some(())
}

/// The kept compile for `key`, if there is a sound one.
pub fn get(store: &Cache, key: &str) -> Option<Kept> {
    let entry = store.get(key)?;
    decode(&serde_json::from_str(&entry.output).ok()?)
}

/// Keeps the base's compile of `env`, unless its objects hold a secret.
pub fn put(store: &Cache, key: &str, base: &Compiled, env: &str) {
    let Some(body) = encode(base, env) else { return };
    store.put(
        key,
        &Entry {
            output: body.to_string(),
            unstable: Vec::new(),
        },
    );
}

/// Names every file once in an entry: origins refer to them by number.
#[derive(Default)]
struct Names {
    list: Vec<String>,
    index: BTreeMap<String, usize>,
}

impl Names {
    fn origin(&mut self, o: &Origin) -> J {
        let n = match self.index.get(&*o.file) {
            Some(n) => *n,
            None => {
                self.list.push(o.file.to_string());
                self.index.insert(o.file.to_string(), self.list.len() - 1);
                self.list.len() - 1
            }
        };
        json!([n, o.line, o.col, o.len])
    }
}

fn encode(base: &Compiled, env: &str) -> Option<J> {
    let r = base.renders.iter().find(|r| r.env == env)?;
    let secrets = &base.platform.secrets;
    let mut names = Names::default();
    let objects = |list: &[Object], names: &mut Names| -> Option<Vec<J>> {
        list.iter().map(|o| object(o, names, secrets)).collect()
    };
    let targets: BTreeMap<&str, Vec<J>> = r
        .targets
        .iter()
        .map(|(t, list)| Some((t.name(), objects(list, &mut names)?)))
        .collect::<Option<_>>()?;
    let charts: BTreeMap<&str, Vec<J>> = r
        .charts
        .iter()
        .map(|(c, list)| Some((c.as_str(), objects(list, &mut names)?)))
        .collect::<Option<_>>()?;
    let substrate = objects(&r.substrate, &mut names)?;
    let merged: BTreeMap<&str, J> = r
        .merged
        .iter()
        .map(|(c, m)| {
            Some((
                c.as_str(),
                json!({"layers": m.layers, "values": node(&m.values, &mut names, secrets)?}),
            ))
        })
        .collect::<Option<_>>()?;
    let prefix = format!("{env}/");
    let files: BTreeMap<&String, &String> = base.files.iter().filter(|(p, _)| p.starts_with(&prefix)).collect();
    if files.values().any(|t| secrets.text_holds(t)) {
        return None;
    }
    let findings: Vec<J> = base
        .findings
        .iter()
        .filter(|d| d.severity != Severity::Note)
        .filter(|d| d.env.as_deref().is_none_or(|e| e == env))
        .map(|d| {
            json!({"code": d.code, "severity": d.severity, "env": d.env, "message": d.message,
                "origin": names.origin(&d.origin)})
        })
        .collect();
    let delivery: BTreeMap<&String, &str> = r
        .plan
        .delivery
        .iter()
        .map(|(c, d)| {
            let d = match d {
                Delivery::Release => "release",
                Delivery::Hydrated => "hydrated",
                Delivery::Plain => "plain",
            };
            (c, d)
        })
        .collect();
    let charts_of: BTreeMap<&String, (String, String)> = r
        .merged
        .keys()
        .filter_map(|c| Some((c, super::review::releases::chart_of(r, &base.platform, c)?)))
        .collect();
    let pins: BTreeMap<String, J> = super::bump::pins(&base.platform, env)
        .into_iter()
        .filter_map(|((_, c), chart)| match chart {
            crate::load::Chart::Remote {
                repo_url,
                name,
                version,
                oci,
            } => Some((c, json!([repo_url, name, version, oci]))),
            _ => None,
        })
        .collect();
    Some(json!({
        "env": env, "files": files, "pins": pins, "scope": base.scope, "findings": findings,
        "delivery": delivery, "charts": charts_of, "targets": targets, "chart_objects": charts,
        "substrate": substrate, "merged": merged, "names": names.list,
    }))
}

/// Whether a JSON value holds a sensitive output anywhere.
fn leaks(v: &J, secrets: &Secrets) -> bool {
    match v {
        J::String(s) => secrets.holds(s),
        J::Number(n) => secrets.is_number_secret(n),
        J::Array(a) => a.iter().any(|x| leaks(x, secrets)),
        J::Object(m) => m.iter().any(|(k, x)| secrets.holds(k) || leaks(x, secrets)),
        _ => false,
    }
}

fn object(o: &Object, names: &mut Names, secrets: &Secrets) -> Option<J> {
    let value = o.full();
    if leaks(&value, secrets) {
        return None;
    }
    let source = match &o.source {
        Source::Generated => json!(["generated"]),
        Source::Manifest => json!(["manifest"]),
        Source::Cluster => json!(["cluster"]),
        Source::Chart { template } => json!(["chart", template]),
        Source::Substrate { file } => json!(["substrate", file]),
    };
    Some(
        json!({"folder": o.folder, "value": value, "origin": names.origin(&o.origin),
        "component": o.component, "source": source}),
    )
}

/// A values node with the origin of every value and key.
fn node(n: &Node, names: &mut Names, secrets: &Secrets) -> Option<J> {
    let origin = names.origin(&n.origin);
    let v = match &n.value {
        Value::Null => json!(["n"]),
        Value::Bool(b) => json!(["b", b]),
        Value::Int(i) => json!(["i", i]),
        Value::UInt(u) => json!(["u", u]),
        Value::Float(f) => json!(["f", f]),
        Value::Str(s) => {
            if secrets.holds(s) {
                return None;
            }
            json!(["s", s])
        }
        Value::Seq(items) => J::Array(
            std::iter::once(Some(J::from("l")))
                .chain(items.iter().map(|i| node(i, names, secrets)))
                .collect::<Option<_>>()?,
        ),
        Value::Map(m) => {
            let mut out = vec![J::from("m")];
            for (k, e) in m.iter() {
                if secrets.holds(k) {
                    return None;
                }
                out.push(json!([k, names.origin(&e.key_origin), node(&e.node, names, secrets)?]));
            }
            J::Array(out)
        }
    };
    Some(json!([origin, v]))
}

/// Reads the entry back; `None` when anything in it is not as written.
fn decode(j: &J) -> Option<Kept> {
    let names: Vec<yaml::FileName> = j["names"]
        .as_array()?
        .iter()
        .map(|n| n.as_str().map(yaml::FileName::from))
        .collect::<Option<_>>()?;
    let origin = |v: &J| -> Option<Origin> {
        let a = v.as_array()?;
        let n = |i: usize| a.get(i)?.as_u64().and_then(|x| u32::try_from(x).ok());
        let file = *names.get(usize::try_from(a.first()?.as_u64()?).ok()?)?;
        Some(Origin::new(file, n(1)?, n(2)?, n(3)?))
    };
    let env = j["env"].as_str()?.to_owned();
    let objects = |v: &J| -> Option<Vec<Object>> { v.as_array()?.iter().map(|o| read_object(o, &origin)).collect() };
    let mut targets = BTreeMap::new();
    for (t, list) in j["targets"].as_object()? {
        targets.insert(Target::parse(t)?, objects(list)?);
    }
    let mut charts = BTreeMap::new();
    for (c, list) in j["chart_objects"].as_object()? {
        charts.insert(c.clone(), objects(list)?);
    }
    let mut merged = BTreeMap::new();
    for (c, m) in j["merged"].as_object()? {
        let layers = m["layers"]
            .as_array()?
            .iter()
            .map(|l| l.as_str().map(str::to_owned))
            .collect::<Option<_>>()?;
        merged.insert(
            c.clone(),
            Merged {
                values: read_node(&m["values"], &origin, 0)?,
                layers,
            },
        );
    }
    let mut plan = crate::render::plan::Plan::default();
    for (c, d) in j["delivery"].as_object()? {
        let d = match d.as_str()? {
            "release" => Delivery::Release,
            "hydrated" => Delivery::Hydrated,
            "plain" => Delivery::Plain,
            _ => return None,
        };
        plan.delivery.insert(c.clone(), d);
    }
    let render = EnvRender {
        env: env.clone(),
        merged,
        shared: Vec::new(),
        cluster_requires: Vec::new(),
        targets,
        charts,
        chart_info: BTreeMap::new(),
        notes: Vec::new(),
        unstable: BTreeMap::new(),
        pins: BTreeMap::new(),
        plan,
        bootstrap: Default::default(),
        substrate: objects(&j["substrate"])?,
        // The base's engine releases and hand-overs shape only what its
        // compile wrote, which the kept objects already are; a diff reads
        // hand-overs of the head alone.
        versions: Default::default(),
        handovers: Vec::new(),
    };
    let files = j["files"]
        .as_object()?
        .iter()
        .map(|(p, t)| Some((p.clone(), t.as_str()?.to_owned())))
        .collect::<Option<_>>()?;
    let scope = j["scope"]
        .as_array()?
        .iter()
        .map(|s| s.as_str().map(str::to_owned))
        .collect::<Option<_>>()?;
    let findings = read_findings(&j["findings"], &origin)?;
    let charts = j["charts"]
        .as_object()?
        .iter()
        .map(|(c, v)| {
            Some((
                (env.clone(), c.clone()),
                (v[0].as_str()?.to_owned(), v[1].as_str()?.to_owned()),
            ))
        })
        .collect::<Option<_>>()?;
    let pins = read_pins(&j["pins"], &env)?;
    Some(Kept {
        renders: vec![render],
        files,
        scope,
        findings,
        charts,
        pins,
    })
}

/// The findings of an entry, but notes.
fn read_findings(v: &J, origin: &dyn Fn(&J) -> Option<Origin>) -> Option<Vec<Finding>> {
    v.as_array()?
        .iter()
        .map(|f| {
            Some(Finding {
                code: f["code"].as_str()?.to_owned(),
                severity: match f["severity"].as_str()? {
                    "error" => Severity::Error,
                    "warning" => Severity::Warning,
                    _ => return None,
                },
                env: f["env"].as_str().map(str::to_owned),
                message: f["message"].as_str()?.to_owned(),
                origin: origin(&f["origin"])?,
            })
        })
        .collect()
}

/// The base's remote chart pins of `env`, by component.
fn read_pins(v: &J, env: &str) -> Option<super::bump::Pins> {
    v.as_object()?
        .iter()
        .map(|(c, v)| {
            let text = |i: usize| v.get(i)?.as_str().map(str::to_owned);
            let chart = crate::load::Chart::Remote {
                repo_url: text(0)?,
                name: text(1)?,
                version: text(2)?,
                oci: v.get(3)?.as_bool()?,
            };
            Some(((env.to_owned(), c.clone()), chart))
        })
        .collect()
}

fn read_object(o: &J, origin: &dyn Fn(&J) -> Option<Origin>) -> Option<Object> {
    let s = o["source"].as_array()?;
    let text = |i: usize| s.get(i).and_then(J::as_str).map(str::to_owned);
    let source = match s.first()?.as_str()? {
        "generated" => Source::Generated,
        "manifest" => Source::Manifest,
        "cluster" => Source::Cluster,
        "chart" => Source::Chart { template: text(1)? },
        "substrate" => Source::Substrate { file: text(1)? },
        _ => return None,
    };
    Some(Object {
        folder: o["folder"].as_str()?.to_owned(),
        value: o["value"].clone(),
        origin: origin(&o["origin"])?,
        component: o["component"].as_str().map(str::to_owned),
        source,
        node: None,
        values: None,
    })
}

/// Deepest values node read back; deeper is no entry strata wrote.
const MAX_DEPTH: usize = 256;

fn read_node(v: &J, origin: &dyn Fn(&J) -> Option<Origin>, depth: usize) -> Option<Node> {
    if depth > MAX_DEPTH {
        return None;
    }
    let a = v.as_array()?;
    let o = origin(a.first()?)?;
    let x = a.get(1)?.as_array()?;
    let value = match x.first()?.as_str()? {
        "n" => Value::Null,
        "b" => Value::Bool(x.get(1)?.as_bool()?),
        "i" => Value::Int(x.get(1)?.as_i64()?),
        "u" => Value::UInt(x.get(1)?.as_u64()?),
        "f" => Value::Float(x.get(1)?.as_f64()?),
        "s" => Value::Str(x.get(1)?.as_str()?.to_owned()),
        "l" => Value::Seq(
            x[1..]
                .iter()
                .map(|i| read_node(i, origin, depth + 1))
                .collect::<Option<_>>()?,
        ),
        "m" => {
            let mut m = yaml::Map::default();
            for e in &x[1..] {
                let e = e.as_array()?;
                m.insert(
                    e.first()?.as_str()?.to_owned(),
                    yaml::Entry {
                        key_origin: origin(e.get(1)?)?,
                        node: read_node(e.get(2)?, origin, depth + 1)?,
                    },
                );
            }
            Value::Map(Arc::new(m))
        }
        _ => return None,
    };
    Some(Node { value, origin: o })
}

/// The kept base compile of every environment `reach` compiles, or
/// `None` when one is missing. Kept compiles stand for the base only where
/// both sides hold the same environments with the same contracts (the
/// reach holds only if the contracts are the same files), so that the
/// base's secrets are the working tree's.
pub fn lookup(
    (store, base): (&Cache, &Base),
    head: &dyn World,
    rev: &Revision,
    platform: &Platform,
    reach: &Reach,
) -> Option<BTreeMap<String, Kept>> {
    let dir = &platform.project.environments;
    let names = |w: &dyn World| -> Option<Vec<String>> {
        let mut n: Vec<String> = w.list(dir).ok()?.into_iter().map(|e| e.name).collect();
        n.sort();
        Some(n)
    };
    if reach.envs.is_empty() || names(head)? != names(&rev.world)? {
        return None;
    }
    let mut kept = BTreeMap::new();
    for (env, only) in &reach.envs {
        let e = platform.environments.get(env)?;
        let contract = rev.world.read(&e.contract_path.0).ok()?;
        kept.insert(env.clone(), get(store, &base.key(env, &contract, only.as_ref()))?);
    }
    Some(kept)
}
