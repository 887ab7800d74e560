//! The LoadBalancer Services that Gateway API implementations create at run
//! time, one per `Gateway` (Envoy Gateway, Cilium), with the traffic policy
//! the implementation gives them, so that NET001 judges them as it judges
//! the Services the charts render. Which implementation serves a Gateway is
//! its GatewayClass's `spec.controllerName`. Traefik creates no Service per
//! Gateway: its listeners are served through the chart's own Service,
//! which NET001 judges already; such Gateways are only named in its
//! findings. A Gateway of another implementation, or whose class is not in
//! the tree, gets a note: strata cannot tell what its Service will be.

use std::collections::BTreeMap;

use serde_json::Value as J;

use super::{Ctx, Service, Val};
use crate::diag::{Diagnostic, Severity};
use crate::load::Component;
use crate::render::Object;

/// Envoy Gateway's default controller name (`GatewayControllerName`,
/// envoyproxy/gateway api/v1alpha1/envoygateway_types.go); its EnvoyGateway
/// configuration may name another.
pub const ENVOY_CONTROLLER: &str = "gateway.envoyproxy.io/gatewayclass-controller";
/// Cilium's (operator/pkg/gateway-api, a constant).
pub const CILIUM_CONTROLLER: &str = "io.cilium/gateway-controller";
/// Traefik's (pkg/provider/kubernetes/gateway, a constant).
pub const TRAEFIK_CONTROLLER: &str = "traefik.io/gateway-controller";

/// What the environment's Gateways add to the facts.
#[derive(Default)]
pub(super) struct Gateways<'a> {
    pub services: Vec<Service<'a>>,
    pub carried: BTreeMap<String, Vec<String>>,
    pub notes: Vec<Diagnostic>,
}

/// One Gateway and its class, as the implementations read them.
pub(super) struct Gw<'a> {
    pub o: &'a Object,
    pub c: Option<&'a Component>,
    pub namespace: String,
    pub name: String,
    pub class: Option<&'a Object>,
    pub class_name: String,
}

impl Gw<'_> {
    /// `Gateway namespace/name`.
    pub fn title(&self) -> String {
        format!("Gateway {}/{}", self.namespace, self.name)
    }

    pub fn id(&self) -> String {
        format!("Gateway/{}/{}", self.namespace, self.name)
    }

    /// The Gateway's `spec.infrastructure.labels`, which every
    /// implementation puts on the Service.
    pub fn infrastructure_labels(&self) -> BTreeMap<String, String> {
        super::workloads::labels_of(&self.o.value["spec"]["infrastructure"]["labels"])
    }
}

/// Whether an object is of a Gateway API kind (v1 or v1beta1).
fn gateway_api(o: &Object, kind: &str) -> bool {
    o.kind() == kind
        && matches!(
            o.api_version(),
            "gateway.networking.k8s.io/v1" | "gateway.networking.k8s.io/v1beta1"
        )
}

/// A note or warning of NET001 at a place.
pub(super) fn note(origin: crate::yaml::Origin, severity: Severity, message: String, help: &str) -> Diagnostic {
    let mut d = Diagnostic::warning("NET001", origin, message).with_help(help);
    d.severity = severity;
    d
}

impl<'a> Ctx<'a> {
    /// The object an implementation reads by kind, API group, namespace and name.
    pub(super) fn find_object(
        &self,
        kind: &str,
        group: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<&'a Object> {
        self.objects().find(|o| {
            o.kind() == kind
                && o.api_version().split('/').next() == Some(group)
                && o.name() == name
                && (namespace.is_none() || o.namespace() == namespace)
        })
    }

    /// The Gateway's `spec.gatewayClassName`, as a value with its place:
    /// where the finding points when no setting of the implementation's
    /// decides the policy.
    pub(super) fn class_name_val(&self, gw: &Gw<'a>) -> Val {
        self.field(
            gw.c,
            gw.o,
            "spec.gatewayClassName",
            J::String(gw.class_name.clone()),
            None,
        )
    }

    /// The Services the environment's Gateways become, the Gateways served
    /// through another component's Service, and what cannot be judged.
    pub(super) fn collect_gateways(&self) -> Gateways<'a> {
        let mut out = Gateways::default();
        let classes: BTreeMap<&str, &'a Object> = self
            .objects()
            .filter(|o| gateway_api(o, "GatewayClass"))
            .map(|o| (o.name(), o))
            .collect();
        let mut gateways: Vec<&'a Object> = self.objects().filter(|o| gateway_api(o, "Gateway")).collect();
        gateways.sort_by(|a, b| (a.namespace(), a.name()).cmp(&(b.namespace(), b.name())));
        let envoy = self.envoy_settings();
        for o in gateways {
            let class_name = o.value["spec"]["gatewayClassName"].as_str().unwrap_or("").to_owned();
            let gw = Gw {
                o,
                c: o.component.as_ref().and_then(|n| self.platform.components.get(n)),
                namespace: o.namespace().unwrap_or("").to_owned(),
                name: o.name().to_owned(),
                class: classes.get(class_name.as_str()).copied(),
                class_name,
            };
            let controller = gw.class.and_then(|c| c.value["spec"]["controllerName"].as_str());
            match controller {
                Some(n) if n == envoy.controller => self.envoy_gateway(&gw, &envoy, &mut out),
                Some(CILIUM_CONTROLLER) => self.cilium_gateway(&gw, &mut out),
                None if gw.class_name == "cilium" && self.cilium_makes_class() => self.cilium_gateway(&gw, &mut out),
                Some(TRAEFIK_CONTROLLER) => {
                    let by = gw.class.and_then(|c| c.component.clone()).or_else(|| o.component.clone());
                    out.carried.entry(by.unwrap_or_default()).or_default().push(format!(
                        "{} (GatewayClass {})",
                        gw.title(),
                        gw.class_name
                    ));
                }
                Some(other) => out.notes.push(note(
                    o.origin.clone(),
                    Severity::Note,
                    format!(
                        "strata cannot judge the Service {} becomes: its GatewayClass {} belongs to `{other}`, an implementation strata does not know",
                        gw.title(),
                        gw.class_name
                    ),
                    "strata knows Envoy Gateway, Cilium and Traefik; check by hand that the Service this implementation creates uses externalTrafficPolicy: Cluster",
                )),
                None => out.notes.push(note(
                    self.class_name_val(&gw).origin,
                    Severity::Note,
                    format!(
                        "strata cannot judge the Service {} becomes: no GatewayClass {} is in the environment's objects",
                        gw.title(),
                        gw.class_name
                    ),
                    "if the cluster provides the class, check by hand that the Service its implementation creates uses externalTrafficPolicy: Cluster",
                )),
            }
        }
        out
    }
}
