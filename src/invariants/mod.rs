//! Stage 5, invariants: the topology rules of ADR 007. [`check`] runs every
//! rule the environment's substrate type lists (see [`registry`]) over the
//! merged values (read through the chart [`profiles`](crate::profiles)), the rendered objects
//! and the substrate contract. Rules report [`Finding`]s into a [`Sink`];
//! the engine gives them their code and severity, applies the environment's
//! waivers, and reports expired and unused waivers.

pub mod capacity;

pub mod controllers;
pub mod coverage;
pub mod facts;

pub mod quantity;
pub mod registry;
pub mod rules;
pub mod selector;
pub mod trace;

use crate::diag::{Diagnostic, Severity, codes};
use crate::load::{Environment, Platform, Topology};
use crate::render::EnvRender;
use crate::yaml::Origin;

pub use crate::profiles::Profiles;
pub use facts::Ctx;
pub use registry::{RULES, Rule};

/// The thresholds the rules judge by.
#[derive(Clone, Debug)]
pub struct Settings {
    /// HA001: replicas each ADR 007 controller runs at least.
    pub min_replicas: i64,
    /// CAP001: the share of each node's CPU and memory kept free, as a fraction.
    pub free_fraction: (u64, u64),
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            min_replicas: 2,
            free_fraction: (1, 3),
        }
    }
}

/// One problem a rule found, before it gets a code and severity.
#[derive(Clone, Debug)]
pub struct Finding {
    pub origin: Origin,
    pub message: String,
    pub label: Option<String>,
    pub notes: Vec<String>,
    pub help: Option<String>,
    pub related: Vec<(Origin, String)>,
    /// The component it is about, for waivers.
    pub component: Option<String>,
    /// The object it is about, `Kind/namespace/name`, for waivers.
    pub object: Option<String>,
    /// How grave it is: an error unless the rule says otherwise (the
    /// admission preview reports what a cluster only warns of or audits).
    pub severity: Option<Severity>,
}

impl Finding {
    pub fn new(origin: Origin, message: impl Into<String>) -> Self {
        Finding {
            origin,
            message: message.into(),
            label: None,
            notes: Vec::new(),
            help: None,
            related: Vec::new(),
            component: None,
            object: None,
            severity: None,
        }
    }
    pub fn label(mut self, l: impl Into<String>) -> Self {
        self.label = Some(l.into());
        self
    }
    pub fn note(mut self, n: impl Into<String>) -> Self {
        self.notes.push(n.into());
        self
    }
    pub fn notes(mut self, n: impl IntoIterator<Item = String>) -> Self {
        self.notes.extend(n);
        self
    }
    pub fn help(mut self, h: impl Into<String>) -> Self {
        self.help = Some(h.into());
        self
    }
    pub fn related(mut self, o: Origin, l: impl Into<String>) -> Self {
        self.related.push((o, l.into()));
        self
    }
    pub fn component(mut self, c: &str) -> Self {
        self.component = Some(c.to_owned());
        self
    }
    pub fn object(mut self, o: impl Into<String>) -> Self {
        self.object = Some(o.into());
        self
    }
    pub fn severity(mut self, s: Severity) -> Self {
        self.severity = Some(s);
        self
    }
}

/// Where rules put their findings. Rules never print and never stop the run.
#[derive(Default)]
pub struct Sink {
    pub findings: Vec<Finding>,
}

impl Sink {
    pub fn push(&mut self, f: Finding) {
        self.findings.push(f);
    }
}

/// Whether a rule applies on an environment of this topology: `single`
/// turns every ADR 007 rule off; SEC001 (no secret in the output) always holds.
fn applies(rule: &Rule, topology: Topology) -> bool {
    topology == Topology::Ha || !rule.topology
}

/// SEC001 is strata's own promise, not a property of a substrate: it runs on
/// every environment whatever its substrate type lists, and no waiver
/// silences it (a sensitive output is never written).
const SENSITIVE_LEAK: &str = "SEC001";

/// Runs every applicable rule for every rendered environment. `judged`:
/// the components that rules judging one component at a time judge (see
/// [`Ctx::judges`]); every component when `None`.
pub fn check(
    platform: &Platform,
    profiles: &Profiles,
    renders: &[EnvRender],
    today: &str,
    settings: &Settings,
    judged: Option<&std::collections::BTreeSet<String>>,
    probe: Option<&dyn crate::inflate::Rerender>,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for render in renders {
        let Some(env) = platform.environments.get(&render.env) else {
            continue;
        };
        let Some(substrate) = platform.substrate(env) else {
            continue;
        };
        let mut ctx = Ctx::new(platform, profiles, env, render, settings);
        ctx.judged = judged;
        ctx.probe = probe;
        // ADR 007 names controllers; those that nothing here deploys are
        // worth one note per environment (not one each, on every run).
        if env.topology == Topology::Ha && substrate.rules.iter().any(|r| r == "HA001") {
            out.extend(missing_controllers_note(&ctx));
        }
        if RULES.iter().any(|r| HA_RULES.contains(&r.code) && runs(&ctx, r)) {
            out.extend(judged_note(&ctx));
        }
        out.extend(coverage::check(&ctx));
        // What strata could not judge of the Gateways matters only where
        // NET001 judges, and something announces LoadBalancer addresses.
        let announced = ctx
            .objects_of_kind("CiliumL2AnnouncementPolicy")
            .any(|o| o.value["spec"]["loadBalancerIPs"] == serde_json::Value::Bool(true));
        if announced && RULES.iter().any(|r| r.code == "NET001" && runs(&ctx, r)) {
            out.extend(ctx.gateway_notes.iter().map(|d| d.clone().in_env(&env.name)));
        }
        out.extend(apply_waivers(env, run_rules(&ctx), today, Stage::Invariants));
    }
    out
}

