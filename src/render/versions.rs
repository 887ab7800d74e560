//! The Flux and Argo CD releases an environment runs, and what each accepts
//! of what strata writes. A release comes from `engines:` in strata.yaml,
//! else from the environment's engine component (its chart's `appVersion`
//! when the archive is in the store, else the release its pinned chart
//! version ships), else strata writes for the newest releases it knows.
//!
//! Each gate below names the release that brought the field and where that
//! is stated upstream. Older releases get the nearest form they accept, and
//! a diagnostic (E056) says what changed; a release older than the oldest
//! strata writes for is an error (E055).

use serde_json::{Value as J, json};

use crate::diag::{Diagnostic, Severity, codes};
use crate::load::component::{Retry, Strategy};
use crate::load::engines::EngineVersion;
use crate::load::{Chart, Component, Environment, Platform, Target};
use crate::profiles::version_origin;
use crate::yaml::Origin;

const fn v(major: u32, minor: u32) -> EngineVersion {
    EngineVersion::new(major, minor, 0)
}

/// The oldest Flux strata writes for: 2.5, whose kustomize-controller
/// (v1.5.0) brought `Kustomization.spec.deletionPolicy`
/// (fluxcd/kustomize-controller `api/v1/kustomization_types.go`), on which
/// deletion safety rests; `helm.toolkit.fluxcd.io/v2` and
/// `source.toolkit.fluxcd.io/v1` HelmRepository came with 2.3.
pub const FLUX_MIN: EngineVersion = v(2, 5);
/// The oldest Argo CD strata writes for: 2.6, whose Application CRD has
/// `syncPolicy.managedNamespaceMetadata` (argoproj/argo-cd#10672,
/// `manifests/crds/application-crd.yaml` from v2.6.0).
pub const ARGO_MIN: EngineVersion = v(2, 6);
/// The newest releases strata knows, assumed where nothing says otherwise.
pub const FLUX_NEWEST: EngineVersion = v(2, 9);
pub const ARGO_NEWEST: EngineVersion = v(3, 5);

/// A field strata writes that not every supported release accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// `source.toolkit.fluxcd.io/v1` OCIRepository: source-controller
    /// v1.6.0, Flux 2.6 (fluxcd/source-controller `api/v1/ocirepository_types.go`);
    /// before it, `v1beta2` with the same fields.
    OciRepositoryV1,
    /// HelmRelease `install.strategy` / `upgrade.strategy` `RetryOnFailure`:
    /// helm-controller v1.4.0, Flux 2.7 (fluxcd/helm-controller
    /// `api/v2/helmrelease_types.go`).
    RetryOnFailure,
    /// Application `syncPolicy.retry.refresh`: Argo CD 3.2
    /// (argoproj/argo-cd#23038, `docs/user-guide/auto_sync.md`).
    RetryRefresh,
    /// The `ServerSideDiff=true` compare option: Argo CD 2.10
    /// (`docs/user-guide/diff-strategies.md` from v2.10.0); older releases
    /// ignore the annotation.
    ServerSideDiff,
}

impl Feature {
    pub fn engine(self) -> Target {
        match self {
            Feature::OciRepositoryV1 | Feature::RetryOnFailure => Target::Flux,
            Feature::RetryRefresh | Feature::ServerSideDiff => Target::Argo,
        }
    }

    pub fn since(self) -> EngineVersion {
        match self {
            Feature::OciRepositoryV1 => v(2, 6),
            Feature::RetryOnFailure => v(2, 7),
            Feature::RetryRefresh => v(3, 2),
            Feature::ServerSideDiff => v(2, 10),
        }
    }
}

/// Where an environment's release of an engine was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// `engines:` in strata.yaml.
    Setting(Origin),
    /// The `appVersion` of the engine component's chart archive.
    AppVersion {
        component: String,
        chart: String,
        origin: Origin,
    },
    /// The release the engine component's pinned chart version ships
    /// (see [`ARGO_CD_CHART`], [`FLUX2_CHART`]): its minor release only.
    ChartVersion {
        component: String,
        chart: String,
        origin: Origin,
    },
    /// Nothing says: the newest strata knows.
    Assumed,
}

/// One engine's release in an environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Release {
    pub engine: Target,
    pub version: EngineVersion,
    pub found: Found,
}

impl Release {
    pub fn accepts(&self, f: Feature) -> bool {
        f.engine() != self.engine || self.version >= f.since()
    }

