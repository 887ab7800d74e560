//! Stage 4, inflate: every component's chart rendered with the real `helm`
//! binary and exactly the merged values, offline, from the chart store
//! (see [`crate::charts`]). The objects a chart renders are what the rules,
//! schema validation and `strata diff` judge; components whose chart cannot
//! be rendered here are judged through chart profiles, and strata says which.
//!
//! Each release is `helm template <component> <chart> --namespace <ns>
//! --kube-version <kubernetes_version> --include-crds --skip-tests -f -`, with
//! the merged values (nulls kept) on standard input. A chart whose templates
//! ask `.Capabilities.APIVersions` is rendered after the others, with the
//! API versions of every custom resource definition the environment's other
//! charts and manifests ship, and of those the cluster has before any
//! component runs (`crds_provided:`). Results are cached (see [`cache`]).

pub mod cache;
pub mod output;
pub mod probe;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use rayon::prelude::*;
use serde_json::Value as J;

use crate::charts::{self, Ready, State, Unavailable};
use crate::diag::{Diagnostic, Sources, codes};
use crate::helm;
use crate::load::Platform;
use crate::profiles::version_origin;
use crate::render::{EnvRender, Object, Source};
use crate::world::World;
use crate::yaml::Origin;

pub use crate::load::project::InflateMode as Mode;

/// What the command line resolved for inflation.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// `--inflate`, overriding `inflate:` of strata.yaml.
    pub mode: Option<Mode>,
    /// The helm binary found (`STRATA_HELM`, else `helm` on the PATH).
    pub helm: Option<PathBuf>,
    /// The working tree's root on disk, whose `.strata/` holds the store and
    /// caches; `None` inflates nothing (an in-memory world without a store).
    pub state_root: Option<PathBuf>,
    /// The user's helm configuration folder, for registry credentials on pull.
    pub user_helm_config: Option<PathBuf>,
    /// `--no-cache`: render every release with helm, reading and writing
    /// nothing of the render cache.
    pub no_cache: bool,
    /// How long helm may run (`STRATA_HELM_TIMEOUT`, `STRATA_HELM_DEADLINE`).
    pub helm_limits: helm::Limits,
    /// The renderer program found (`STRATA_HELM_RENDERER`, else
    /// `strata-helm-renderer` on the PATH); preferred to the binary.
    pub renderer: Option<PathBuf>,
    /// Why there is no renderer, for `--verbose`.
    pub renderer_absent: Option<String>,
    /// What rendered the charts of each compile, for `--verbose`.
    pub used: Used,
}

/// Which program rendered the charts of each compile of a command, in
/// order: [`helm::Engine::describe`] at the end of each.
#[derive(Clone, Debug, Default)]
pub struct Used(Arc<std::sync::Mutex<Vec<String>>>);

impl Used {
    /// Takes what was recorded so far.
    pub fn take(&self) -> Vec<String> {
        self.0.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default()
    }
    fn push(&self, line: String) {
        if let Ok(mut v) = self.0.lock() {
            v.push(line);
        }
    }
}

/// What one release renders, and the objects that differ between two renders.
type Release = (Vec<Object>, Vec<String>);

/// One release to render.
struct Job<'a> {
    component: &'a str,
    namespace: &'a str,
    ready: &'a Ready,
    values: Vec<u8>,
    /// For charts that ask for API versions: the environment's CRD versions.
    api_versions: Option<Vec<String>>,
    origin: Origin,
}

/// `1.35` → `v1.35.0`, as helm's `--kube-version` reads it.
fn kube_version(v: &str) -> String {
    let v = v.trim_start_matches('v');
    if v.matches('.').count() == 1 {
        format!("v{v}.0")
    } else {
        format!("v{v}")
    }
}

