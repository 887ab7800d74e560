//! Stage 9, gates: the rollout status of decision records, computed from
//! what strata already knows. `decisions:` in `strata.yaml` maps each gate
//! of a record (a task-list line) to environments, rules, checks and
//! measured usage; a gate is done when every listed rule reports no finding
//! — waived or not, since a waiver silences a finding without making the
//! rule pass — every listed check passes, and, with `measured: true`, the
//! measured load keeps the margin, in every listed environment. The record
//! is then compared with that state, or rewritten to it ([`record`]).

pub mod host_failure;
pub mod measure;
pub mod placement;
pub mod record;

use std::collections::BTreeMap;

use crate::diag::{Diagnostic, Sources, codes};
use crate::invariants::{self, Ctx, RULES, Settings, Unwaived};
use crate::load::project::{Decision, Gate};
use crate::load::{Environment, Platform, Topology};
use crate::pipeline::Compiled;
use crate::profiles::Profiles;
use crate::world::World;
use crate::yaml::Origin;
use host_failure::Failure;
use record::Record;

/// The checks a gate may list.
pub const CHECKS: &[&str] = &["host-failure"];

/// Why a gate is open, at the file and line that decides it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reason {
    /// The environment it is about, when it is about one.
    pub env: Option<String>,
    /// A rule code, a check (`host-failure`), `measured`, or `environment`.
    pub source: String,
    pub origin: Origin,
    pub message: String,
    /// What the caret would say, when it adds something.
    pub label: Option<String>,
    /// The waiver that silences this finding elsewhere (it still holds the gate open).
    pub waived: Option<String>,
}

/// One gate, computed.
#[derive(Clone, Debug)]
pub struct GateState {
    pub text: String,
    /// The index of its task-list line in the record.
    pub task: usize,
    /// The 1-based line of that task in the record.
    pub line: u32,
    /// What the record's box says.
    pub checked: bool,
    pub done: bool,
    pub reasons: Vec<Reason>,
    /// What was judged, in words (`TOPO001, TOPO002 on staging`).
    pub judged: Vec<String>,
}

/// One record, computed.
#[derive(Clone, Debug)]
pub struct RecordState {
    /// The record's path from the repository root.
    pub path: String,
    pub text: String,
    pub record: Record,
    pub gates: Vec<GateState>,
}

/// A place where a record disagrees with the computed state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Disagreement {
    /// A gate's box: the record says `checked`, the gate is the opposite.
    Box { line: u32, text: String, checked: bool },
    /// A `Rollout: N of M gates` line that says something else.
    Count {
        line: u32,
        says: (usize, usize),
        done: usize,
        total: usize,
    },
}

impl RecordState {
    pub fn done(&self) -> usize {
        self.gates.iter().filter(|g| g.done).count()
    }

    pub fn total(&self) -> usize {
        self.gates.len()
    }

    /// Where the record says something else than the computed state.
    pub fn disagreements(&self) -> Vec<Disagreement> {
        let mut out: Vec<Disagreement> = self
            .gates
            .iter()
            .filter(|g| g.checked != g.done)
            .map(|g| Disagreement::Box {
                line: g.line,
                text: g.text.clone(),
                checked: g.checked,
            })
            .collect();
        let (done, total) = (self.done(), self.total());
        for c in &self.record.counts {
            if (c.done, c.total) != (done, total) {
                out.push(Disagreement::Count {
                    line: c.line,
                    says: (c.done, c.total),
                    done,
                    total,
                });
            }
        }
        out.sort_by_key(|d| match d {
            Disagreement::Box { line, .. } | Disagreement::Count { line, .. } => *line,
        });
        out
    }

    /// The record with its boxes and counts set to the computed state;
    /// every other byte as it was.
    pub fn rewritten(&self) -> String {
        let boxes: Vec<(usize, bool)> = self.gates.iter().map(|g| (g.task, g.done)).collect();
        self.record.rewrite(&self.text, &boxes, self.done(), self.total())
    }
}

fn input_error(origin: Origin, message: impl Into<String>) -> Diagnostic {
    Diagnostic::error(codes::SHAPE, origin, message)
}