    /// `Argo CD 3.1 (argo-cd chart 8.3.0 of component argocd)`.
    pub fn describe(&self) -> String {
        let name = engine_name(self.engine);
        match &self.found {
            Found::Setting(_) => format!("{name} {} (`engines:` in strata.yaml)", self.version),
            Found::AppVersion { component, chart, .. } => {
                format!(
                    "{name} {} (the appVersion of chart {chart} of component {component})",
                    self.version
                )
            }
            Found::ChartVersion { component, chart, .. } => format!(
                "{name} {} (what chart {chart} of component {component} ships)",
                self.version.minor_text()
            ),
            Found::Assumed => format!("{name} {} (the newest strata knows)", self.version.minor_text()),
        }
    }

    /// The line that decided the release, if one did.
    pub fn origin(&self) -> Option<&Origin> {
        match &self.found {
            Found::Setting(o) | Found::AppVersion { origin: o, .. } | Found::ChartVersion { origin: o, .. } => Some(o),
            Found::Assumed => None,
        }
    }
}

pub fn engine_name(t: Target) -> &'static str {
    match t {
        Target::Flux => "Flux",
        Target::Argo => "Argo CD",
    }
}

/// The releases of both engines in one environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versions {
    pub flux: Release,
    pub argo: Release,
}

impl Default for Versions {
    fn default() -> Self {
        Versions {
            flux: Release {
                engine: Target::Flux,
                version: FLUX_NEWEST,
                found: Found::Assumed,
            },
            argo: Release {
                engine: Target::Argo,
                version: ARGO_NEWEST,
                found: Found::Assumed,
            },
        }
    }
}

impl Versions {
    pub fn of(&self, t: Target) -> &Release {
        match t {
            Target::Flux => &self.flux,
            Target::Argo => &self.argo,
        }
    }

    pub fn accepts(&self, f: Feature) -> bool {
        self.of(f.engine()).accepts(f)
    }
}

/// The first version of the argo-cd chart (argoproj/argo-helm,
/// `charts/argo-cd/Chart.yaml`) whose `appVersion` is each Argo CD minor
/// release; the chart's appVersion never goes back, so a chart version
/// ships the release of the last boundary at or below it.
pub const ARGO_CD_CHART: &[(EngineVersion, EngineVersion)] = &[
    (EngineVersion::new(4, 9, 0), v(2, 4)),
    (EngineVersion::new(5, 8, 0), v(2, 5)),
    (EngineVersion::new(5, 20, 0), v(2, 6)),
    (EngineVersion::new(5, 30, 0), v(2, 7)),
    (EngineVersion::new(5, 43, 0), v(2, 8)),
    (EngineVersion::new(5, 51, 0), v(2, 9)),
    (EngineVersion::new(5, 55, 0), v(2, 10)),
    (EngineVersion::new(6, 8, 0), v(2, 11)),
    (EngineVersion::new(7, 4, 0), v(2, 12)),
    (EngineVersion::new(7, 7, 0), v(2, 13)),
    (EngineVersion::new(7, 8, 0), v(2, 14)),
    (EngineVersion::new(8, 0, 0), v(3, 0)),
    (EngineVersion::new(8, 3, 0), v(3, 1)),
    (EngineVersion::new(9, 1, 0), v(3, 2)),
    (EngineVersion::new(9, 4, 0), v(3, 3)),
    (EngineVersion::new(9, 5, 12), v(3, 4)),
];

/// The same for the flux2 chart (fluxcd-community/helm-charts,
/// `charts/flux2/Chart.yaml`), whose `appVersion` is the Flux release.
pub const FLUX2_CHART: &[(EngineVersion, EngineVersion)] = &[
    (EngineVersion::new(2, 12, 0), v(2, 2)),
    (EngineVersion::new(2, 13, 0), v(2, 3)),
    (EngineVersion::new(2, 14, 0), v(2, 4)),
    (EngineVersion::new(2, 15, 0), v(2, 5)),
    (EngineVersion::new(2, 16, 0), v(2, 6)),
    (EngineVersion::new(2, 17, 0), v(2, 7)),
    (EngineVersion::new(2, 18, 0), v(2, 8)),
];

/// The release a chart version ships by `table`; a version below the
/// table ships one older than its first entry (reported as that one's
/// predecessor, below every minimum).
fn shipped(table: &[(EngineVersion, EngineVersion)], chart: EngineVersion) -> EngineVersion {
    match table.iter().rev().find(|(first, _)| chart >= *first) {
        Some((_, release)) => *release,
        None => {
            let oldest = table[0].1;
            v(oldest.major, oldest.minor.saturating_sub(1))
        }
    }
}

