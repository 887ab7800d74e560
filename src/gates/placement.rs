//! The worst placement a workload's scheduling constraints allow: how many
//! of its replicas one physical host can hold. Replicas spread only by
//! `kubernetes.io/hostname` may share a host that runs several nodes; a
//! required anti-affinity on the host label keeps them on distinct hosts.
//! Pure arithmetic over node labels, so that it can be tested alone.

use std::collections::BTreeSet;

use serde_json::Value as J;

use crate::invariants::selector::{Labels, Selector};
use crate::profiles::SpreadKind;

/// How a constraint bounds the replicas in one topology domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// At most one replica per domain (a required pod anti-affinity); the
    /// replicas beyond the number of domains stay pending.
    OnePerDomain,
    /// Domains differ by at most this many replicas: a topology spread
    /// constraint, or a preferred anti-affinity as the scheduler applies it
    /// when it places the replicas (one a domain while there are enough).
    Skew(u32),
}

/// One constraint that spreads a workload's pods over a topology key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constraint {
    pub key: String,
    pub bound: Bound,
    /// `false` for a preferred anti-affinity or a `ScheduleAnyway` spread:
    /// honoured when the replicas are placed, not enforced afterwards.
    pub hard: bool,
}

impl Constraint {
    /// `required anti-affinity on kubernetes.io/hostname`, for messages.
    pub fn describe(&self) -> String {
        match (self.bound, self.hard) {
            (Bound::OnePerDomain, _) => format!("a required anti-affinity on {}", self.key),
            (Bound::Skew(s), true) => format!("a topology spread (maxSkew {s}) on {}", self.key),
            (Bound::Skew(_), false) => format!("a preferred spread on {}", self.key),
        }
    }
}

/// Whether a term's label selector selects the pods. A term without one
/// selects nothing once rendered; through a chart profile it counts, since
/// the chart fills one in.
fn selects(term: &J, pods: &Labels, rendered: bool) -> bool {
    match term.get("labelSelector") {
        None | Some(J::Null) => !rendered,
        Some(s) => Selector::from_label_selector(s).is_ok_and(|s| s.matches(pods)),
    }
}

/// The constraints of a pod spec's `affinity` and
/// `topologySpreadConstraints` that select the workload's own pods, or the
/// chart's built-in spread when both are empty.
pub fn constraints(
    affinity: Option<&J>,
    spread: Option<&J>,
    builtin: Option<(SpreadKind, &str)>,
    pods: &Labels,
    rendered: bool,
) -> Vec<Constraint> {
    let mut out = Vec::new();
    let anti = affinity.map(|a| &a["podAntiAffinity"]);
    for term in anti
        .and_then(|a| a["requiredDuringSchedulingIgnoredDuringExecution"].as_array())
        .into_iter()
        .flatten()
    {
        if let Some(key) = term["topologyKey"].as_str()
            && selects(term, pods, rendered)
        {
            out.push(Constraint {
                key: key.to_owned(),
                bound: Bound::OnePerDomain,
                hard: true,
            });
        }
    }
    for item in anti
        .and_then(|a| a["preferredDuringSchedulingIgnoredDuringExecution"].as_array())
        .into_iter()
        .flatten()
    {
        let term = &item["podAffinityTerm"];
        if let Some(key) = term["topologyKey"].as_str()
            && selects(term, pods, rendered)
        {
            out.push(Constraint {
                key: key.to_owned(),
                bound: Bound::Skew(1),
                hard: false,
            });
        }
    }
    for c in spread.and_then(J::as_array).into_iter().flatten() {
        if let Some(key) = c["topologyKey"].as_str()
            && selects(c, pods, rendered)
        {
            let skew = c["maxSkew"].as_u64().filter(|s| *s > 0).unwrap_or(1);
            out.push(Constraint {
                key: key.to_owned(),
                bound: Bound::Skew(u32::try_from(skew).unwrap_or(u32::MAX)),
                hard: c["whenUnsatisfiable"].as_str() != Some("ScheduleAnyway"),
            });
        }
    }
    let empty = |v: Option<&J>| {
        v.is_none_or(|v| match v {
            J::Null => true,
            J::Object(m) => m.is_empty(),
            J::Array(a) => a.is_empty(),
            J::String(s) => s.is_empty(),
            _ => false,
        })
    };
    if empty(affinity)
        && empty(spread)
        && let Some((kind, key)) = builtin
    {
        out.push(Constraint {
            key: key.to_owned(),
            bound: match kind {
                SpreadKind::RequiredAntiAffinity => Bound::OnePerDomain,
                _ => Bound::Skew(1),
            },
            hard: kind != SpreadKind::PreferredAntiAffinity,
        });
    }
    out
}