/// Renders the charts of every environment into [`EnvRender::charts`].
/// `Err` holds input errors (a chart that fails to render, a tampered
/// archive, helm required but missing); `Ok` holds notes and warnings.
pub fn inflate(
    world: &dyn World,
    sources: &Sources,
    platform: &Platform,
    renders: &mut [EnvRender],
    settings: &Settings,
) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    let (mut inflater, mut notes) = prepare(world, sources, platform, settings)?;
    let mut errors = Vec::new();
    for r in renders.iter_mut() {
        match inflater.env(r) {
            Ok(n) => notes.extend(n),
            Err(e) => errors.extend(e),
        }
    }
    inflater.finish();
    if errors.is_empty() { Ok(notes) } else { Err(errors) }
}

/// What renders the charts of one compile, environment by environment: the
/// store checked against the lock, and helm, when there is one.
pub struct Inflater<'p> {
    platform: &'p Platform,
    resolved: Option<charts::Resolved>,
    engine: Option<helm::Engine>,
    cache: Option<cache::Cache>,
    used: Used,
    kube: String,
    /// Components already reported as unstable, once per run.
    unstable_seen: BTreeSet<String>,
    /// The OCI manifest digest strata.lock pins each OCI chart to, by
    /// component (see [`EnvRender::pins`]).
    pins: BTreeMap<String, String>,
}

/// Checks the store against the lock and finds helm. `Err` holds input
/// errors; `Ok` holds the notes on what is judged through profiles.
pub fn prepare<'p>(
    world: &dyn World,
    sources: &Sources,
    platform: &'p Platform,
    settings: &Settings,
) -> Result<(Inflater<'p>, Vec<Diagnostic>), Vec<Diagnostic>> {
    // The lock is read in every mode: what it pins an OCI chart to
    // reaches the tree whether or not helm renders.
    let lock = charts::lock::read(world, sources)?.unwrap_or_default();
    let pins = oci_pins(platform, &lock);
    let mut unused_mirrors = charts::mirrors::unused(world, platform, &lock);
    let nothing = Inflater {
        platform,
        resolved: None,
        engine: None,
        cache: None,
        used: Used::default(),
        kube: String::new(),
        unstable_seen: BTreeSet::new(),
        pins: pins.clone(),
    };
    let mode = settings.mode.unwrap_or(platform.project.inflate);
    let here = platform
        .project
        .inflate_origin
        .clone()
        .unwrap_or_else(|| Origin::file_start(crate::load::project::FILE));
    if mode == Mode::Off {
        unused_mirrors.push(
            note(
                here,
                "charts are not rendered (`inflate: off`): the rules judge every component through its chart profile, where one describes it",
            )
            .with_help("set `inflate: auto` (the default) to render charts with helm from the store"),
        );
        return Ok((nothing, unused_mirrors));
    }
    let Some(root) = &settings.state_root else {
        return Ok((nothing, unused_mirrors));
    };
    let state = State::new(root, lock);
    let resolved = charts::resolve(world, platform, &state);
    // A finding may point at a default in the values.yaml of a chart in
    // the repository: its text is shown like any input's.
    for (name, info) in chart_infos(&resolved) {
        if let crate::load::Chart::Local { path } = &platform.components[name].chart {
            let file: Arc<str> = Arc::from(crate::world::join(path, "values.yaml"));
            sources.insert(&file, &info.values_text);
        }
    }

    let errors = tampered(platform, &resolved);
    if !errors.is_empty() {
        return Err(errors);
    }

    let engine = find_helm(&state, settings, mode, &here)?;

    let mut notes = judged_through_profiles(platform, &resolved, engine.is_some(), mode, &here)?;
    notes.append(&mut unused_mirrors);
    let cache = engine
        .as_ref()
        .map(|_| cache::Cache::new(state.dir.join("cache").join("inflate")).reused(!settings.no_cache));
    Ok((
        Inflater {
            platform,
            resolved: Some(resolved),
            engine,
            cache,
            used: settings.used.clone(),
            kube: kube_version(&platform.project.kubernetes_version),
            unstable_seen: BTreeSet::new(),
            pins,
        },
        notes,
    ))
}

/// What strata read of each component's chart, rendered or not.
fn chart_infos(resolved: &charts::Resolved) -> impl Iterator<Item = (&String, &Arc<charts::ChartInfo>)> {
    let ready = resolved
        .charts
        .iter()
        .filter_map(|(n, r)| r.as_ref().ok().map(|r| (n, &r.info)));
    ready.chain(resolved.partial.iter())
}