/// The environment's engine component of `engine`, by its chart.
fn engine_component<'p>(platform: &'p Platform, env: &'p Environment, engine: Target) -> Option<&'p Component> {
    let charts: &[&str] = match engine {
        Target::Flux => &["flux2", "flux"],
        Target::Argo => &["argo-cd"],
    };
    platform
        .components_in(env)
        .find(|c| !matches!(c.chart, Chart::None) && charts.contains(&c.chart.name()))
}

/// Each engine's release in an environment; `Err` for a release older
/// than strata writes for, at the line that decided it.
pub fn resolve(
    platform: &Platform,
    env: &Environment,
    info: &std::collections::BTreeMap<String, std::sync::Arc<crate::charts::ChartInfo>>,
) -> Result<Versions, Vec<Diagnostic>> {
    let pins = &platform.project.engines;
    let mut out = Versions::default();
    let mut errors = Vec::new();
    for (engine, pinned) in [(Target::Flux, &pins.flux), (Target::Argo, &pins.argo)] {
        let found = match pinned {
            Some((version, origin)) => Some((*version, Found::Setting(origin.clone()))),
            None => from_component(platform, env, engine, info),
        };
        let Some((version, found)) = found else { continue };
        let release = Release { engine, version, found };
        let min = match engine {
            Target::Flux => FLUX_MIN,
            Target::Argo => ARGO_MIN,
        };
        if platform.targets(env).contains(&engine) && release.version < min {
            errors.push(too_old(&release, min, env));
        }
        match engine {
            Target::Flux => out.flux = release,
            Target::Argo => out.argo = release,
        }
    }
    if errors.is_empty() { Ok(out) } else { Err(errors) }
}

fn from_component(
    platform: &Platform,
    env: &Environment,
    engine: Target,
    info: &std::collections::BTreeMap<String, std::sync::Arc<crate::charts::ChartInfo>>,
) -> Option<(EngineVersion, Found)> {
    let c = engine_component(platform, env, engine)?;
    let origin = version_origin(c);
    let chart = match c.chart.version() {
        Some(version) => format!("{} {version}", c.chart.name()),
        None => c.chart.name().to_owned(),
    };
    if let Some(app) = info.get(&c.name).and_then(|i| EngineVersion::parse(&i.app_version)) {
        let found = Found::AppVersion {
            component: c.name.clone(),
            chart,
            origin,
        };
        return Some((app, found));
    }
    let Chart::Remote { version, .. } = &c.chart else {
        return None;
    };
    let table = match (engine, c.chart.name()) {
        (Target::Argo, "argo-cd") => ARGO_CD_CHART,
        (Target::Flux, "flux2") => FLUX2_CHART,
        _ => return None,
    };
    let chart_version = EngineVersion::parse(version)?;
    let found = Found::ChartVersion {
        component: c.name.clone(),
        chart,
        origin,
    };
    Some((shipped(table, chart_version), found))
}

fn too_old(r: &Release, min: EngineVersion, env: &Environment) -> Diagnostic {
    let origin = r
        .origin()
        .cloned()
        .unwrap_or_else(|| Origin::file_start(crate::load::project::FILE));
    let name = engine_name(r.engine);
    Diagnostic::error(
        codes::ENGINE_VERSION,
        origin,
        format!(
            "environment {} runs {}; strata writes for {name} {} or newer",
            env.name,
            r.describe(),
            min.minor_text()
        ),
    )
    .with_label("this release")
    .with_help(format!(
        "upgrade {name} to {} or newer (docs/output.md lists what each release brings), or leave {} out of this environment's `targets`",
        min.minor_text(),
        r.engine.name()
    ))
    .in_env(&env.name)
}

/// What a HelmRelease's `install` and `upgrade` get for a component's
/// remediation, as the templates take it: `RetryOnFailure` where Flux has
/// it; before 2.7, an install is retried without limit with an uninstall
/// of the failed attempt between tries (`install.remediation.retries: -1`,
/// helm-controller's `InstallRemediation`), and an upgrade that should
/// only be retried is tried once (no remediation), since a rollback is
/// what it must not do.
pub fn flux_remediation(c: &Component, versions: &Versions) -> J {
    let retry = versions.accepts(Feature::RetryOnFailure);
    let strategy = |s: Strategy| {
        if s == Strategy::Retry && !retry {
            "once"
        } else {
            s.name()
        }
    };
    let install = match c.remediation.install {
        Strategy::Retry if !retry => "forever",
        s => strategy(s),
    };
    json!({
        "install": install,
        "upgrade": strategy(c.remediation.upgrade),
        "retries": c.remediation.retries,
    })
}