/// A node a workload may run on, and whether the failed host runs it.
#[derive(Clone, Debug)]
pub struct Slot<'n> {
    pub labels: &'n Labels,
    pub on_failed_host: bool,
}

/// The worst case for one host: replicas scheduled, and how many of them
/// the host can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Worst {
    pub scheduled: u32,
    pub on_host: u32,
}

impl Worst {
    pub fn survivors(self) -> u32 {
        self.scheduled - self.on_host
    }
}

/// The most replicas `k` of `domains` domains can hold when every two
/// domains differ by at most `skew`: the smallest domain holds `m`, the
/// host's domains `m + skew` at most, the others at least `m`.
fn most_in(replicas: u32, domains: u32, k: u32, skew: u32) -> u32 {
    if k == 0 || domains == 0 {
        return 0;
    }
    if k >= domains {
        return replicas;
    }
    let (r, d, k, s) = (u64::from(replicas), u64::from(domains), u64::from(k), u64::from(skew));
    let rest = d - k;
    let mut best = 0;
    for m in 0..=r / d {
        let hi = (k * (m + s)).min(r - rest * m);
        let lo = (k * m).max(r.saturating_sub(rest * (m + s)));
        if hi >= lo {
            best = best.max(hi);
        }
    }
    u32::try_from(best).unwrap_or(replicas)
}

