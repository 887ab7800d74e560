//! ADM001: what Kubernetes' PodSecurity admission refused, warned of or
//! audited, as findings at the line that set the offending field.

use std::collections::BTreeSet;

use serde_json::Value as J;

use super::place::{self, Path};
use super::wire::{CheckFailure, NamespaceVerdict, PodVerdict};
use super::{Judged, Side};
use crate::diag::Severity;
use crate::invariants::Finding;

/// What makes a field offend each check, as the check in
/// `k8s.io/pod-security-admission/policy/check_<id>.go` reads it: the
/// field's path ends with `suffix`, and its value is one `bad` takes.
/// Checks that fail because a field is missing point at the object.
const FIELDS: &[(&str, &str, Bad)] = &[
    ("privileged", "securityContext.privileged", Bad::True),
    (
        "allowPrivilegeEscalation",
        "securityContext.allowPrivilegeEscalation",
        Bad::True,
    ),
    ("hostNamespaces", "spec.hostNetwork", Bad::True),
    ("hostNamespaces", "spec.hostPID", Bad::True),
    ("hostNamespaces", "spec.hostIPC", Bad::True),
    ("hostPorts", "hostPort", Bad::NonZero),
    ("hostPathVolumes", "hostPath", Bad::Any),
    ("runAsNonRoot", "securityContext.runAsNonRoot", Bad::False),
    ("runAsUser", "securityContext.runAsUser", Bad::Zero),
    ("capabilities_baseline", "capabilities.add", Bad::Any),
    ("capabilities_restricted", "capabilities.add", Bad::Any),
    ("capabilities_restricted", "capabilities.drop", Bad::LacksAll),
    (
        "seccompProfile_baseline",
        "seccompProfile.type",
        Bad::Equals("Unconfined"),
    ),
    (
        "seccompProfile_restricted",
        "seccompProfile.type",
        Bad::Equals("Unconfined"),
    ),
    ("appArmorProfile", "appArmorProfile.type", Bad::Equals("Unconfined")),
    ("procMount", "securityContext.procMount", Bad::Equals("Unmasked")),
    ("sysctls", "securityContext.sysctls", Bad::Any),
    ("seLinuxOptions", "seLinuxOptions.type", Bad::Any),
    ("seLinuxOptions", "seLinuxOptions.user", Bad::Any),
    ("seLinuxOptions", "seLinuxOptions.role", Bad::Any),
    ("windowsHostProcess", "windowsOptions.hostProcess", Bad::True),
];

#[derive(Clone, Copy)]
enum Bad {
    True,
    False,
    Zero,
    NonZero,
    Any,
    LacksAll,
    Equals(&'static str),
}

impl Bad {
    fn holds(self, v: &J) -> bool {
        match self {
            Bad::True => v == &J::Bool(true),
            Bad::False => v == &J::Bool(false),
            Bad::Zero => v.as_i64() == Some(0),
            Bad::NonZero => v.as_i64().is_some_and(|n| n != 0),
            Bad::Any => !v.is_null(),
            Bad::LacksAll => v.as_array().is_some_and(|a| !a.iter().any(|c| c == "ALL")),
            Bad::Equals(s) => v.as_str() == Some(s),
        }
    }
}

/// Where a kind keeps its pod template.
fn template_path(kind: &str) -> &'static [&'static str] {
    match kind {
        "Pod" => &[],
        "CronJob" => &["spec", "jobTemplate", "spec", "template"],
        _ => &["spec", "template"],
    }
}

