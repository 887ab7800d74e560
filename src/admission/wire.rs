//! The requests strata sends `strata-admission` and `strata-kyverno`, and
//! their answers (`admission/README.md` describes both).

use serde::Deserialize;
use serde_json::Value as J;

/// The protocol both programs speak.
pub const PROTOCOL: u64 = 1;

/// `strata-admission`'s answer.
#[derive(Debug, Default, Deserialize)]
pub struct Answer {
    pub protocol: u64,
    pub kubernetes: String,
    #[serde(default)]
    pub pod_security: Vec<PodVerdict>,
    #[serde(default)]
    pub namespaces: Vec<NamespaceVerdict>,
    #[serde(default)]
    pub policies: Vec<PolicyVerdict>,
    #[serde(default)]
    pub notes: Vec<Note>,
}

#[derive(Debug, Deserialize)]
pub struct PodVerdict {
    pub object: usize,
    pub template: bool,
    pub namespace: String,
    pub known: bool,
    #[serde(default)]
    pub exempt: String,
    pub enforce: String,
    pub warn: String,
    pub audit: String,
    pub allowed: bool,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub checks: Vec<CheckFailure>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct CheckFailure {
    pub mode: String,
    pub id: String,
    pub reason: String,
    #[serde(default)]
    pub detail: String,
}

#[derive(Debug, Deserialize)]
pub struct NamespaceVerdict {
    pub object: usize,
    pub message: String,
}

#[derive(Debug, Deserialize)]
pub struct PolicyVerdict {
    pub object: usize,
    pub template: bool,
    pub policy: String,
    pub binding: String,
    pub action: String,
    pub message: String,
}

#[derive(Debug, Deserialize)]
pub struct Note {
    pub object: i64,
    pub message: String,
}

/// `strata-kyverno`'s answer.
#[derive(Debug, Default, Deserialize)]
pub struct KyvernoAnswer {
    pub protocol: u64,
    pub kyverno: String,
    #[serde(default)]
    pub results: Vec<KyvernoResult>,
    #[serde(default)]
    pub notes: Vec<Note>,
}

#[derive(Debug, Deserialize)]
pub struct KyvernoResult {
    pub object: usize,
    pub policy: String,
    #[serde(default)]
    pub namespace: String,
    pub rule: String,
    pub status: String,
    pub action: String,
    pub message: String,
    #[serde(default)]
    pub path: String,
}

/// Reads an answer, refusing another protocol.
pub fn read<T: for<'de> Deserialize<'de> + Protocol>(bytes: &[u8]) -> Result<T, String> {
    let answer: T = serde_json::from_slice(bytes).map_err(|e| format!("its answer is not what strata reads: {e}"))?;
    if answer.protocol() != PROTOCOL {
        return Err(format!(
            "it speaks protocol {}, strata speaks {PROTOCOL}: rebuild it from this strata's admission/",
            answer.protocol()
        ));
    }
    Ok(answer)
}

pub trait Protocol {
    fn protocol(&self) -> u64;
}

impl Protocol for Answer {
    fn protocol(&self) -> u64 {
        self.protocol
    }
}

impl Protocol for KyvernoAnswer {
    fn protocol(&self) -> u64 {
        self.protocol
    }
}

/// The request for one environment.
pub fn request(username: &str, kube: &str, pod_security: Option<&J>, objects: &[J]) -> Vec<u8> {
    let mut r = serde_json::json!({
        "protocol": PROTOCOL,
        "username": username,
        "kubernetes_version": kube,
        "objects": objects,
    });
    if let Some(ps) = pod_security {
        r["pod_security"] = ps.clone();
    }
    serde_json::to_vec(&r).unwrap_or_default()
}

/// The Kyverno request: no PodSecurity configuration, no version.
pub fn kyverno_request(username: &str, objects: &[J]) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "protocol": PROTOCOL,
        "username": username,
        "objects": objects,
    }))
    .unwrap_or_default()
}
