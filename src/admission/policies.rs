//! ADM002 and ADM003: what the environment's own ValidatingAdmissionPolicies
//! (Kubernetes' plugin) and Kyverno policies (Kyverno's engine) refuse,
//! warn of or audit.

use super::place;
use super::wire::{KyvernoResult, PolicyVerdict};
use super::{Judged, Side};
use crate::diag::Severity;
use crate::invariants::Finding;

/// One binding's decision on one object.
pub fn policy_finding(side: &Side<'_>, v: &PolicyVerdict, out: &mut Vec<Judged>) {
    let Some(o) = side.objects.get(v.object) else { return };
    let (severity, verb) = match v.action.as_str() {
        "Deny" => (Severity::Error, "would be refused"),
        "Warn" => (Severity::Warning, "would be admitted with a warning"),
        _ => (Severity::Note, "would be admitted and audited"),
    };
    let subject = if v.template {
        format!("the pods of {} {}", o.kind(), side.name_of(o))
    } else {
        format!("{} {}", o.kind(), side.name_of(o))
    };
    let (origin, note) = place::object_origin(side.platform, o);
    let mut f = Finding::new(
        origin,
        format!(
            "{subject} {verb} by ValidatingAdmissionPolicy {} (binding {}): {}",
            v.policy,
            v.binding,
            strip(&v.message)
        ),
    )
    .severity(severity)
    .label(format!("{} {}", o.kind(), o.name()));
    if let Some(n) = note {
        f = f.note(n);
    }
    if let Some(b) = side.find("ValidatingAdmissionPolicyBinding", &v.binding) {
        f = f.related(
            place::object_origin(side.platform, b).0,
            format!("binding {}", v.binding),
        );
    }
    f = f.help(format!(
        "change the object so that the policy admits it, narrow the binding's matchResources, or waive ADM002 for object {} with a reason",
        o.id()
    ));
    out.push(side.judged("ADM002", f, o));
}

/// The text after the plugin's own prefix, which the message already says.
fn strip(message: &str) -> &str {
    message
        .split_once("denied request: ")
        .or_else(|| message.split_once("': "))
        .map_or(message, |(_, rest)| rest)
}

/// One Kyverno rule that failed on one object.
pub fn kyverno_finding(side: &Side<'_>, r: &KyvernoResult, out: &mut Vec<Judged>) {
    let Some(o) = side.objects.get(r.object) else { return };
    let (severity, verb) = if r.action == "Enforce" {
        (Severity::Error, "would be refused")
    } else {
        (Severity::Warning, "would be admitted and reported")
    };
    let policy = if r.namespace.is_empty() {
        format!("ClusterPolicy {}", r.policy)
    } else {
        format!("Policy {}/{}", r.namespace, r.policy)
    };
    let path = place::from_pointer(&r.path);
    let located = (!path.is_empty())
        .then(|| place::locate(side.platform, side.render, o, &path))
        .flatten();
    let mut f = Finding::new(
        o.origin.clone(),
        format!(
            "{} {} {verb} by Kyverno {policy}, rule {}: {}",
            o.kind(),
            side.name_of(o),
            r.rule,
            r.message.trim()
        ),
    )
    .severity(severity);
    match located {
        Some((origin, note)) => {
            f.origin = origin;
            f = f.label(match place::value_at(&o.value, &path) {
                Some(_) => place::show(&path),
                None => format!("{} is not set", place::show(&path)),
            });
            if let Some(n) = note {
                f = f.note(n);
            }
        }
        None => {
            let (origin, note) = place::object_origin(side.platform, o);
            f.origin = origin;
            f = f.label(format!("{} {}", o.kind(), o.name()));
            if let Some(n) = note {
                f = f.note(n);
            }
        }
    }
    if r.status == "error" {
        f = f.note("Kyverno could not evaluate the rule on this object (status error)");
    }
    if let Some(p) = side.find(
        if r.namespace.is_empty() {
            "ClusterPolicy"
        } else {
            "Policy"
        },
        &r.policy,
    ) {
        f = f.related(place::object_origin(side.platform, p).0, policy.clone());
    }
    f = f.help(format!(
        "change the object so that the rule passes, or waive ADM003 for object {} with a reason",
        o.id()
    ));
    out.push(side.judged("ADM003", f, o));
}
