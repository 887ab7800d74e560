//! One entry for the same change in several environments. A change to a
//! component's base values, or a chart bump, usually reaches every
//! environment alike; a reviewer reads it once, with the environments it
//! reaches named, and reads apart only what differs.

use std::collections::BTreeMap;

/// Items that read the same but for their environment, in one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Folded<'a, T> {
    /// The environments, in order.
    pub envs: Vec<&'a str>,
    /// The first item (the others differ only in their environment).
    pub item: &'a T,
    /// Every item of the entry, in the order of `envs`.
    pub all: Vec<&'a T>,
}

/// Folds `items` whose `key` is equal into one entry each, in the order of
/// their keys; `env` names each item's environment.
pub fn fold<'a, T, K: Ord>(
    items: &'a [T],
    env: impl Fn(&'a T) -> &'a str,
    key: impl Fn(&'a T) -> K,
) -> Vec<Folded<'a, T>> {
    let mut groups: BTreeMap<K, Folded<'a, T>> = BTreeMap::new();
    for item in items {
        let e = env(item);
        let g = groups.entry(key(item)).or_insert_with(|| Folded {
            envs: Vec::new(),
            item,
            all: Vec::new(),
        });
        if !g.envs.contains(&e) {
            g.envs.push(e);
        }
        g.all.push(item);
    }
    groups.into_values().collect()
}

/// `staging, production`, or `every environment` when they are all of
/// `of` and there is more than one.
pub fn envs_text(envs: &[&str], of: usize) -> String {
    if envs.len() > 1 && envs.len() == of {
        format!("every environment ({})", envs.join(", "))
    } else {
        envs.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_fold_and_keep_their_environments_in_order() {
        let items = [("prod", "a"), ("dev", "a"), ("dev", "b")];
        let f = fold(&items, |i| i.0, |i| i.1);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].envs, ["prod", "dev"]);
        assert_eq!(f[1].envs, ["dev"]);
        assert_eq!(envs_text(&f[0].envs, 2), "every environment (prod, dev)");
        assert_eq!(envs_text(&f[0].envs, 3), "prod, dev");
    }
}
