//! The API server's own checks of names, labels, annotations and ports,
//! which no JSON Schema of a kind states, on every rendered object: what
//! `kubectl apply` would be refused for after strata said the tree was
//! good. Each check is the server's (see [`super::apimachinery`] for the
//! rules and where they are in Kubernetes' code), at the same places in
//! the object:
//!
//! - every object's `metadata`: labels (`ValidateLabels`), annotations
//!   (`ValidateAnnotations`), and the name of the built-in kinds whose
//!   name rule is known (k8s.io/kubernetes `pkg/apis/core/validation`:
//!   a Namespace a DNS-1123 label, a Service a DNS-1035 label, the others
//!   a DNS-1123 subdomain);
//! - a Namespace's labels, and the namespace metadata an Argo CD
//!   Application carries for its destination (`managedNamespaceMetadata`),
//!   also as Pod Security admission reads them (E050);
//! - pod templates: their metadata, `nodeSelector`, container ports and
//!   port names, and the ports of probes and lifecycle handlers;
//! - selectors (`matchLabels`, a Service's `selector`), and the ports of
//!   Services and NetworkPolicies.

use serde_json::Value as J;

use super::apimachinery as am;
use super::message::{Problem, Seg};
use crate::diag::codes;

/// A refusal, with its code: E050 for a namespace's metadata, else E052.
pub(super) struct Refusal {
    pub code: &'static str,
    pub problem: Problem,
}

/// Collects refusals at a growing path into the object.
struct Walk {
    path: Vec<Seg>,
    out: Vec<Refusal>,
}

impl Walk {
    fn at<R>(&mut self, seg: Seg, f: impl FnOnce(&mut Walk) -> R) -> R {
        self.path.push(seg);
        let r = f(self);
        self.path.pop();
        r
    }

    fn key<R>(&mut self, k: &str, f: impl FnOnce(&mut Walk) -> R) -> R {
        self.at(Seg::Key(k.to_owned()), f)
    }

    /// A refusal of the value at the current path.
    fn value(&mut self, code: &'static str, message: String, label: &str, help: &str) {
        self.out.push(Refusal {
            code,
            problem: Problem {
                path: self.path.clone(),
                key: None,
                missing: None,
                message,
                label: label.to_owned(),
                help: Some(help.to_owned()),
            },
        });
    }

    /// A refusal of the key `k` of the mapping at the current path.
    fn key_problem(&mut self, code: &'static str, k: &str, message: String, help: &str) {
        self.out.push(Refusal {
            code,
            problem: Problem {
                path: self.path.clone(),
                key: Some(k.to_owned()),
                missing: None,
                message,
                label: "refused by the API server".to_owned(),
                help: Some(help.to_owned()),
            },
        });
    }
}

const LABEL_HELP: &str = "a label key is `[prefix/]name` (prefix a DNS subdomain, name at most 63 letters, digits, `-`, `_`, `.`); \
     a value at most 63 of the same characters, starting and ending with a letter or digit — put free text in an annotation";
const ANNOTATION_HELP: &str = "an annotation key is `[prefix/]name` (prefix a DNS subdomain, name at most 63 letters, digits, `-`, `_`, `.`): \
     replace spaces and other characters with `-`";
const PORT_HELP: &str = "use a port number between 1 and 65535, or the name of a container port";
const POD_SECURITY_HELP: &str =
    "Pod Security levels are privileged, baseline and restricted; versions are `latest` or `v1.<minor>`";

/// Labels: keys are qualified names, values label values; with `pod_security`
/// the Pod Security labels are judged too (a namespace's).
fn labels(w: &mut Walk, map: &J, what: &str, code: &'static str, pod_security: bool) {
    let Some(m) = map.as_object() else { return };
    for (k, v) in m {
        if let Err(e) = am::qualified_name(k) {
            w.key_problem(code, k, format!("{what} label key `{k}` is refused: {e}"), LABEL_HELP);
            continue;
        }
        let Some(v) = v.as_str() else { continue };
        w.key(k, |w| {
            if let Err(e) = am::label_value(v) {
                w.value(
                    code,
                    format!("{what} label `{k}` has a value the API server refuses: {e}"),
                    "refused by the API server",
                    LABEL_HELP,
                );
            } else if pod_security && let Some(Err(e)) = am::pod_security(k, v) {
                w.value(
                    code,
                    format!("{what} label `{k}`: {e}; Pod Security admission refuses the namespace"),
                    "no Pod Security level",
                    POD_SECURITY_HELP,
                );
            }
        });
    }
}