/// The rules that judge the workloads a component runs as controllers.
const HA_RULES: &[&str] = &["HA001", "HA002", "HA003"];

/// One note naming the workloads the HA rules judge here (none: no note),
/// so that a workload they leave alone is seen to be left alone.
fn judged_note(ctx: &Ctx<'_>) -> Option<Diagnostic> {
    let env = ctx.env;
    let mut judged: Vec<String> = ctx
        .workloads
        .iter()
        .filter(|w| w.controller.is_some())
        .map(|w| {
            let own = w.recognised.is_none() && w.component.and_then(|c| env.ha(c)).is_some_and(|(on, _)| *on);
            let why = if own { ", `ha: true`" } else { "" };
            match w.component {
                Some(c) => format!("{} ({}{why})", w.title, c.name),
                None => w.title.clone(),
            }
        })
        .collect();
    judged.sort();
    judged.dedup();
    if judged.is_empty() {
        return None;
    }
    let mut d = Diagnostic::warning(
        codes::HA_JUDGED,
        Origin::file_start(env.file.as_str()),
        format!(
            "the HA rules (HA001-HA003) judge {} workload(s) in environment {}: {}",
            judged.len(),
            env.name,
            judged.join(", ")
        ),
    )
    .with_help("they judge the controllers ADR 007 names, and every Deployment and StatefulSet of a component with `ha: true` (config.yaml, or `components.<name>.ha` in the environment)")
    .in_env(&env.name);
    d.severity = Severity::Note;
    Some(d)
}

/// One note naming every ADR 007 controller no component of the
/// environment deploys, if any.
fn missing_controllers_note(ctx: &Ctx<'_>) -> Option<Diagnostic> {
    let missing = ctx.missing_controllers();
    if missing.is_empty() {
        return None;
    }
    let env = ctx.env;
    let titles: Vec<&str> = missing.iter().map(|c| c.title).collect();
    let (them, list) = match titles.as_slice() {
        [one] => ("it", format!("the {one}, one of the controllers ADR 007 names")),
        _ => (
            "them",
            format!(
                "{} of the controllers ADR 007 names: {}",
                titles.len(),
                crate::load::decode::list_names(titles.iter().copied(), ", ")
            ),
        ),
    };
    let mut d = Diagnostic::warning(
        "HA001",
        Origin::file_start(env.file.as_str()),
        format!("no component of environment {} deploys {list}", env.name),
    )
    .with_help(format!(
        "if another component runs {them} under another name, its pod labels or image are not recognised; otherwise nothing to do"
    ))
    .in_env(&env.name);
    d.severity = Severity::Note;
    Some(d)
}

/// Whether `rule` runs on the environment of `ctx`: its substrate type
/// lists it, and `topology: single` has not turned it off.
pub fn runs(ctx: &Ctx<'_>, rule: &Rule) -> bool {
    // SEC001 runs everywhere: a substrate type that left it out would let a
    // secret be written.
    (rule.code == SENSITIVE_LEAK
        || ctx
            .platform
            .substrate(ctx.env)
            .is_some_and(|s| s.rules.iter().any(|r| r == rule.code)))
        && applies(rule, ctx.env.topology)
}

/// Runs the rules side by side; the findings keep the rules' order.
fn run_rules(ctx: &Ctx<'_>) -> Vec<(&'static Rule, Finding)> {
    use rayon::prelude::*;
    let per_rule: Vec<Vec<(&'static Rule, Finding)>> = RULES
        .par_iter()
        .with_max_len(1)
        .filter(|r| runs(ctx, r))
        .filter_map(|rule| rule.check.map(|check| (rule, check)))
        .map(|(rule, check)| {
            let mut sink = Sink::default();
            check(ctx, &mut sink);
            sink.findings.into_iter().map(|f| (rule, f)).collect()
        })
        .collect();
    per_rule.into_iter().flatten().collect()
}

/// A rule finding before waivers, with the waiver that covers it, if any.
pub struct Unwaived<'e> {
    pub diagnostic: Diagnostic,
    pub waiver: Option<&'e crate::load::Waiver>,
}