/// The leaves of `v` below `at` whose path ends with `suffix` and whose
/// value is bad.
fn offending(v: &J, at: &mut Path, suffix: &str, bad: Bad, out: &mut Vec<Path>) {
    match v {
        J::Object(m) => {
            for (k, e) in m {
                at.push(k.clone());
                let dotted: Vec<&str> = at
                    .iter()
                    .filter(|s| s.parse::<usize>().is_err())
                    .map(String::as_str)
                    .collect();
                if dotted.join(".").ends_with(suffix) && bad.holds(e) {
                    out.push(at.clone());
                } else {
                    offending(e, at, suffix, bad, out);
                }
                at.pop();
            }
        }
        J::Array(items) => {
            for (i, e) in items.iter().enumerate() {
                at.push(i.to_string());
                offending(e, at, suffix, bad, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// The fields of the object's pod that a failed check names.
fn fields(object: &J, kind: &str, check: &str) -> Vec<Path> {
    let base: Path = template_path(kind).iter().map(|s| (*s).to_owned()).collect();
    let Some(pod) = place::value_at(object, &base) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (id, suffix, bad) in FIELDS {
        if *id == check {
            let mut at = base.clone();
            offending(pod, &mut at, suffix, *bad, &mut out);
        }
    }
    out
}

/// The findings of one pod: its enforce refusal (an error), what only its
/// warn level fails (a warning), what only its audit level fails (a note).
pub fn findings(side: &Side<'_>, v: &PodVerdict, out: &mut Vec<Judged>) {
    let Some(o) = side.objects.get(v.object) else { return };
    let subject = if v.template {
        format!("the pods of {} {}", o.kind(), side.name_of(o))
    } else {
        format!("Pod {}", side.name_of(o))
    };
    let mut seen = BTreeSet::new();
    for (mode, level, severity, verb) in [
        ("enforce", &v.enforce, Severity::Error, "would be refused"),
        ("warn", &v.warn, Severity::Warning, "would be admitted with a warning"),
        ("audit", &v.audit, Severity::Note, "would be admitted and audited"),
    ] {
        let checks: Vec<&CheckFailure> = v
            .checks
            .iter()
            .filter(|c| c.mode == mode && seen.insert((c.reason.clone(), c.detail.clone())))
            .collect();
        let refused = mode == "enforce" && !v.allowed;
        if checks.is_empty() && !refused {
            continue;
        }
        let reasons: Vec<&str> = checks.iter().map(|c| c.reason.as_str()).collect();
        let what = if reasons.is_empty() {
            v.message.clone()
        } else {
            reasons.join(", ")
        };
        let mut f = Finding::new(
            o.origin.clone(),
            format!(
                "{subject} {verb}: PodSecurity \"{level}\" ({mode} level of namespace {}) forbids {what}",
                v.namespace
            ),
        )
        .severity(severity);
        let mut located = Vec::new();
        for c in &checks {
            for path in fields(&o.value, o.kind(), &c.id) {
                if let Some(at) = place::locate(side.platform, side.render, o, &path) {
                    located.push((at, c.reason.clone(), path));
                }
            }
            if !c.detail.is_empty() {
                f = f.note(format!("{}: {}", c.reason, c.detail));
            }
        }
        f = match located.split_first() {
            Some(((first, reason, path), rest)) => {
                f.origin = first.0.clone();
                f = f.label(format!("{} ({reason})", place::show(path)));
                if let Some(n) = &first.1 {
                    f = f.note(n.clone());
                }
                for (at, reason, path) in rest {
                    f = f.related(at.0.clone(), format!("{} ({reason})", place::show(path)));
                }
                f
            }
            None => {
                let (origin, note) = place::object_origin(side.platform, o);
                f.origin = origin;
                f = f.label(format!("{} {}", o.kind(), o.name()));
                match note {
                    Some(n) => f.note(n),
                    None => f,
                }
            }
        };
        f = f.note(side.level_note(&v.namespace, mode, level, v.known));
        f = f.help(format!(
            "set what the notes name (`strata rule ADM001` shows a hardened pod), give namespace {} the level its pods need with the label pod-security.kubernetes.io/{mode}, or waive ADM001 for object {} with a reason",
            v.namespace,
            o.id()
        ));
        out.push(side.judged("ADM001", f, o));
    }
}

/// A Namespace whose Pod Security labels Kubernetes refuses.
pub fn namespace_finding(side: &Side<'_>, v: &NamespaceVerdict, out: &mut Vec<Judged>) {
    let Some(o) = side.objects.get(v.object) else { return };
    let path: Path = vec!["metadata".into(), "labels".into()];
    let origin = place::locate(side.platform, side.render, o, &path)
        .map_or_else(|| place::object_origin(side.platform, o).0, |(at, _)| at);
    let f = Finding::new(origin, format!("Namespace {} would be refused: {}", o.name(), v.message))
        .label("Pod Security labels")
        .help("each pod-security.kubernetes.io/<mode> label takes privileged, baseline or restricted, and each -version label latest or v1.<minor>");
    out.push(side.judged("ADM001", f, o));
}