/// The manifest digest of every component's OCI chart that the lock pins
/// with one.
fn oci_pins(platform: &Platform, lock: &charts::Lock) -> BTreeMap<String, String> {
    platform
        .components
        .values()
        .filter(|c| matches!(c.chart, crate::load::Chart::Remote { oci: true, .. }))
        .filter_map(|c| {
            let (repo, name, version) = charts::remote_key(&c.chart)?;
            let digest = lock.find(&repo, &name, &version)?.manifest_digest.clone()?;
            Some((c.name.clone(), digest))
        })
        .collect()
}

/// What the store or the lock holds that must not be judged, an error in
/// every mode: an archive that is not the pinned bytes, one that holds
/// another chart than its entry names, a name that cannot go to helm.
fn tampered(platform: &Platform, resolved: &charts::Resolved) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    for (name, r) in &resolved.charts {
        let c = &platform.components[name];
        let d = match r {
            Err(Unavailable::Tampered { expected, found }) => Diagnostic::error(
                codes::CHART_STORE,
                version_origin(c),
                format!(
                    "the stored archive of chart {} (component {name}) does not match strata.lock: the lock pins {expected}, the store holds {found}",
                    c.chart.name()
                ),
            )
            .with_label("this chart")
            .with_help("remove .strata/charts and run `strata charts pull` to fetch the pinned archive again"),
            Err(Unavailable::Mismatched {
                pinned,
                found,
                digest,
                lock,
            }) => {
                let mut d = Diagnostic::error(
                    codes::CHART_IDENTITY,
                    lock.clone().unwrap_or_else(|| version_origin(c)),
                    format!(
                        "strata.lock pins {pinned} (component {name}) to the archive {digest}, and that archive is chart {found}"
                    ),
                )
                .with_label("this entry")
                .with_help("restore strata.lock from version control (`git checkout strata.lock`), or run `strata charts pull --update` and review the change to the lock");
                if lock.is_some() {
                    let at = version_origin(c);
                    d = d.with_note(format!("component {name} pins it at {}:{}", at.file, at.line));
                }
                d
            }
            Err(Unavailable::Unsafe(why)) => Diagnostic::error(
                codes::HELM_ARGUMENT,
                version_origin(c),
                format!("chart of component {name}: {why}"),
            )
            .with_label("this chart")
            .with_help("name the chart and its version as its repository does: a chart name never starts with `-` or `.`, and a version is a SemVer version"),
            _ => continue,
        };
        errors.push(d);
    }
    errors
}

/// What renders the charts (the renderer, the helm binary, or both), in a
/// store whose folders are ready; `None` where there is neither (an error
/// only with `inflate: helm`).
fn find_helm(
    state: &State,
    settings: &Settings,
    mode: Mode,
    here: &Origin,
) -> Result<Option<helm::Engine>, Vec<Diagnostic>> {
    if settings.helm.is_none() && settings.renderer.is_none() {
        return Ok(None);
    }
    // The store's own folders, created only when helm will run; every step
    // is checked to be a real folder, not a link out of the repository.
    let prepared = ["", "helm", "charts", "cache/inflate", "cache/local"]
        .iter()
        .try_for_each(|sub| crate::world::ensure_state_dir(&state.dir, std::path::Path::new(sub)).map(|_| ()));
    match prepared {
        Err(e) if mode == Mode::Helm => {
            return Err(vec![
                Diagnostic::error(
                    codes::IO,
                    here.clone(),
                    format!("cannot use {}: {e}", state.dir.display()),
                )
                .with_help("strata keeps its chart store and caches there; remove what is in the way"),
            ]);
        }
        Err(_) => return Ok(None),
        Ok(()) => {}
    }
    let home = state.dir.join("helm");
    let helm = match settings
        .helm
        .as_ref()
        .map(|path| helm::Helm::new(path, &home, settings.user_helm_config.clone()))
    {
        None => None,
        Some(Ok(h)) => Some(h.with_limits(settings.helm_limits)),
        // Without the binary, the renderer alone renders.
        Some(Err(e)) if mode == Mode::Helm && settings.renderer.is_none() => {
            return Err(vec![
                Diagnostic::error(codes::CHART_RENDER, here.clone(), format!("helm cannot be used: {e}"))
                    .with_help("install helm v4 and put it on the PATH, or set STRATA_HELM to its path"),
            ]);
        }
        Some(Err(_)) => None,
    };
    let (renderer, absent) = match &settings.renderer {
        None => (None, settings.renderer_absent.clone()),
        Some(path) => match helm::Renderer::new(path, &home).map(|r| r.with_limits(settings.helm_limits)) {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(format!("{} cannot be used: {e}", path.display()))),
        },
    };
    Ok(helm::Engine::new(renderer, helm, absent))
}

