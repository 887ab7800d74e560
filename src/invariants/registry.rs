//! The one table that assigns codes to rules. A code is never reused: a
//! retired rule keeps its line, commented out, so that old waivers and CI
//! annotations never come to mean something else.

use super::rules;
use super::{Ctx, Sink};

/// A registered rule.
pub struct Rule {
    pub code: &'static str,
    /// Kebab-case name of the pattern it flags.
    pub name: &'static str,
    /// One line for `strata rule`.
    pub summary: &'static str,
    /// The documentation `strata rule CODE` prints (the rule's doc comment).
    pub doc: &'static str,
    /// An ADR 007 topology rule: off on `topology: single`.
    pub topology: bool,
    /// What judges the rule here; `None`: the admission stage
    /// ([`crate::admission`]) judges it, with Kubernetes' and Kyverno's own
    /// admission code.
    pub check: Option<fn(&Ctx<'_>, &mut Sink)>,
}

macro_rules! rule {
    ($code:literal, $module:ident, $summary:literal, topology: $topology:literal) => {
        Rule {
            code: $code,
            name: rules::$module::NAME,
            summary: $summary,
            doc: rules::$module::DOC,
            topology: $topology,
            check: Some(rules::$module::check),
        }
    };
    ($code:literal, $module:ident, $summary:literal, admission) => {
        Rule {
            code: $code,
            name: rules::$module::NAME,
            summary: $summary,
            doc: rules::$module::DOC,
            topology: false,
            check: None,
        }
    };
}

pub static RULES: &[Rule] = &[
    rule!("TOPO001", topo001, "at least three control-plane nodes, an odd number", topology: true),
    rule!("TOPO002", topo002, "losing any one host keeps etcd quorum", topology: true),
    rule!("TOPO003", topo003, "every node carries the host label, equal to its host", topology: true),
    rule!("TOPO004", topo004, "talosctl endpoints are the control-plane node addresses, never the API VIP", topology: true),
    rule!("TOPO005", topo005, "the API VIP is in the node network, outside DHCP, and no node's address", topology: true),
    rule!("HA001", ha001, "each ADR 007 controller runs at least two replicas", topology: true),
    rule!("HA002", ha002, "each ADR 007 controller has one PodDisruptionBudget that still allows an eviction", topology: true),
    rule!("HA003", ha003, "ADR 007 controller replicas are spread across nodes or hosts", topology: true),
    rule!("NET001", net001, "a LoadBalancer Service announced by Cilium L2 uses externalTrafficPolicy: Cluster", topology: true),
    rule!("NET002", net002, "the CiliumL2AnnouncementPolicy selects every node", topology: true),
    rule!("CAP001", cap001, "with any one host down, the rest hold every request and keep a third free", topology: true),
    rule!("STO001", sto001, "Longhorn may run on control-plane nodes and keeps no more replicas than hosts", topology: true),
    rule!("SEC001", sec001, "no sensitive contract output reaches the rendered tree or a diagnostic", topology: false),
    rule!("TIER001", tier001, "a core component requires no addon", topology: false),
    rule!("TIER002", tier002, "every component's tier is core or addon", topology: false),
    rule!("ORD001", ord001, "every custom resource is applied after its CRD", topology: false),
    rule!("SUB001", sub001, "the substrate and the platform agree on the CNI, kube-proxy and CoreDNS", topology: false),
    rule!("SEC002", sec002, "a contract in the repository holds no sensitive output's value", topology: false),
    rule!(
        "ADM001",
        adm001,
        "every pod is admitted by its namespace's Pod Security level",
        admission
    ),
    rule!(
        "ADM002",
        adm002,
        "every object is admitted by the ValidatingAdmissionPolicies the environment applies",
        admission
    ),
    rule!(
        "ADM003",
        adm003,
        "every object passes the Kyverno policies the environment applies",
        admission
    ),
];

/// Whether the admission stage judges the rule with this code.
pub fn is_admission(code: &str) -> bool {
    find(code).is_some_and(|r| r.check.is_none())
}

/// The rule with this code.
pub fn find(code: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.code.eq_ignore_ascii_case(code))
}

/// The sections every rule's documentation has.
pub const DOC_SECTIONS: &[&str] = &["## What it does", "## Why is this bad?", "## Example", "Use instead:"];