/// A gate's task-list line in the record, or the input error that says it
/// is missing (with the nearest line) or there twice.
fn locate(decision: &Decision, gate: &Gate, record: &Record) -> Result<usize, Diagnostic> {
    let path = &decision.record.0;
    let found: Vec<usize> = record.find(&gate.text.0).map(|(i, _)| i).collect();
    match found.as_slice() {
        [i] => Ok(*i),
        [] => {
            let d = input_error(
                gate.text.1.clone(),
                format!("the gate `{}` is not a task-list line of {path}", gate.text.0.trim()),
            )
            .with_label("no `- [ ]` line of the record has this text");
            Err(match record.nearest(&gate.text.0) {
                Some(t) => d
                    .with_related(Origin::new(path.as_str(), t.line, 1, 0), "the nearest task-list line")
                    .with_help(format!(
                        "did you mean `{}` ({path}:{})? make the two texts the same",
                        t.text, t.line
                    )),
                None => d.with_help(format!(
                    "{path} has no task-list line: add `- [ ] {}` under its rollout gates",
                    gate.text.0.trim()
                )),
            })
        }
        many => {
            let lines: Vec<String> = many.iter().map(|i| record.tasks[*i].line.to_string()).collect();
            Err(input_error(
                gate.text.1.clone(),
                format!(
                    "the gate `{}` is on {} task-list lines of {path} (lines {})",
                    gate.text.0.trim(),
                    many.len(),
                    lines.join(", ")
                ),
            )
            .with_help("keep one line per gate, so that strata knows which box is the gate's"))
        }
    }
}