/// Argo CD's `syncPolicy.retry` as the templates take it: `refresh` only
/// where Argo CD has it. Before 3.2 a retrying sync holds the Application
/// (its automated sync skips new revisions while an operation runs:
/// argo-cd `controller/appcontroller.go`, "another operation is in
/// progress"), so a retry without a limit would hold on to a broken
/// revision for ever; the default gets [`LIMIT_WITHOUT_REFRESH`] attempts.
pub fn argo_retry(r: &Retry, versions: &Versions) -> J {
    let refresh = versions.accepts(Feature::RetryRefresh);
    let limit = if !refresh && r.limit < 0 && r.limit_origin.is_none() {
        LIMIT_WITHOUT_REFRESH
    } else {
        r.limit
    };
    json!({
        "limit": limit,
        "refresh": r.refresh && refresh,
        "duration": r.duration,
        "factor": r.factor,
        "max_duration": r.max_duration,
    })
}

/// The default retry limit where Argo CD has no `retry.refresh`: five
/// attempts, about five minutes with the default back-off.
pub const LIMIT_WITHOUT_REFRESH: i64 = 5;

/// What an environment's releases change of what strata would write:
/// notes for defaults adapted, warnings at each line a user wrote that
/// the release does not take.
pub fn adaptations(platform: &Platform, env: &Environment, versions: &Versions) -> Vec<Diagnostic> {
    let targets = platform.targets(env);
    let mut out = Vec::new();
    let chosen: Vec<&Component> = platform.components_in(env).collect();
    if targets.contains(&Target::Flux) && !versions.accepts(Feature::RetryOnFailure) {
        out.extend(flux_retry(env, &chosen, &versions.flux));
    }
    if targets.contains(&Target::Argo) {
        if !versions.accepts(Feature::RetryRefresh) {
            out.extend(argo_refresh(platform, env, &chosen, &versions.argo));
        }
        if !versions.accepts(Feature::ServerSideDiff) {
            for c in chosen.iter().filter(|c| c.server_side_diff) {
                let origin = c.config.get("diff").map_or_else(|| c.origin(), |n| n.origin.clone());
                out.push(adapted(
                    Severity::Warning,
                    origin,
                    env,
                    &versions.argo,
                    Feature::ServerSideDiff,
                    format!(
                        "`diff: server-side` of {} has no effect there; strata leaves the compare option out",
                        c.name
                    ),
                ));
            }
        }
    }
    out
}

fn flux_retry(env: &Environment, chosen: &[&Component], flux: &Release) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut defaulted = Vec::new();
    for c in chosen.iter().filter(|c| !matches!(c.chart, Chart::None)) {
        for (phase, s) in [("install", c.remediation.install), ("upgrade", c.remediation.upgrade)] {
            if s != Strategy::Retry {
                continue;
            }
            match c.config.get_path(&format!("remediation.{phase}")) {
                Some(n) => out.push(adapted(
                    Severity::Warning,
                    n.origin.clone(),
                    env,
                    flux,
                    Feature::RetryOnFailure,
                    format!(
                        "`remediation.{phase}: retry` of {} is written as {}",
                        c.name,
                        older_form(phase)
                    ),
                )),
                None => defaulted.push(format!("{} ({phase})", c.name)),
            }
        }
    }
    if !defaulted.is_empty() {
        let origin = flux
            .origin()
            .cloned()
            .unwrap_or_else(|| Origin::file_start(env.file.as_str()));
        out.push(adapted(
            Severity::Note,
            origin,
            env,
            flux,
            Feature::RetryOnFailure,
            format!(
                "an install is retried with `remediation.retries: -1` and an upgrade that would be retried is tried once: {}",
                defaulted.join(", ")
            ),
        ));
    }
    out
}

fn older_form(phase: &str) -> &'static str {
    if phase == "install" {
        "`install.remediation.retries: -1` (each failed attempt is uninstalled before the next)"
    } else {
        "a single attempt (no remediation: a failed upgrade waits for the next change)"
    }
}