/// Which components are judged through profiles, and why, as one note;
/// with `inflate: helm`, each is an error instead.
fn judged_through_profiles(
    platform: &Platform,
    resolved: &charts::Resolved,
    helm: bool,
    mode: Mode,
    here: &Origin,
) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    // Which components are judged through profiles, and why.
    let mut not_inflated: BTreeMap<String, Vec<String>> = BTreeMap::new();
    if !helm {
        if mode == Mode::Helm {
            return Err(vec![
                Diagnostic::error(
                    codes::CHART_RENDER,
                    here.clone(),
                    "`inflate: helm` needs the helm binary, and there is none on the PATH",
                )
                .with_help("install helm v4 (e.g. `go install helm.sh/helm/v4/cmd/helm@v4.3.2`) or set STRATA_HELM; `--inflate auto` judges charts through profiles instead"),
            ]);
        }
        let charted: Vec<String> = platform
            .components
            .values()
            .filter(|c| c.chart != crate::load::Chart::None)
            .map(|c| c.name.clone())
            .collect();
        // A platform of chartless components has nothing to judge this way.
        if !charted.is_empty() {
            not_inflated.insert("helm is not on the PATH".into(), charted);
        }
    } else {
        for (name, r) in &resolved.charts {
            if let Err(u) = r {
                if mode == Mode::Helm {
                    let c = &platform.components[name];
                    errors.push(
                        Diagnostic::error(
                            codes::CHART_STORE,
                            version_origin(c),
                            format!("chart {} of component {name} cannot be rendered: {}", c.chart.name(), u.reason()),
                        )
                        .with_label("this chart")
                        .with_help("run `strata charts pull` (it fetches the pinned charts into .strata/charts and writes strata.lock), or use `--inflate auto`"),
                    );
                } else {
                    not_inflated.entry(u.reason()).or_default().push(name.clone());
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut notes = Vec::new();
    if !not_inflated.is_empty() {
        let parts: Vec<String> = not_inflated
            .iter()
            .map(|(why, names)| {
                let listed = crate::load::decode::list_names(names.iter().map(String::as_str), ", ");
                format!("{listed} ({why})")
            })
            .collect();
        let mut d = note(
            here.clone(),
            format!(
                "charts not rendered: {}; the rules judge each through its chart profile, where one describes it",
                parts.join("; ")
            ),
        );
        d.code = codes::PROFILE_JUDGED;
        d = d.with_help(if !helm {
            "install helm v4 and run `strata charts pull` so that strata renders the charts and checks what will run"
        } else {
            "run `strata charts pull` to fetch the pinned charts into .strata/charts and write strata.lock"
        });
        notes.push(d);
    }
    Ok(notes)
}

impl Inflater<'_> {
    /// Renders the charts of one environment into [`EnvRender::charts`].
    pub fn env(&mut self, r: &mut EnvRender) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
        let platform = self.platform;
        for name in r.merged.keys() {
            if let Some(d) = self.pins.get(name) {
                r.pins.insert(name.clone(), d.clone());
            }
        }
        let Some(resolved) = &self.resolved else {
            return Ok(Vec::new());
        };
        // What the store has of each chart serves the profiles too (their
        // defaults come from the chart's own values.yaml), with or without helm.
        for (name, ready) in &resolved.charts {
            if let Ok(ready) = ready {
                r.chart_info.insert(name.clone(), Arc::clone(&ready.info));
            }
        }
        for (name, info) in &resolved.partial {
            r.chart_info.entry(name.clone()).or_insert_with(|| Arc::clone(info));
        }
        let (Some(engine), Some(cache)) = (&self.engine, &self.cache) else {
            return Ok(Vec::new());
        };
        let ready: BTreeMap<&str, &Ready> = resolved
            .charts
            .iter()
            .filter_map(|(n, r)| r.as_ref().ok().map(|r| (n.as_str(), r)))
            .collect();
        // Phase one: charts that do not ask for API versions; phase two: those
        // that do, given every CRD the environment ships by then.
        let mut errors = Vec::new();
        let mut unstable: Vec<(String, Vec<String>)> = Vec::new();
        for phase in [false, true] {
            let api_versions = if phase {
                let (versions, refused) = env_api_versions(r, &platform.project.crds_provided);
                if !refused.is_empty() {
                    errors.extend(refused);
                    break;
                }
                Some(versions)
            } else {
                None
            };
            let jobs: Vec<Job<'_>> = r
                .merged
                .iter()
                .filter_map(|(name, merged)| {
                    let ready = *ready.get(name.as_str())?;
                    (ready.info.any_uses_api_versions() == phase).then(|| {
                        let c = &platform.components[name];
                        Job {
                            component: &c.name,
                            namespace: &c.namespace,
                            ready,
                            values: serde_json::to_vec(&merged.values.to_json()).unwrap_or_default(),
                            api_versions: api_versions.clone(),
                            origin: version_origin(c),
                        }
                    })
                })
                .collect();
            for (job, done) in jobs.iter().zip(self.render_jobs(engine, cache, &jobs)) {
                match done {
                    Ok((objects, differ)) => {
                        r.charts.insert(job.component.to_owned(), objects);
                        if !differ.is_empty() {
                            unstable.push((job.component.to_owned(), differ));
                        }
                    }
                    Err(message) => errors.push(helm_error(job, &r.env, &message)),
                }
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        // A hydrated component cannot be unstable at all: E024 says so.
        let delivery = crate::render::hydrate::deliveries(platform, &platform.environments[&r.env]);
        let mut notes = Vec::new();
        for (component, differ) in unstable {
            let hydrated = delivery.get(&component) == Some(&crate::render::hydrate::Delivery::Hydrated);
            if !hydrated && self.unstable_seen.insert(component.clone()) {
                notes.push(unstable_warning(
                    &platform.components[&component],
                    &ready[component.as_str()].info,
                    &differ,
                    &r.env,
                ));
            }
            r.unstable.insert(component, differ);
        }
        Ok(notes)
    }

    /// Renders each job, in parallel; releases with the same key (the same
    /// values in several environments, or twice in one) are rendered once.
    fn render_jobs(
        &self,
        runner: &dyn helm::Runner,
        cache: &cache::Cache,
        jobs: &[Job<'_>],
    ) -> Vec<Result<Release, String>> {
        let kube = &self.kube;
        let identity = runner.identity();
        let keys: Vec<String> = jobs.iter().map(|j| job_key(&identity, kube, j)).collect();
        let mut unique: BTreeMap<&str, &Job<'_>> = BTreeMap::new();
        for (k, j) in keys.iter().zip(jobs) {
            unique.entry(k).or_insert(j);
        }
        let unique: Vec<(&str, &Job<'_>)> = unique.into_iter().collect();
        let done: BTreeMap<&str, Result<Release, String>> = unique
            .par_iter()
            .map(|(key, job)| (*key, render_job(runner, cache, kube, key, job)))
            .collect();
        keys.iter().map(|k| done[k.as_str()].clone()).collect()
    }

    /// Keeps the render cache within its bound, records what rendered the
    /// charts, and stops the renderer.
    pub fn finish(self) {
        if let Some(cache) = &self.cache {
            cache.bound();
        }
        if let Some(engine) = &self.engine {
            self.used.push(engine.describe());
        }
    }
}

/// Renders a component's chart again with other values, as this compile
/// renders it (the same program, chart and API versions), bypassing the
/// cache: for finding which value decides a rendered field.
pub trait Rerender: Sync {
    /// The objects the chart renders with `values`; `None` when it cannot
    /// be rendered here, or refuses them.
    fn rerender(&self, r: &EnvRender, component: &str, values: &J) -> Option<Vec<J>>;
}

impl Rerender for Inflater<'_> {
    fn rerender(&self, r: &EnvRender, component: &str, values: &J) -> Option<Vec<J>> {
        let engine = self.engine.as_ref()?;
        let ready = self.resolved.as_ref()?.charts.get(component)?.as_ref().ok()?;
        let c = self.platform.components.get(component)?;
        let api_versions = ready
            .info
            .any_uses_api_versions()
            .then(|| env_api_versions(r, &self.platform.project.crds_provided).0);
        let values = serde_json::to_vec(values).ok()?;
        let template = helm::Template {
            release: &c.name,
            chart: &ready.path,
            namespace: &c.namespace,
            kube_version: &self.kube,
            api_versions: api_versions.as_deref(),
            values: &values,
        };
        let text = helm::Runner::template(engine, &template).ok()?;
        let rendered = output::parse(&text).ok()?;
        Some(rendered.into_iter().map(|o| o.value).collect())
    }
}

/// A chart that renders differently each time: Argo CD would show it
/// OutOfSync forever, and every diff would change it.
fn unstable_warning(c: &crate::load::Component, info: &charts::ChartInfo, differ: &[String], env: &str) -> Diagnostic {
    let why: Vec<String> = info
        .all_unstable()
        .iter()
        .map(|(t, f)| format!("{t} calls {f}"))
        .collect();
    Diagnostic::warning(
        codes::CHART_UNSTABLE,
        version_origin(c),
        format!(
            "chart {} of component {} renders differently each time: {}; Argo CD would show them OutOfSync forever, and every diff changes them",
            c.chart.name(),
            c.name,
            differ.join(", ")
        ),
    )
    .with_label("this chart")
    .with_note(why.join("; "))
    .with_help("give the chart fixed values for what it generates (an existing Secret or certificate), or have cert-manager issue it")
    .in_env(env)
}

fn note(origin: Origin, message: impl Into<String>) -> Diagnostic {
    let mut d = Diagnostic::warning(codes::PROFILE_JUDGED, origin, message);
    d.severity = crate::diag::Severity::Note;
    d
}

/// The API versions of the custom resources an environment's charts (so
/// far) and manifests define: `group/version` and `group/version/Kind`;
/// and an error for each that is no Kubernetes name, which helm is never
/// given (its `--api-versions` splits values at commas, so a version
/// `v1,policy/v9` would make every chart see an API no cluster serves).
/// The cluster's own, `provided` (`crds_provided:`), are there too: an API
/// version as written, a group in each version the environment's objects
/// use of it (a chart asks for a version: Helm's `APIVersions.Has` looks
/// for the exact `group/version` or `group/version/Kind`).
fn env_api_versions(r: &EnvRender, provided: &[(String, Origin)]) -> (Vec<String>, Vec<Diagnostic>) {
    let mut out = BTreeSet::new();
    let mut refused = Vec::new();
    for (entry, _) in provided {
        let parts: Vec<&str> = entry.splitn(3, '/').collect();
        if parts.len() >= 2 {
            out.insert(format!("{}/{}", parts[0], parts[1]));
        }
        if parts.len() == 3 {
            out.insert(entry.clone());
        }
    }
    let provided_group = |g: &str| provided.iter().any(|(e, _)| e.split('/').next() == Some(g));
    let objects = || r.charts.values().flatten().chain(r.workload_objects());
    for o in objects() {
        let (api_version, kind) = (o.api_version(), o.kind());
        if let Some((group, _)) = api_version.split_once('/')
            && provided_group(group)
            && crate::load::names::check_names(api_version, kind).is_ok()
        {
            out.insert(api_version.to_owned());
            out.insert(format!("{api_version}/{kind}"));
        }
    }
    for o in objects().filter(|o| o.kind() == "CustomResourceDefinition") {
        let spec = &o.value["spec"];
        let (Some(group), Some(kind)) = (spec["group"].as_str(), spec["names"]["kind"].as_str()) else {
            continue;
        };
        for v in spec["versions"].as_array().into_iter().flatten() {
            if v["served"].as_bool() == Some(false) {
                continue;
            }
            let Some(name) = v["name"].as_str() else { continue };
            let api_version = format!("{group}/{name}");
            match crate::load::names::check_names(&api_version, kind) {
                Ok(()) => {
                    out.insert(format!("{api_version}/{kind}"));
                    out.insert(api_version);
                }
                Err(why) => refused.push(crd_refused(o, &r.env, &why)),
            }
        }
    }
    (out.into_iter().collect(), refused)
}

fn crd_refused(o: &Object, env: &str, why: &str) -> Diagnostic {
    let name = o.value["metadata"]["name"].as_str().unwrap_or("");
    let from = match (&o.source, &o.component) {
        (Source::Chart { template }, Some(c)) => format!(" ({template} of component {c})"),
        (_, Some(c)) => format!(" (component {c})"),
        _ => String::new(),
    };
    Diagnostic::error(
        codes::HELM_ARGUMENT,
        o.origin.clone(),
        format!("CustomResourceDefinition {name}{from}: {why}; it is not given to the charts that ask for API versions"),
    )
    .with_label("this object")
    .with_help("a CRD's group is a DNS subdomain and each version a DNS-1035 label such as v1 or v1beta1; fix the CRD, or the values that render it")
    .in_env(env)
}

/// The cache key of a job: everything that decides helm's output, the
/// program that renders it first (see [`helm::runner`]).
fn job_key(identity: &str, kube: &str, job: &Job<'_>) -> String {
    let mut k = cache::Key::new();
    k.part(identity.as_bytes())
        .part(job.ready.identity.as_bytes())
        .part(job.component.as_bytes())
        .part(job.namespace.as_bytes())
        .part(kube.as_bytes())
        .part(&job.values);
    if let Some(a) = &job.api_versions {
        k.part(a.join("\n").as_bytes());
    }
    k.finish()
}

/// Renders one release, through the cache; returns its objects and the
/// objects that differ between two renders.
fn render_job(
    runner: &dyn helm::Runner,
    cache: &cache::Cache,
    kube: &str,
    key: &str,
    job: &Job<'_>,
) -> Result<Release, String> {
    let entry = match cache.get(key) {
        Some(e) => e,
        None => {
            let template = helm::Template {
                release: job.component,
                chart: &job.ready.path,
                namespace: job.namespace,
                kube_version: kube,
                api_versions: job.api_versions.as_deref(),
                values: &job.values,
            };
            let run = || runner.template(&template);
            let first = run().map_err(|e| e.to_string())?;
            // A chart that can generate values is rendered twice, and the
            // objects that differ are named.
            let unstable = if job.ready.info.all_unstable().is_empty() {
                Vec::new()
            } else {
                let second = run().map_err(|e| e.to_string())?;
                differing(&first, &second, job.namespace)
            };
            let e = cache::Entry {
                output: first,
                unstable,
            };
            // Under the key of the program that rendered it: the run may
            // have fallen back to the binary since the key was made.
            let identity = runner.identity();
            let key = job_key(&identity, kube, job);
            cache.put(&key, &e);
            e
        }
    };
    let rendered = output::parse(&entry.output)?;
    let objects = rendered
        .into_iter()
        .map(|r| {
            // A namespaced object without a namespace is given the
            // release's by the render stage, which knows every CRD's scope.
            Object {
                folder: String::new(),
                value: r.value,
                origin: job.origin.clone(),
                component: Some(job.component.to_owned()),
                source: Source::Chart { template: r.template },
                node: None,
                values: None,
            }
        })
        .collect();
    Ok((objects, entry.unstable))
}

/// `Kind/namespace/name` of the objects that differ between two outputs.
fn differing(a: &str, b: &str, namespace: &str) -> Vec<String> {
    let index = |t: &str| -> BTreeMap<String, J> {
        output::parse(t)
            .unwrap_or_default()
            .into_iter()
            .map(|r| {
                let mut v = r.value;
                crate::render::scopes::Scopes::default().default_namespace(&mut v, namespace);
                let id = format!(
                    "{}/{}{}",
                    v["kind"].as_str().unwrap_or(""),
                    v["metadata"]["namespace"]
                        .as_str()
                        .map(|n| format!("{n}/"))
                        .unwrap_or_default(),
                    v["metadata"]["name"].as_str().unwrap_or("")
                );
                (id, v)
            })
            .collect()
    };
    let (x, y) = (index(a), index(b));
    let mut out: Vec<String> = x
        .iter()
        .filter(|(k, v)| y.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect();
    out.extend(y.keys().filter(|k| !x.contains_key(*k)).cloned());
    out.sort();
    out.dedup();
    out
}

fn helm_error(job: &Job<'_>, env: &str, message: &str) -> Diagnostic {
    // The chart renderer's own failure is named as the renderer's.
    let renderer = message.starts_with(helm::sdk::NAME);
    let who = if renderer { "" } else { "helm " };
    let mut d = Diagnostic::error(
        codes::CHART_RENDER,
        job.origin.clone(),
        format!(
            "{who}cannot render chart {} for component {} in environment {env}: {}",
            job.ready.info.name,
            job.component,
            first_line(message)
        ),
    )
    .with_label("this chart")
    .in_env(env);
    let rest: Vec<&str> = message.lines().skip(1).collect();
    if !rest.is_empty() {
        d = d.with_note(rest.join("\n"));
    }
    if message.contains("STRATA_HELM_MEMORY") {
        return d.with_help(format!(
            "a chart that needs this much memory builds something huge: check the values of {} that size what its templates build; a chart that is simply large may need more (STRATA_HELM_MEMORY, in MiB)",
            job.component
        ));
    }
    if renderer {
        return d.with_help(format!(
            "the chart renderer failed, not the chart: rebuild {} from this strata's renderer/, or set STRATA_HELM_RENDERER=off to render with the helm binary",
            helm::sdk::NAME
        ));
    }
    // A run stopped by a time bound names the variable that sets it.
    if message.contains("STRATA_HELM_") {
        return d.with_help(format!(
            "a chart that renders this long loops over something large: check the values of {} that size its loops; a slow machine may need more time (STRATA_HELM_TIMEOUT, STRATA_HELM_DEADLINE, in seconds)",
            job.component
        ));
    }
    // A chart that asks the cluster's API versions may have refused what
    // the cluster has, not the values.
    if let Some(versions) = &job.api_versions {
        let given = if versions.is_empty() {
            "none".to_owned()
        } else {
            crate::load::decode::list_names(versions.iter().map(String::as_str), ", ")
        };
        d = d.with_note(format!(
            "the chart asks the cluster's API versions (`.Capabilities.APIVersions`); it was given: {given}"
        ));
        return d.with_help(format!(
            "if it asks for an API the cluster has before any component runs, list it under `crds_provided:` in strata.yaml (`group/version`, e.g. `gateway.networking.k8s.io/v1`); else set what it asks for in a values layer of {}",
            job.component
        ));
    }
    d.with_help(format!(
        "the chart refused the merged values of {}: set what it asks for in a values layer, then check with `strata explain --env {env} {} <path>`",
        job.component, job.component
    ))
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_versions() {
        assert_eq!(kube_version("1.35"), "v1.35.0");
        assert_eq!(kube_version("1.35.2"), "v1.35.2");
    }

    #[test]
    fn differing_names_changed_and_new_objects() {
        let a = "# Source: c/templates/s.yaml\napiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\ndata: {k: YQ==}\n";
        let b = "# Source: c/templates/s.yaml\napiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\ndata: {k: Yg==}\n";
        assert_eq!(differing(a, b, "x"), vec!["Secret/ns/s".to_owned()]);
        assert!(differing(a, a, "x").is_empty());
    }
}
