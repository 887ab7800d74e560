//! Kubernetes quantities (`100m`, `128Mi`, `1.5`) and the int-or-percent
//! bounds of PodDisruptionBudgets, scaled the way the disruption controller
//! scales them: both `minAvailable` and `maxUnavailable` percentages are
//! rounded up.

use serde_json::Value as J;

/// CPU in millicores.
pub fn cpu_milli(v: &J) -> Option<u64> {
    match v {
        J::Number(n) => n.as_f64().map(|f| (f * 1000.0).ceil() as u64),
        J::String(s) => {
            let s = s.trim();
            if let Some(m) = s.strip_suffix('m') {
                m.parse::<f64>().ok().map(|f| f.ceil() as u64)
            } else {
                bytes(s).map(|f| (f * 1000.0).ceil() as u64)
            }
        }
        _ => None,
    }
}

/// Memory in MiB (rounded up).
pub fn memory_mib(v: &J) -> Option<u64> {
    let b = match v {
        J::Number(n) => n.as_f64()?,
        J::String(s) => bytes(s.trim())?,
        _ => return None,
    };
    Some((b / (1024.0 * 1024.0)).ceil() as u64)
}

/// A quantity with an optional binary or decimal suffix, as a plain number.
fn bytes(s: &str) -> Option<f64> {
    const SUFFIXES: &[(&str, f64)] = &[
        ("Ki", 1024.0),
        ("Mi", 1_048_576.0),
        ("Gi", 1_073_741_824.0),
        ("Ti", 1_099_511_627_776.0),
        ("Pi", 1_125_899_906_842_624.0),
        ("Ei", 1_152_921_504_606_846_976.0),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    for (suffix, factor) in SUFFIXES {
        if let Some(n) = s.strip_suffix(suffix) {
            return n
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map(|f| f * factor);
        }
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite() && *f >= 0.0)
}

/// An int-or-string PDB bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntOrPercent {
    Int(i64),
    Percent(i64),
}

impl IntOrPercent {
    pub fn parse(v: &J) -> Result<IntOrPercent, String> {
        match v {
            J::Number(n) => n
                .as_i64()
                .filter(|i| *i >= 0)
                .map(IntOrPercent::Int)
                .ok_or_else(|| format!("`{n}` is not a non-negative integer")),
            J::String(s) => match s.strip_suffix('%') {
                Some(p) => p
                    .parse::<i64>()
                    .ok()
                    .filter(|p| (0..=100).contains(p))
                    .map(IntOrPercent::Percent)
                    .ok_or_else(|| format!("`{s}` is not a percentage between 0% and 100%")),
                None => Err(format!("`{s}` is neither an integer nor a percentage like 50%")),
            },
            other => Err(format!("`{other}` is neither an integer nor a percentage")),
        }
    }

    /// The absolute number for `total` pods, percentages rounded up
    /// (intstr.GetScaledValueFromIntOrPercent with roundUp = true).
    pub fn scaled(self, total: i64) -> i64 {
        match self {
            IntOrPercent::Int(i) => i,
            IntOrPercent::Percent(p) => (p * total + 99) / 100,
        }
    }
}

/// How many of `replicas` healthy pods a PDB lets be evicted at once.
pub fn allowed_disruptions(
    min_available: Option<IntOrPercent>,
    max_unavailable: Option<IntOrPercent>,
    replicas: i64,
) -> i64 {
    let desired_healthy = if let Some(mu) = max_unavailable {
        (replicas - mu.scaled(replicas)).max(0)
    } else if let Some(ma) = min_available {
        ma.scaled(replicas)
    } else {
        0
    };
    (replicas - desired_healthy).max(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quantities() {
        assert_eq!(cpu_milli(&json!("100m")), Some(100));
        assert_eq!(cpu_milli(&json!("0.5")), Some(500));
        assert_eq!(cpu_milli(&json!(2)), Some(2000));
        assert_eq!(memory_mib(&json!("128Mi")), Some(128));
        assert_eq!(memory_mib(&json!("1Gi")), Some(1024));
        assert_eq!(memory_mib(&json!("1G")), Some(954));
        assert_eq!(memory_mib(&json!("lots")), None);
    }

    #[test]
    fn pdb_percentages_round_up_like_kubernetes() {
        let p = |s: &str| IntOrPercent::parse(&json!(s)).unwrap();
        // minAvailable 50% of 3 -> 2 must stay, 1 may go.
        assert_eq!(allowed_disruptions(Some(p("50%")), None, 3), 1);
        // minAvailable 51% of 2 -> rounds up to 2: nothing may go.
        assert_eq!(allowed_disruptions(Some(p("51%")), None, 2), 0);
        // maxUnavailable 10% of 2 -> rounds up to 1.
        assert_eq!(allowed_disruptions(None, Some(p("10%")), 2), 1);
        assert_eq!(allowed_disruptions(None, Some(IntOrPercent::Int(0)), 2), 0);
        assert_eq!(allowed_disruptions(Some(IntOrPercent::Int(2)), None, 2), 0);
        assert_eq!(allowed_disruptions(Some(IntOrPercent::Int(1)), None, 2), 1);
        assert_eq!(allowed_disruptions(None, None, 2), 2);
        assert!(IntOrPercent::parse(&json!("150%")).is_err());
        assert!(IntOrPercent::parse(&json!(-1)).is_err());
    }
}