/// Checks the `decisions:` that loading could not: rule codes, checks,
/// records that exist, and every gate's line in its record.
fn read_records(
    world: &dyn World,
    sources: &Sources,
    platform: &Platform,
) -> Result<Vec<(String, Record)>, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut out = Vec::new();
    let strata_yaml = Origin::file_start(crate::load::project::FILE);
    if platform.project.decisions.is_empty() {
        errors.push(
            input_error(
                strata_yaml,
                "strata.yaml lists no `decisions`, so there is no rollout gate to compute",
            )
            .with_help(
                "add `decisions:` to strata.yaml, each record with its gates: `- record: docs/decisions/007.md` and `gates: [{gate: <the task-list text>, envs: [staging], rules: [TOPO001]}]`",
            ),
        );
        return Err(errors);
    }
    let known: Vec<&str> = RULES.iter().map(|r| r.code).collect();
    let mut seen_records: BTreeMap<&str, &Origin> = BTreeMap::new();
    for d in &platform.project.decisions {
        let (path, at) = &d.record;
        if let Some(first) = seen_records.insert(path, at) {
            errors.push(
                input_error(at.clone(), format!("{path} is listed twice under `decisions`"))
                    .with_related(first.clone(), "first here")
                    .with_help("list each record once, with all of its gates"),
            );
        }
        for g in &d.gates {
            for (code, o) in &g.rules {
                if !known.contains(&code.as_str()) {
                    let e = input_error(o.clone(), format!("`{code}` is not a rule")).with_label("not a rule code");
                    errors.push(match crate::load::decode::suggest(&code.to_uppercase(), &known) {
                        Some(s) => e.with_help(format!("did you mean `{s}`? `strata rule` lists the rules")),
                        None => e.with_help("`strata rule` lists the rules"),
                    });
                }
            }
            for (check, o) in &g.checks {
                if !CHECKS.contains(&check.as_str()) {
                    errors.push(
                        input_error(o.clone(), format!("`{check}` is not a check"))
                            .with_help(format!("the checks are: {}", CHECKS.join(", "))),
                    );
                }
            }
        }
        let file: std::sync::Arc<str> = std::sync::Arc::from(path.as_str());
        let text = match world.read_text(path) {
            Ok(t) => t,
            Err(e) => {
                errors.push(
                    Diagnostic::error(codes::IO, at.clone(), format!("cannot read the record {path}: {e}"))
                        .with_help("correct `record:`, a path from the repository root"),
                );
                continue;
            }
        };
        sources.insert(&file, &text);
        let record = Record::parse(&text);
        if record.counts.is_empty() {
            errors.push(
                input_error(
                    Origin::file_start(&file),
                    format!("{path} has no line `Rollout: N of M gates`"),
                )
                .with_related(at.clone(), "named here")
                .with_help(format!(
                    "add `Rollout: 0 of {} gates` to the record, then run `strata gates --write`",
                    d.gates.len()
                )),
            );
        }
        let mut seen: BTreeMap<usize, &Origin> = BTreeMap::new();
        for g in &d.gates {
            match locate(d, g, &record) {
                Ok(i) => {
                    if let Some(first) = seen.insert(i, &g.text.1) {
                        errors.push(
                            input_error(g.text.1.clone(), format!("two gates of {path} name the same line"))
                                .with_related(first.clone(), "first here")
                                .with_help("list each gate once"),
                        );
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        out.push((text, record));
    }
    if errors.is_empty() { Ok(out) } else { Err(errors) }
}

/// What strata knows of one environment, computed once for every gate.
struct EnvFacts<'a> {
    ctx: Ctx<'a>,
    findings: Vec<Unwaived<'a>>,
    host_failures: Option<Vec<Failure>>,
    measured: Option<Option<measure::Measurements>>,
}

/// `TOPO001 does not run on dev: …`, when a rule is off there.
fn why_not_run(ctx: &Ctx<'_>, code: &str) -> (Origin, String) {
    let env = ctx.env;
    match ctx.platform.substrate(env) {
        Some(s) if !s.rules.iter().any(|r| r == code) => (
            env.substrate.1.clone(),
            format!(
                "{code} does not run on {}: substrate type `{}` does not list it",
                env.name, env.substrate.0
            ),
        ),
        _ => (
            env.topology_origin.clone(),
            format!(
                "{code} does not run on {}: `topology: single` turns the ADR 007 rules off",
                env.name
            ),
        ),
    }
}

fn failure_reason(env: &str, source: &str, ctx: &Ctx<'_>, f: Failure) -> Reason {
    let message = match &f.host {
        Some(h) => {
            let nodes: Vec<&str> = ctx
                .nodes
                .iter()
                .filter(|n| &n.host == h)
                .map(|n| n.name.as_str())
                .collect();
            format!("host {h} down ({}): {}", nodes.join(", "), f.message)
        }
        None => f.message,
    };
    Reason {
        env: Some(env.to_owned()),
        source: source.to_owned(),
        origin: f.origin,
        message,
        label: None,
        waived: None,
    }
}

fn not_measured(env: &str, at: &Origin) -> Reason {
    Reason {
        env: Some(env.to_owned()),
        source: "measured".to_owned(),
        origin: at.clone(),
        message: format!(
            "not measured: there is no {} with the usage of each node",
            measure::path(env)
        ),
        label: None,
        waived: None,
    }
}

/// Whether a label adds to the message (not the generic "set here").
fn useful_label(l: &Option<String>) -> Option<String> {
    l.clone().filter(|l| l != "set here" && !l.is_empty())
}

/// Computes every decision record's gates from a compile.
pub fn evaluate(
    world: &dyn World,
    sources: &Sources,
    compiled: &Compiled,
) -> Result<Vec<RecordState>, Vec<Diagnostic>> {
    let platform = &compiled.platform;
    let records = read_records(world, sources, platform)?;
    let profiles = crate::profiles::load(world, sources, &platform.project.profiles)?;
    let settings = Settings::default();
    let decisions = &platform.project.decisions;
    let gates: Vec<&Gate> = decisions.iter().flat_map(|d| &d.gates).collect();
    let mut facts = env_facts(compiled, &profiles, &settings, sources, &gates);
    measure_where_asked(world, sources, &gates, &mut facts)?;
    let judge = Judge {
        world,
        platform,
        facts: &facts,
        settings: &settings,
        names: platform.environments.keys().map(String::as_str).collect(),
    };
    let mut out = Vec::new();
    for (d, (text, record)) in decisions.iter().zip(records) {
        let states = d.gates.iter().map(|g| gate_state(&judge, g, &record)).collect();
        out.push(RecordState {
            path: d.record.0.clone(),
            text,
            record,
            gates: states,
        });
    }
    Ok(out)
}

/// The facts of every environment a gate reads, with its unwaived
/// findings scrubbed of secrets.
fn env_facts<'a>(
    compiled: &'a Compiled,
    profiles: &'a Profiles,
    settings: &'a Settings,
    sources: &Sources,
    gates: &[&Gate],
) -> BTreeMap<&'a str, EnvFacts<'a>> {
    let platform = &compiled.platform;
    let star = gates.iter().any(|g| g.envs.iter().any(|(e, _)| e == "*"));
    let wanted = |env: &Environment| star || gates.iter().any(|g| g.envs.iter().any(|(e, _)| e == &env.name));
    let mut facts: BTreeMap<&str, EnvFacts<'_>> = BTreeMap::new();
    for env in platform.environments.values().filter(|e| wanted(e)) {
        let Some(render) = compiled.renders.iter().find(|r| r.env == env.name) else {
            continue;
        };
        let ctx = Ctx::new(platform, profiles, env, render, settings);
        let mut findings = invariants::unwaived(&ctx);
        let mut diags: Vec<Diagnostic> = findings.iter().map(|u| u.diagnostic.clone()).collect();
        crate::diag::scrub(&mut diags, sources);
        for (u, d) in findings.iter_mut().zip(diags) {
            u.diagnostic = d;
        }
        facts.insert(
            env.name.as_str(),
            EnvFacts {
                ctx,
                findings,
                host_failures: None,
                measured: None,
            },
        );
    }
    facts
}

/// Runs the checks and reads the measurements, only where a gate asks for
/// them, once an environment.
fn measure_where_asked(
    world: &dyn World,
    sources: &Sources,
    gates: &[&Gate],
    facts: &mut BTreeMap<&str, EnvFacts<'_>>,
) -> Result<(), Vec<Diagnostic>> {
    for g in gates {
        let targets: Vec<&str> = if g.envs.iter().any(|(e, _)| e == "*") {
            facts
                .iter()
                .filter(|(_, f)| f.ctx.env.topology == Topology::Ha)
                .map(|(n, _)| *n)
                .collect()
        } else {
            g.envs.iter().map(|(e, _)| e.as_str()).collect()
        };
        for env in targets {
            let Some(f) = facts.get_mut(env) else { continue };
            if !g.checks.is_empty() && f.host_failures.is_none() {
                f.host_failures = Some(host_failure::check(&f.ctx));
            }
            if g.measured.is_some() && f.measured.is_none() {
                f.measured = Some(measure::load(world, sources, env)?);
            }
        }
    }
    Ok(())
}

/// What every gate is judged with.
struct Judge<'j, 'a> {
    world: &'j dyn World,
    platform: &'a Platform,
    facts: &'j BTreeMap<&'a str, EnvFacts<'a>>,
    settings: &'j Settings,
    /// Every environment's name, for suggestions.
    names: Vec<&'a str>,
}

/// What holds one gate open, and what was judged, so far.
#[derive(Default)]
struct Verdict {
    reasons: Vec<Reason>,
    judged: Vec<String>,
}

/// One gate, computed.
fn gate_state(judge: &Judge<'_, '_>, g: &Gate, record: &Record) -> GateState {
    let task = record.find(&g.text.0).map(|(i, _)| i).next().unwrap_or(0);
    let star = g.envs.iter().any(|(e, _)| e == "*");
    let mut v = Verdict::default();
    let named = named_envs(judge, g, &mut v);
    for (code, code_at) in &g.rules {
        rule(judge, star, &named, code, code_at, &mut v);
    }
    let ha_envs: Vec<String> = if star {
        judge
            .facts
            .iter()
            .filter(|(_, f)| f.ctx.env.topology == Topology::Ha)
            .map(|(n, _)| (*n).to_owned())
            .collect()
    } else {
        named.iter().map(|f| f.ctx.env.name.clone()).collect()
    };
    for (check, at) in &g.checks {
        host_check(judge, star, &ha_envs, check, at, &mut v);
    }
    if let Some(at) = &g.measured {
        measured(judge, star, &ha_envs, at, &mut v);
    }
    let t = &record.tasks[task];
    GateState {
        text: g.text.0.trim().to_owned(),
        task,
        line: t.line,
        checked: t.checked,
        done: v.reasons.is_empty(),
        reasons: v.reasons,
        judged: v.judged,
    }
}

/// The facts of the environments a gate names; one that does not exist
/// keeps the gate open.
fn named_envs<'j, 'a>(judge: &Judge<'j, 'a>, g: &Gate, v: &mut Verdict) -> Vec<&'j EnvFacts<'a>> {
    let mut named = Vec::new();
    for (e, o) in g.envs.iter().filter(|(e, _)| e != "*") {
        match judge.facts.get(e.as_str()) {
            Some(f) => named.push(f),
            None => {
                let mut message = format!(
                    "there is no environment {e} ({}/{e}.yaml), so the gate cannot be done",
                    judge.platform.project.environments
                );
                if let Some(s) = crate::load::decode::suggest(e, &judge.names) {
                    message.push_str(&format!("; did you mean `{s}`?"));
                }
                v.reasons.push(Reason {
                    env: Some(e.clone()),
                    source: "environment".to_owned(),
                    origin: o.clone(),
                    message,
                    label: None,
                    waived: None,
                });
                if let Some(at) = &g.measured
                    && !judge.world.is_file(&measure::path(e))
                {
                    v.reasons.push(not_measured(e, at));
                }
            }
        }
    }
    named
}

/// A rule a gate lists: its findings, waived or not, on every environment
/// it is judged on (every one it runs on, for `*`).
fn rule(judge: &Judge<'_, '_>, star: bool, named: &[&EnvFacts<'_>], code: &str, code_at: &Origin, v: &mut Verdict) {
    let Some(rule) = RULES.iter().find(|r| r.code == code) else {
        return;
    };
    let on: Vec<&EnvFacts<'_>> = if star {
        judge
            .facts
            .values()
            .filter(|f| invariants::runs(&f.ctx, rule))
            .collect()
    } else {
        named.to_vec()
    };
    if star && on.is_empty() {
        v.reasons.push(Reason {
            env: None,
            source: code.to_owned(),
            origin: code_at.clone(),
            message: format!("{code} runs on no environment, so nothing shows that it passes"),
            label: None,
            waived: None,
        });
    }
    let mut envs = Vec::new();
    for f in on {
        let env = &f.ctx.env.name;
        if !invariants::runs(&f.ctx, rule) {
            let (origin, message) = why_not_run(&f.ctx, code);
            v.reasons.push(Reason {
                env: Some(env.clone()),
                source: code.to_owned(),
                origin,
                message,
                label: None,
                waived: None,
            });
            continue;
        }
        envs.push(env.as_str());
        let mut found: Vec<&Unwaived<'_>> = f.findings.iter().filter(|u| u.diagnostic.code == rule.code).collect();
        found.sort_by(|a, b| a.diagnostic.sort_key().cmp(&b.diagnostic.sort_key()));
        for u in found {
            let d = &u.diagnostic;
            v.reasons.push(Reason {
                env: Some(env.clone()),
                source: code.to_owned(),
                origin: d.origin.clone(),
                message: d.message.clone(),
                label: useful_label(&d.label),
                waived: u.waiver.map(|w| {
                    format!(
                        "waived until {} at {}, which does not make {code} pass",
                        w.expires.0, w.origin
                    )
                }),
            });
        }
    }
    if !envs.is_empty() {
        v.judged.push(format!("{code} on {}", envs.join(", ")));
    }
}

/// A check a gate lists (`host-failure`): its failures on the environments
/// it is judged on.
fn host_check(judge: &Judge<'_, '_>, star: bool, ha_envs: &[String], check: &str, at: &Origin, v: &mut Verdict) {
    if ha_envs.is_empty() && star {
        v.reasons.push(Reason {
            env: None,
            source: check.to_owned(),
            origin: at.clone(),
            message: format!("{check} runs on no environment: none has `topology: ha`"),
            label: None,
            waived: None,
        });
    }
    for env in ha_envs {
        let f = &judge.facts[env.as_str()];
        for failure in f.host_failures.clone().unwrap_or_default() {
            v.reasons.push(failure_reason(env, check, &f.ctx, failure));
        }
    }
    if !ha_envs.is_empty() {
        v.judged.push(format!("{check} on {}", ha_envs.join(", ")));
    }
}

/// `measured: true`: the measured load keeps the margin on the
/// environments the gate is judged on.
fn measured(judge: &Judge<'_, '_>, star: bool, ha_envs: &[String], at: &Origin, v: &mut Verdict) {
    for env in ha_envs {
        let f = &judge.facts[env.as_str()];
        match f.measured.as_ref().and_then(Option::as_ref) {
            None => v.reasons.push(not_measured(env, at)),
            Some(m) => {
                for failure in measure::check(&f.ctx, m, judge.settings.free_fraction) {
                    v.reasons.push(failure_reason(env, "measured", &f.ctx, failure));
                }
                v.judged.push(format!("measured usage of {env} ({})", m.date));
            }
        }
    }
    if ha_envs.is_empty() && star {
        v.reasons.push(Reason {
            env: None,
            source: "measured".to_owned(),
            origin: at.clone(),
            message: "no environment has `topology: ha`, so nothing is measured".to_owned(),
            label: None,
            waived: None,
        });
    }
}