/// The worst placement of `replicas` on `slots` (the nodes the workload may
/// run on) under `constraints`, for the host whose slots are marked. A
/// constraint whose key some eligible node lacks guarantees nothing and is
/// left out.
pub fn worst(replicas: u32, constraints: &[Constraint], slots: &[Slot<'_>]) -> Worst {
    if slots.is_empty() {
        return Worst {
            scheduled: 0,
            on_host: 0,
        };
    }
    let mut scheduled = replicas;
    let mut on_host = if slots.iter().any(|s| s.on_failed_host) {
        replicas
    } else {
        0
    };
    for c in constraints {
        let Some(values) = slots
            .iter()
            .map(|s| s.labels.get(&c.key).map(|v| (v.as_str(), s.on_failed_host)))
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        let domains: BTreeSet<&str> = values.iter().map(|(v, _)| *v).collect();
        let hit: BTreeSet<&str> = values.iter().filter(|(_, h)| *h).map(|(v, _)| *v).collect();
        let (d, k) = (domains.len() as u32, hit.len() as u32);
        match c.bound {
            Bound::OnePerDomain => {
                let placed = replicas.min(d);
                scheduled = scheduled.min(placed);
                on_host = on_host.min(placed.min(k));
            }
            Bound::Skew(s) => on_host = on_host.min(most_in(replicas, d, k, s)),
        }
    }
    Worst {
        scheduled,
        on_host: on_host.min(scheduled),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HOSTNAME: &str = "kubernetes.io/hostname";
    const ZONE: &str = "topology.kubernetes.io/zone";

    fn node(name: &str, host: &str) -> Labels {
        [(HOSTNAME, name), (ZONE, host)]
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// Four nodes on three hosts: pve-01 runs two.
    fn four_on_three() -> Vec<Labels> {
        vec![
            node("cp-01", "pve-01"),
            node("worker-01", "pve-01"),
            node("cp-02", "pve-02"),
            node("cp-03", "pve-03"),
        ]
    }

    fn slots<'n>(nodes: &'n [Labels], host: &str) -> Vec<Slot<'n>> {
        nodes
            .iter()
            .map(|l| Slot {
                labels: l,
                on_failed_host: l.get(ZONE).is_some_and(|h| h == host),
            })
            .collect()
    }

    fn on(key: &str, bound: Bound) -> Constraint {
        Constraint {
            key: key.to_owned(),
            bound,
            hard: true,
        }
    }

    #[test]
    fn hostname_spread_may_share_a_host_that_runs_two_nodes() {
        let nodes = four_on_three();
        for bound in [Bound::OnePerDomain, Bound::Skew(1)] {
            let w = worst(2, &[on(HOSTNAME, bound)], &slots(&nodes, "pve-01"));
            assert_eq!(
                w,
                Worst {
                    scheduled: 2,
                    on_host: 2
                },
                "{bound:?}"
            );
            assert_eq!(w.survivors(), 0);
            // A host with one node holds one of them.
            let w = worst(2, &[on(HOSTNAME, bound)], &slots(&nodes, "pve-02"));
            assert_eq!(w.survivors(), 1, "{bound:?}");
        }
    }

    #[test]
    fn host_label_anti_affinity_guarantees_distinct_hosts() {
        let nodes = four_on_three();
        let w = worst(2, &[on(ZONE, Bound::OnePerDomain)], &slots(&nodes, "pve-01"));
        assert_eq!(
            w,
            Worst {
                scheduled: 2,
                on_host: 1
            }
        );
        // Four replicas, three hosts: one stays pending, one is on the host.
        let w = worst(4, &[on(ZONE, Bound::OnePerDomain)], &slots(&nodes, "pve-01"));
        assert_eq!(
            w,
            Worst {
                scheduled: 3,
                on_host: 1
            }
        );
        // Both constraints: the tighter one holds.
        let both = [on(HOSTNAME, Bound::Skew(1)), on(ZONE, Bound::Skew(1))];
        assert_eq!(worst(2, &both, &slots(&nodes, "pve-01")).on_host, 1);
    }

    #[test]
    fn without_constraints_every_replica_may_share_one_node() {
        let nodes = four_on_three();
        assert_eq!(worst(3, &[], &slots(&nodes, "pve-03")).survivors(), 0);
        // A host none of whose nodes it may use takes nothing.
        let off: Vec<Labels> = nodes[..2].to_vec();
        assert_eq!(worst(3, &[], &slots(&off, "pve-03")).survivors(), 3);
        assert_eq!(worst(3, &[], &[]).scheduled, 0);
    }

    #[test]
    fn skew_bounds_the_host_share() {
        // (replicas, domains, host's domains, skew) -> most on the host.
        assert_eq!(most_in(2, 3, 1, 1), 1);
        assert_eq!(most_in(4, 3, 1, 1), 2);
        assert_eq!(most_in(5, 3, 1, 1), 2);
        assert_eq!(most_in(5, 4, 2, 1), 3);
        assert_eq!(most_in(2, 4, 2, 1), 2);
        assert_eq!(most_in(3, 3, 1, 2), 2);
        assert_eq!(most_in(6, 3, 3, 1), 6);
        assert_eq!(most_in(6, 3, 0, 1), 0);
    }

    #[test]
    fn a_key_some_node_lacks_guarantees_nothing() {
        let mut nodes = four_on_three();
        nodes[3].remove(ZONE);
        let w = worst(2, &[on(ZONE, Bound::OnePerDomain)], &slots(&nodes, "pve-01"));
        assert_eq!(w.survivors(), 0);
    }

    #[test]
    fn reads_constraints_that_select_the_pods() {
        let pods: Labels = [("app".to_owned(), "dns".to_owned())].into_iter().collect();
        let affinity = json!({"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "dns"}}},
                {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": {"app": "other"}}}
            ],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": {"app": "dns"}}}}
            ]
        }});
        let spread = json!([{"maxSkew": 2, "topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway",
                             "labelSelector": {"matchLabels": {"app": "dns"}}}]);
        let got = constraints(Some(&affinity), Some(&spread), None, &pods, true);
        assert_eq!(
            got,
            vec![
                on(ZONE, Bound::OnePerDomain),
                Constraint {
                    key: HOSTNAME.into(),
                    bound: Bound::Skew(1),
                    hard: false
                },
                Constraint {
                    key: HOSTNAME.into(),
                    bound: Bound::Skew(2),
                    hard: false
                },
            ]
        );
        // The chart's built-in spread applies only when both values are empty.
        let builtin = Some((SpreadKind::RequiredAntiAffinity, HOSTNAME));
        assert_eq!(
            constraints(Some(&json!({})), Some(&json!([])), builtin, &pods, false),
            vec![on(HOSTNAME, Bound::OnePerDomain)]
        );
        assert_eq!(constraints(Some(&affinity), None, builtin, &pods, true).len(), 2);
    }
}