/// Annotations: keys are qualified names (read lower-cased, as the server
/// reads them), all of them together at most 256 KiB.
fn annotations(w: &mut Walk, map: &J, what: &str, code: &'static str) {
    let Some(m) = map.as_object() else { return };
    for k in m.keys() {
        if let Err(e) = am::qualified_name(&k.to_lowercase()) {
            w.key_problem(
                code,
                k,
                format!("{what} annotation key `{k}` is refused: {e}"),
                ANNOTATION_HELP,
            );
        }
    }
    let size = am::annotations_size(m.iter().map(|(k, v)| (k.as_str(), v.as_str().unwrap_or(""))));
    if size > am::ANNOTATIONS_MAX {
        w.value(
            code,
            format!(
                "{what} annotations hold {size} bytes; the API server takes at most {}",
                am::ANNOTATIONS_MAX
            ),
            "too large",
            "move large data into a ConfigMap",
        );
    }
}

/// An object's or a template's `metadata`.
fn metadata(w: &mut Walk, meta: &J, what: &str, code: &'static str, namespace: bool) {
    w.key("labels", |w| labels(w, &meta["labels"], what, code, namespace));
    w.key("annotations", |w| annotations(w, &meta["annotations"], what, code));
}

/// A name rule, and what it is called.
type NameRule = (fn(&str) -> Result<(), String>, &'static str);

/// The name rule of the built-in kinds whose rule is known.
fn name_rule(api_version: &str, kind: &str) -> Option<NameRule> {
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let builtin = matches!(
        group,
        "" | "apps" | "batch" | "policy" | "networking.k8s.io" | "storage.k8s.io" | "scheduling.k8s.io"
    );
    if !builtin {
        return None;
    }
    Some(match kind {
        "Namespace" => (am::dns1123_label, "a DNS-1123 label"),
        "Service" => (am::dns1035_label, "a DNS-1035 label"),
        _ => (am::dns1123_subdomain, "a DNS-1123 subdomain"),
    })
}

/// A port given as a number or, where `named` allows it, a port name.
fn port(w: &mut Walk, v: &J, named: bool, what: &str) {
    let refused = match v {
        J::Number(n) => n
            .as_i64()
            .map(am::port_number)
            .unwrap_or(Err("not a whole number".into())),
        J::String(s) if named => match s.parse::<i64>() {
            Ok(n) => am::port_number(n),
            Err(_) => am::port_name(s),
        },
        _ => return,
    };
    if let Err(e) = refused {
        w.value(
            codes::SERVER_VALUE,
            format!("{what} {v} is refused by the API server: {e}"),
            "refused by the API server",
            PORT_HELP,
        );
    }
}

/// Probes and lifecycle handlers: `httpGet.port`, `tcpSocket.port`
/// (a number or a port name), `grpc.port` (a number).
fn handler(w: &mut Walk, h: &J) {
    for (action, named) in [("httpGet", true), ("tcpSocket", true), ("grpc", false)] {
        if let Some(p) = h[action].get("port") {
            w.key(action, |w| {
                w.key("port", |w| port(w, p, named, &format!("{action} port")))
            });
        }
    }
}

fn container(w: &mut Walk, c: &J) {
    if let Some(ports) = c["ports"].as_array() {
        w.key("ports", |w| {
            for (i, p) in ports.iter().enumerate() {
                w.at(Seg::Index(i), |w| {
                    if let Some(v) = p.get("containerPort") {
                        w.key("containerPort", |w| port(w, v, false, "containerPort"));
                    }
                    // 0 leaves the host port unset.
                    if let Some(v) = p.get("hostPort").filter(|v| v.as_i64() != Some(0)) {
                        w.key("hostPort", |w| port(w, v, false, "hostPort"));
                    }
                    if let Some(n) = p["name"].as_str()
                        && let Err(e) = am::port_name(n)
                    {
                        w.key("name", |w| {
                            w.value(
                                codes::SERVER_VALUE,
                                format!("container port name `{n}` is refused by the API server: {e}"),
                                "refused by the API server",
                                "name a port with at most 15 lower-case letters, digits and `-`",
                            )
                        });
                    }
                });
            }
        });
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if c[probe].is_object() {
            w.key(probe, |w| handler(w, &c[probe]));
        }
    }
    for hook in ["postStart", "preStop"] {
        if c["lifecycle"][hook].is_object() {
            w.key("lifecycle", |w| w.key(hook, |w| handler(w, &c["lifecycle"][hook])));
        }
    }
}

/// A pod template (`metadata` and `spec`), or a Pod.
fn pod(w: &mut Walk, template: &J) {
    if template["metadata"].is_object() {
        w.key("metadata", |w| {
            metadata(
                w,
                &template["metadata"],
                "the pod template's",
                codes::SERVER_VALUE,
                false,
            )
        });
    }
    let spec = &template["spec"];
    w.key("spec", |w| {
        w.key("nodeSelector", |w| {
            labels(w, &spec["nodeSelector"], "nodeSelector", codes::SERVER_VALUE, false)
        });
        for list in ["initContainers", "containers", "ephemeralContainers"] {
            let Some(cs) = spec[list].as_array() else { continue };
            w.key(list, |w| {
                for (i, c) in cs.iter().enumerate() {
                    w.at(Seg::Index(i), |w| container(w, c));
                }
            });
        }
    });
}

/// `selector.matchLabels` under the current path's `key`.
fn match_labels(w: &mut Walk, selector: &J, key: &str) {
    if selector["matchLabels"].is_object() {
        w.key(key, |w| {
            w.key("matchLabels", |w| {
                labels(w, &selector["matchLabels"], "selector", codes::SERVER_VALUE, false)
            })
        });
    }
}

fn service(w: &mut Walk, spec: &J) {
    w.key("spec", |w| {
        w.key("selector", |w| {
            labels(w, &spec["selector"], "selector", codes::SERVER_VALUE, false)
        });
        let Some(ports) = spec["ports"].as_array() else { return };
        w.key("ports", |w| {
            for (i, p) in ports.iter().enumerate() {
                w.at(Seg::Index(i), |w| {
                    if let Some(v) = p.get("port") {
                        w.key("port", |w| port(w, v, false, "Service port"));
                    }
                    if let Some(v) = p.get("targetPort") {
                        w.key("targetPort", |w| port(w, v, true, "targetPort"));
                    }
                    if let Some(v) = p.get("nodePort").filter(|v| v.as_i64() != Some(0)) {
                        w.key("nodePort", |w| port(w, v, false, "nodePort"));
                    }
                });
            }
        });
    });
}

fn network_policy(w: &mut Walk, spec: &J) {
    w.key("spec", |w| {
        match_labels(w, &spec["podSelector"], "podSelector");
        for dir in ["ingress", "egress"] {
            let Some(rules) = spec[dir].as_array() else { continue };
            w.key(dir, |w| {
                for (i, r) in rules.iter().enumerate() {
                    let Some(ports) = r["ports"].as_array() else { continue };
                    w.at(Seg::Index(i), |w| {
                        w.key("ports", |w| {
                            for (j, p) in ports.iter().enumerate() {
                                if let Some(v) = p.get("port") {
                                    w.at(Seg::Index(j), |w| {
                                        w.key("port", |w| port(w, v, true, "NetworkPolicy port"))
                                    });
                                }
                            }
                        })
                    });
                }
            });
        }
    });
}

/// What the API server would refuse in one rendered object.
pub(super) fn refusals(obj: &J) -> Vec<Refusal> {
    let mut w = Walk {
        path: Vec::new(),
        out: Vec::new(),
    };
    let api_version = obj["apiVersion"].as_str().unwrap_or("");
    let kind = obj["kind"].as_str().unwrap_or("");
    let is_namespace = kind == "Namespace" && api_version == "v1";
    let what = if is_namespace {
        "the namespace's"
    } else {
        "the object's"
    };
    let code = if is_namespace {
        codes::NAMESPACE_METADATA
    } else {
        codes::SERVER_VALUE
    };
    let meta = &obj["metadata"];
    w.key("metadata", |w| {
        metadata(w, meta, what, code, is_namespace);
        if let (Some(name), Some((rule, rule_name))) = (meta["name"].as_str(), name_rule(api_version, kind))
            && let Err(e) = rule(name)
        {
            w.key("name", |w| {
                w.value(
                    code,
                    format!("the name `{name}` of a {kind} must be {rule_name}: {e}"),
                    "refused by the API server",
                    "rename it: lower-case letters, digits and `-`",
                )
            });
        }
    });
    let spec = &obj["spec"];
    match (api_version, kind) {
        ("argoproj.io/v1alpha1", "Application") => {
            let m = &spec["syncPolicy"]["managedNamespaceMetadata"];
            if m.is_object() {
                w.key("spec", |w| {
                    w.key("syncPolicy", |w| {
                        w.key("managedNamespaceMetadata", |w| {
                            metadata(w, m, "the namespace's", codes::NAMESPACE_METADATA, true)
                        })
                    })
                });
            }
        }
        ("v1", "Pod") => pod(&mut w, obj),
        ("v1", "Service") => service(&mut w, spec),
        ("networking.k8s.io/v1", "NetworkPolicy") => network_policy(&mut w, spec),
        ("policy/v1", "PodDisruptionBudget") => w.key("spec", |w| match_labels(w, &spec["selector"], "selector")),
        ("apps/v1", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") | ("batch/v1", "Job") => {
            w.key("spec", |w| {
                match_labels(w, &spec["selector"], "selector");
                w.key("template", |w| pod(w, &spec["template"]));
                if let Some(claims) = spec["volumeClaimTemplates"].as_array() {
                    w.key("volumeClaimTemplates", |w| {
                        for (i, c) in claims.iter().enumerate() {
                            w.at(Seg::Index(i), |w| {
                                w.key("metadata", |w| {
                                    metadata(w, &c["metadata"], "the claim template's", codes::SERVER_VALUE, false)
                                })
                            });
                        }
                    });
                }
            });
        }
        ("batch/v1", "CronJob") => {
            let job = &spec["jobTemplate"];
            w.key("spec", |w| {
                w.key("jobTemplate", |w| {
                    w.key("metadata", |w| {
                        metadata(w, &job["metadata"], "the job template's", codes::SERVER_VALUE, false)
                    });
                    w.key("spec", |w| {
                        match_labels(w, &job["spec"]["selector"], "selector");
                        w.key("template", |w| pod(w, &job["spec"]["template"]));
                    });
                });
            });
        }
        _ => {}
    }
    w.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn found(obj: J) -> Vec<(String, String)> {
        refusals(&obj)
            .into_iter()
            .map(|r| {
                (
                    r.code.to_owned(),
                    super::super::message::display_path(&r.problem.path)
                        + &r.problem.key.map(|k| format!(" key {k}")).unwrap_or_default(),
                )
            })
            .collect()
    }

    #[test]
    fn a_namespace_with_a_misspelt_level_and_a_long_label() {
        let long = "x".repeat(64);
        let f = found(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web", "labels": {
            "pod-security.kubernetes.io/enforce": "restricetd", "team": long, "bad key": "x"}}}),
        );
        assert_eq!(
            f,
            [
                ("E050".to_owned(), "metadata.labels key bad key".to_owned()),
                (
                    "E050".to_owned(),
                    "metadata.labels[\"pod-security.kubernetes.io/enforce\"]".to_owned()
                ),
                ("E050".to_owned(), "metadata.labels.team".to_owned()),
            ]
        );
    }

    #[test]
    fn an_application_carries_its_namespace_metadata() {
        let f = found(
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "web"},
            "spec": {"syncPolicy": {"managedNamespaceMetadata": {"labels": {"pod-security.kubernetes.io/warn": "strict"},
            "annotations": {"owner team": "x"}}}}}),
        );
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f.iter().all(|(c, _)| c == "E050"));
    }

    #[test]
    fn ports_labels_and_names_of_workloads() {
        let f = found(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "Web",
            "annotations": {"team owner": "x"}},
            "spec": {"selector": {"matchLabels": {"tier": "front end"}}, "template": {
                "metadata": {"labels": {"tier": "front end"}},
                "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 70000, "name": "metrics_port"}],
                    "readinessProbe": {"httpGet": {"port": "http"}}, "livenessProbe": {"tcpSocket": {"port": 0}}}]}}}}),
        );
        let paths: Vec<&str> = f.iter().map(|(_, p)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "metadata.annotations key team owner",
                "metadata.name",
                "spec.selector.matchLabels.tier",
                "spec.template.metadata.labels.tier",
                "spec.template.spec.containers[0].ports[0].containerPort",
                "spec.template.spec.containers[0].ports[0].name",
                "spec.template.spec.containers[0].livenessProbe.tcpSocket.port",
            ]
        );
        assert!(f.iter().all(|(c, _)| c == "E052"));
    }

    #[test]
    fn a_service_port_and_a_clean_object() {
        let f = found(
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 70000, "targetPort": "http"}, {"port": 80, "targetPort": 8080, "nodePort": 0}]}}),
        );
        assert_eq!(f, [("E052".to_owned(), "spec.ports[0].port".to_owned())]);
        assert!(found(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a.b",
            "labels": {"app.kubernetes.io/name": "web", "empty": ""}, "annotations": {"Example/Key": "any text at all"}}})).is_empty());
    }
}
