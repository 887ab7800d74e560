//! Stage 7b, admission: what the cluster's admission will make of what one
//! environment applies, judged offline with the admission code the cluster
//! runs — Kubernetes' PodSecurity and ValidatingAdmissionPolicy plugins
//! (through `strata-admission`) and Kyverno's engine (through
//! `strata-kyverno`), both Go programs built from `admission/` and run
//! through [`crate::helm::program`]. Findings are rules ADM001–ADM003 of
//! the [registry](crate::invariants::registry), placed at the manifest or
//! values line that set the offending field where it can be traced, and
//! waived like every rule. Without a program, a note says what did not run.

pub mod place;
pub mod pods;
pub mod policies;
pub mod wire;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value as J;

use crate::diag::{Diagnostic, Severity, codes};
use crate::helm::program::Program;
use crate::invariants::{self, Finding, Stage, registry};
use crate::load::{Environment, Platform, SubstrateType};
use crate::render::{EnvRender, Object, Source};
use crate::yaml::Origin;

/// The programs that judge, found by the command line.
#[derive(Clone, Debug)]
pub struct Settings {
    /// `strata-admission` (Pod Security, ValidatingAdmissionPolicy), or why
    /// there is none.
    pub admission: Result<Program, String>,
    /// `strata-kyverno`, or why there is none.
    pub kyverno: Result<Program, String>,
    /// How long one run of either may take.
    pub timeout: Duration,
}

/// Program names, on the `PATH` or beside the chart renderer.
pub const ADMISSION: &str = "strata-admission";
pub const KYVERNO: &str = "strata-kyverno";

/// Who applies the objects, as the GitOps engine of the environment's
/// first target authenticates (Flux's kustomize-controller, Argo CD's
/// application controller, in their default namespaces).
fn username(platform: &Platform, env: &Environment) -> &'static str {
    match platform.targets(env).first().map(|t| t.name()) {
        Some("argo") => "system:serviceaccount:argocd:argocd-application-controller",
        _ => "system:serviceaccount:flux-system:kustomize-controller",
    }
}

/// What the findings of one environment read.
pub struct Side<'a> {
    pub platform: &'a Platform,
    pub env: &'a Environment,
    pub substrate: &'a SubstrateType,
    pub render: &'a EnvRender,
    /// The objects judged, in the order the request lists them.
    pub objects: Vec<&'a Object>,
}

/// A finding and the rule it belongs to.
pub type Judged = (&'static registry::Rule, Finding);

impl<'a> Side<'a> {
    /// `namespace/name`, or `name`.
    fn name_of(&self, o: &Object) -> String {
        match o.namespace() {
            Some(ns) => format!("{ns}/{}", o.name()),
            None => o.name().to_owned(),
        }
    }

    fn find(&self, kind: &str, name: &str) -> Option<&'a Object> {
        self.objects
            .iter()
            .copied()
            .find(|o| o.kind() == kind && o.name() == name)
    }

    fn judged(&self, code: &str, f: Finding, o: &Object) -> Judged {
        let rule = registry::find(code).unwrap_or(&registry::RULES[0]);
        let mut f = f.object(o.id());
        if let Some(c) = &o.component {
            f = f.component(c);
        }
        (rule, f)
    }

    /// Where a namespace's level for `mode` comes from.
    fn level_note(&self, namespace: &str, mode: &str, level: &str, known: bool) -> String {
        let label = format!("pod-security.kubernetes.io/{mode}");
        let ns = self
            .objects
            .iter()
            .find(|o| o.kind() == "Namespace" && o.name() == namespace);
        let labelled = ns.is_some_and(|o| o.value["metadata"]["labels"][&label].is_string());
        let default = match &self.substrate.pod_security {
            Some((_, origin)) => format!("the {} substrate's default ({origin})", self.substrate.name),
            None => "Kubernetes' default".to_owned(),
        };
        match (labelled, known) {
            (true, _) => format!("namespace {namespace} is {level} at {mode} by its label {label}"),
            (false, true) => format!("namespace {namespace} has no label {label}: {level} is {default}"),
            (false, false) => format!(
                "strata writes no Namespace {namespace}, so its labels are unknown here: {level} at {mode} is {default}"
            ),
        }
    }
}

/// The objects the environment applies to the cluster: its first target's
/// (strata's own, the manifests, the cluster objects) and what its charts
/// render.
fn applied(render: &EnvRender) -> Vec<&Object> {
    let first = match render.targets.values().next() {
        Some(objects) => objects.as_slice(),
        None => render.shared.as_slice(),
    };
    first
        .iter()
        .filter(|o| !matches!(o.source, Source::Chart { .. } | Source::Substrate { .. }))
        .chain(render.charts.values().flatten())
        .filter(|o| !o.kind().is_empty())
        .collect()
}

/// Kinds whose objects hold a pod, as PodSecurity admission reads them.
const POD_KINDS: &[&str] = &[
    "Pod",
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "ReplicationController",
    "Job",
    "CronJob",
    "PodTemplate",
];

fn is_kyverno(o: &Object) -> bool {
    o.api_version().starts_with("kyverno.io/") && matches!(o.kind(), "ClusterPolicy" | "Policy")
}