fn argo_refresh(platform: &Platform, env: &Environment, chosen: &[&Component], argo: &Release) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let retries = std::iter::once((None, &platform.project.argo.retry)).chain(
        chosen
            .iter()
            .filter_map(|c| c.retry.as_ref().map(|r| (Some(c.name.as_str()), r))),
    );
    for (whose, r) in retries {
        let of = whose.map_or_else(
            || "`argo.retry` in strata.yaml".to_owned(),
            |c| format!("the retry of {c}"),
        );
        if let (true, Some(o)) = (r.refresh, &r.refresh_origin) {
            out.push(adapted(
                Severity::Warning,
                o.clone(),
                env,
                argo,
                Feature::RetryRefresh,
                format!("`refresh: true` in {of} is left out"),
            ));
        }
        if let (true, Some(o)) = (r.limit < 0, &r.limit_origin) {
            out.push(adapted(
                Severity::Warning,
                o.clone(),
                env,
                argo,
                Feature::RetryRefresh,
                format!(
                    "{of} has no limit: a failed sync there keeps retrying the same revision, and the Application takes no later one until it succeeds"
                ),
            ));
        }
    }
    let origin = argo
        .origin()
        .cloned()
        .unwrap_or_else(|| Origin::file_start(env.file.as_str()));
    out.push(adapted(
        Severity::Note,
        origin,
        env,
        argo,
        Feature::RetryRefresh,
        format!(
            "Applications retry a failed sync on the same revision, so the default retry is limited to {LIMIT_WITHOUT_REFRESH} attempts (a later commit is synced once they end)"
        ),
    ));
    out
}

fn adapted(
    severity: Severity,
    origin: Origin,
    env: &Environment,
    release: &Release,
    f: Feature,
    what: String,
) -> Diagnostic {
    let name = engine_name(release.engine);
    let mut d = Diagnostic::warning(
        codes::ENGINE_FIELD,
        origin,
        format!(
            "environment {} runs {}, which predates {}: {what}",
            env.name,
            release.describe(),
            feature_text(f)
        ),
    )
    .with_help(format!(
        "upgrade {name} to {} or newer, or set `engines.{}` in strata.yaml if the cluster runs a newer release",
        f.since().minor_text(),
        release.engine.name()
    ))
    .in_env(&env.name);
    d.severity = severity;
    d
}

fn feature_text(f: Feature) -> String {
    let what = match f {
        Feature::OciRepositoryV1 => "OCIRepository source.toolkit.fluxcd.io/v1",
        Feature::RetryOnFailure => "HelmRelease `strategy.name: RetryOnFailure`",
        Feature::RetryRefresh => "Application `syncPolicy.retry.refresh`",
        Feature::ServerSideDiff => "the `ServerSideDiff=true` compare option",
    };
    format!("{what} ({} {})", engine_name(f.engine()), f.since().minor_text())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_versions_ship_the_release_of_their_boundary() {
        let p = |s: &str| EngineVersion::parse(s).unwrap();
        assert_eq!(shipped(ARGO_CD_CHART, p("8.3.0")), v(3, 1));
        assert_eq!(shipped(ARGO_CD_CHART, p("9.0.5")), v(3, 1));
        assert_eq!(shipped(ARGO_CD_CHART, p("9.1.0")), v(3, 2));
        assert_eq!(shipped(ARGO_CD_CHART, p("9.5.11")), v(3, 3));
        assert_eq!(shipped(ARGO_CD_CHART, p("10.1.1")), v(3, 4));
        assert_eq!(shipped(ARGO_CD_CHART, p("3.0.0")), v(2, 3));
        assert_eq!(shipped(FLUX2_CHART, p("2.17.2")), v(2, 7));
        assert_eq!(shipped(FLUX2_CHART, p("2.16.4")), v(2, 6));
        for table in [ARGO_CD_CHART, FLUX2_CHART] {
            assert!(table.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        }
    }

    #[test]
    fn a_release_accepts_what_came_before_it_and_the_other_engines_fields() {
        let argo = Release {
            engine: Target::Argo,
            version: v(3, 1),
            found: Found::Assumed,
        };
        assert!(!argo.accepts(Feature::RetryRefresh));
        assert!(argo.accepts(Feature::ServerSideDiff));
        assert!(argo.accepts(Feature::RetryOnFailure));
        let newer = Release {
            version: v(3, 2),
            ..argo
        };
        assert!(newer.accepts(Feature::RetryRefresh));
    }
}