/// Every finding of the rules that run on one environment, waived or not:
/// what rollout gates judge by, since a waiver silences a finding without
/// making the rule pass.
pub fn unwaived<'e>(ctx: &Ctx<'e>) -> Vec<Unwaived<'e>> {
    let env: &'e Environment = ctx.env;
    run_rules(ctx)
        .into_iter()
        .map(|(rule, f)| Unwaived {
            waiver: waiver_of(env, rule, &f).map(|i| &env.waivers[i]),
            diagnostic: to_diagnostic(rule, f, &env.name),
        })
        .collect()
}

/// The first waiver of the environment that covers a finding.
fn waiver_of(env: &Environment, rule: &Rule, f: &Finding) -> Option<usize> {
    env.waivers.iter().position(|w| {
        w.rule.0 == rule.code
            && rule.code != SENSITIVE_LEAK
            && (w
                .component
                .as_ref()
                .is_some_and(|(c, _)| f.component.as_deref() == Some(c))
                || w.object.as_ref().is_some_and(|(o, _)| f.object.as_deref() == Some(o)))
    })
}

pub fn to_diagnostic(rule: &Rule, f: Finding, env: &str) -> Diagnostic {
    let mut d = Diagnostic::error(rule.code, f.origin, f.message).in_env(env);
    d.severity = f.severity.unwrap_or(Severity::Error);
    d.label = f.label;
    d.notes = f.notes;
    d.help = f.help.or_else(|| Some(format!("see `strata rule {}`", rule.code)));
    d.related = f.related;
    d
}

/// Which stage applies waivers: each reports the expired and unused waivers
/// of the rules it judges; the invariants stage also those that name no rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Invariants,
    Admission,
}

/// Drops findings a live waiver covers; reports expired, unused and
/// unknown-rule waivers of the rules `stage` judges.
pub fn apply_waivers(
    env: &Environment,
    findings: Vec<(&'static Rule, Finding)>,
    today: &str,
    stage: Stage,
) -> Vec<Diagnostic> {
    let mut used = vec![false; env.waivers.len()];
    let mut out = Vec::new();
    let expired = |w: &crate::load::Waiver| w.expires.0.as_str() < today;
    for (rule, f) in findings {
        match waiver_of(env, rule, &f) {
            Some(i) => {
                used[i] = true;
                if expired(&env.waivers[i]) {
                    out.push(to_diagnostic(rule, f, &env.name).with_note(format!(
                        "the waiver at {} expired on {}",
                        env.waivers[i].origin, env.waivers[i].expires.0
                    )));
                }
            }
            None => out.push(to_diagnostic(rule, f, &env.name)),
        }
    }
    for (i, w) in env.waivers.iter().enumerate() {
        let admission = registry::is_admission(&w.rule.0);
        if admission != (stage == Stage::Admission) {
            continue;
        }
        let subject = w
            .component
            .as_ref()
            .map(|(c, _)| format!("component {c}"))
            .or_else(|| w.object.as_ref().map(|(o, _)| format!("object {o}")))
            .unwrap_or_default();
        if w.rule.0 == SENSITIVE_LEAK {
            out.push(
                Diagnostic::error(
                    codes::WAIVER,
                    w.rule.1.clone(),
                    format!("{SENSITIVE_LEAK} cannot be waived: a sensitive contract output is never written"),
                )
                .with_label("not waivable")
                .with_help("remove the copy of the secret (refer to a Secret in the cluster instead), then the waiver")
                .in_env(&env.name),
            );
        } else if !RULES.iter().any(|r| r.code == w.rule.0) {
            let known: Vec<&str> = RULES.iter().map(|r| r.code).collect();
            let mut d = Diagnostic::error(
                codes::WAIVER,
                w.rule.1.clone(),
                format!("waiver names no rule `{}`", w.rule.0),
            )
            .with_label("not a rule code")
            .in_env(&env.name);
            d = match crate::load::decode::suggest(&w.rule.0, &known) {
                Some(s) => d.with_help(format!("did you mean `{s}`? `strata rule` lists the rules")),
                None => d.with_help("`strata rule` lists the rules"),
            };
            out.push(d);
        } else if expired(w) {
            out.push(
                Diagnostic::error(
                    codes::WAIVER,
                    w.expires.1.clone(),
                    format!("waiver of {} for {subject} expired on {}", w.rule.0, w.expires.0),
                )
                .with_label("expired")
                .with_note(format!("reason given: {}", w.reason))
                .with_help("fix what the waiver covers and remove it, or agree on a new date and update `expires`")
                .in_env(&env.name),
            );
        } else if !used[i] {
            out.push(
                Diagnostic::warning(
                    codes::WAIVER,
                    w.origin.clone(),
                    format!("waiver of {} for {subject} matches no finding", w.rule.0),
                )
                .with_label("unused waiver")
                .with_help(
                    "the problem is fixed, or the waiver names the wrong component or object: remove or correct it",
                )
                .in_env(&env.name),
            );
        }
    }
    out
}