/// Judges one environment; its findings, waived as the environment says,
/// and notes on what did not run.
pub fn check(platform: &Platform, render: &EnvRender, settings: &Settings, today: &str) -> Vec<Diagnostic> {
    let Some(env) = platform.environments.get(&render.env) else {
        return Vec::new();
    };
    let Some(substrate) = platform.substrate(env) else {
        return Vec::new();
    };
    let runs = |code: &str| substrate.rules.iter().any(|r| r == code);
    let side = Side {
        platform,
        env,
        substrate,
        render,
        objects: applied(render),
    };
    let pods = runs("ADM001") && side.objects.iter().any(|o| POD_KINDS.contains(&o.kind()));
    let vaps = runs("ADM002")
        && side
            .objects
            .iter()
            .any(|o| o.kind() == "ValidatingAdmissionPolicyBinding");
    let kyverno = runs("ADM003") && side.objects.iter().any(|o| is_kyverno(o));
    if !pods && !vaps && !kyverno {
        return Vec::new();
    }
    let values: Vec<J> = side.objects.iter().map(|o| o.full().into_owned()).collect();
    let user = username(platform, env);
    let ((admission, k8s_notes), (kyverno_found, kyverno_notes)) = rayon::join(
        || {
            if !(pods || vaps) {
                return (Vec::new(), Vec::new());
            }
            let kube = format!("v{}", platform.project.kubernetes_version.trim_start_matches('v'));
            let request = wire::request(user, &kube, substrate.pod_security.as_ref().map(|(j, _)| j), &values);
            kubernetes(&side, settings, &request, pods, vaps)
        },
        || {
            if !kyverno {
                return (Vec::new(), Vec::new());
            }
            kyverno_run(&side, settings, &wire::kyverno_request(user, &values))
        },
    );
    let findings: Vec<Judged> = admission.into_iter().chain(kyverno_found).collect();
    let mut out: Vec<Diagnostic> = k8s_notes.into_iter().chain(kyverno_notes).collect();
    out.extend(invariants::apply_waivers(env, findings, today, Stage::Admission));
    out
}

/// A note of code E073 (the preview did not run) or E074 (something was
/// not judged), at `origin`.
fn note(code: &'static str, origin: Origin, env: &str, message: String, help: &str) -> Diagnostic {
    let mut d = Diagnostic::warning(code, origin, message).with_help(help).in_env(env);
    d.severity = Severity::Note;
    d
}

/// Pod Security and ValidatingAdmissionPolicy, through `strata-admission`.
fn kubernetes(
    side: &Side<'_>,
    settings: &Settings,
    request: &[u8],
    pods: bool,
    vaps: bool,
) -> (Vec<Judged>, Vec<Diagnostic>) {
    let env = &side.env.name;
    let at = Origin::file_start(side.env.file.as_str());
    let what = match (pods, vaps) {
        (true, true) => "Pod Security (ADM001) and ValidatingAdmissionPolicies (ADM002)",
        (true, false) => "Pod Security (ADM001)",
        _ => "ValidatingAdmissionPolicies (ADM002)",
    };
    let answer = settings
        .admission
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|p| p.run(request, settings.timeout))
        .and_then(|bytes| wire::read::<wire::Answer>(&bytes));
    let answer = match answer {
        Ok(a) => a,
        Err(why) => {
            let origin = side
                .substrate
                .pod_security
                .as_ref()
                .filter(|_| why.contains("PodSecurity configuration"))
                .map_or(at, |(_, o)| o.clone());
            let d = note(
                codes::ADMISSION_NOT_RUN,
                origin,
                env,
                format!("the admission preview of {what} did not run for environment {env}: {why}"),
                "build it: cd admission && go build -o <a folder on the PATH>/strata-admission . (see docs/admission.md)",
            );
            return (Vec::new(), vec![d]);
        }
    };
    let mut found = Vec::new();
    if pods {
        for v in &answer.pod_security {
            pods::findings(side, v, &mut found);
        }
        for v in &answer.namespaces {
            pods::namespace_finding(side, v, &mut found);
        }
    }
    if vaps {
        for v in &answer.policies {
            policies::policy_finding(side, v, &mut found);
        }
    }
    (found, program_notes(side, &answer.notes))
}

/// Kyverno, through `strata-kyverno`.
fn kyverno_run(side: &Side<'_>, settings: &Settings, request: &[u8]) -> (Vec<Judged>, Vec<Diagnostic>) {
    let env = &side.env.name;
    let answer = settings
        .kyverno
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|p| p.run(request, settings.timeout))
        .and_then(|bytes| wire::read::<wire::KyvernoAnswer>(&bytes));
    match answer {
        Ok(a) => {
            let mut found = Vec::new();
            for r in &a.results {
                policies::kyverno_finding(side, r, &mut found);
            }
            (found, program_notes(side, &a.notes))
        }
        Err(why) => {
            let policy = side.objects.iter().find(|o| is_kyverno(o));
            let origin = policy.map_or_else(
                || Origin::file_start(side.env.file.as_str()),
                |o| place::object_origin(side.platform, o).0,
            );
            let d = note(
                codes::ADMISSION_NOT_RUN,
                origin,
                env,
                format!("the Kyverno policies of environment {env} were not run (ADM003): {why}"),
                "build it: cd admission/kyverno && go build -o <a folder on the PATH>/strata-kyverno . (see docs/admission.md)",
            );
            (Vec::new(), vec![d])
        }
    }
}

/// What a program could not judge, one note each, at the object concerned.
fn program_notes(side: &Side<'_>, notes: &[wire::Note]) -> Vec<Diagnostic> {
    let mut by_text: BTreeMap<String, Origin> = BTreeMap::new();
    for n in notes {
        let origin = usize::try_from(n.object)
            .ok()
            .and_then(|i| side.objects.get(i))
            .map_or_else(
                || Origin::file_start(side.env.file.as_str()),
                |o| place::object_origin(side.platform, o).0,
            );
        by_text.entry(n.message.clone()).or_insert(origin);
    }
    by_text
        .into_iter()
        .map(|(message, origin)| {
            note(
                codes::ADMISSION_NOT_JUDGED,
                origin,
                &side.env.name,
                message,
                "the admission preview judged everything else; `strata rule E074` says what it leaves out",
            )
        })
        .collect()
}
