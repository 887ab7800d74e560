//! Container images, as the pod templates of rendered objects name them:
//! their repository without registry, tag or digest, and patterns that
//! recognise a piece of software by it, whatever the registry or release.

use serde_json::Value as J;

/// The repository of an image reference, without registry, tag or digest:
/// `quay.io/cilium/operator-generic:v1.18.3@sha256:…` → `cilium/operator-generic`.
pub fn repository(image: &str) -> &str {
    let no_digest = image.split('@').next().unwrap_or(image);
    // A tag follows the last `:` after the last `/` (a registry port comes before it).
    let last_slash = no_digest.rfind('/').map_or(0, |i| i + 1);
    let no_tag = match no_digest[last_slash..].find(':') {
        Some(i) => &no_digest[..last_slash + i],
        None => no_digest,
    };
    // The registry is the first segment when it has a `.` or `:`, or is localhost.
    match no_tag.split_once('/') {
        Some((first, rest)) if first.contains('.') || first.contains(':') || first == "localhost" => rest,
        _ => no_tag,
    }
}

/// Whether an image's repository matches a pattern: `name` matches its
/// last path segment, `org/name` its last two, a trailing `*` a prefix.
pub fn image_matches(pattern: &str, image: &str) -> bool {
    let repo = repository(image);
    let segments: Vec<&str> = repo.split('/').collect();
    let subject = if pattern.contains('/') {
        if segments.len() < 2 {
            return false;
        }
        segments[segments.len() - 2..].join("/")
    } else {
        segments.last().copied().unwrap_or("").to_owned()
    };
    match pattern.strip_suffix('*') {
        Some(prefix) => subject.starts_with(prefix),
        None => subject == pattern,
    }
}

/// The images of the containers (and init containers) of a workload's pod
/// template, or of a Pod.
pub fn pod_images(o: &J) -> Vec<&str> {
    let spec = match o["kind"].as_str() {
        Some("Pod") => &o["spec"],
        Some("CronJob") => &o["spec"]["jobTemplate"]["spec"]["template"]["spec"],
        _ => &o["spec"]["template"]["spec"],
    };
    ["containers", "initContainers"]
        .iter()
        .flat_map(|k| spec[*k].as_array().into_iter().flatten())
        .filter_map(|c| c["image"].as_str())
        .collect()
}
