//! `--shard K/N`: the K-th of N shares of a platform's environments, so that
//! a CI matrix of N jobs, job K running `--shard K/N`, covers every
//! environment exactly once.
//!
//! An environment's share is decided by its name alone: the first eight
//! bytes of the sha256 of the name, read as a big-endian number, modulo N,
//! plus one (`printf %s prod | sha256sum` shows the digest). Adding or
//! removing an environment moves no other environment to another share, and
//! every job of a matrix computes the same shares without seeing the others.
//! Changing N reshuffles the shares. Shares are not balanced: with few
//! environments one may be empty (its job then compiles nothing, and says
//! so).

use sha2::{Digest, Sha256};

/// The K-th of N shares, K counted from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub k: u32,
    pub n: u32,
}

/// The most shares a platform can be split into.
pub const MAX_SHARDS: u32 = 1024;

impl Shard {
    /// Whether environment `name` is in this share.
    pub fn holds(&self, name: &str) -> bool {
        share_of(name, self.n) == self.k
    }

    /// The environments of `names` in this share, in their order.
    pub fn select<'a>(&self, names: &'a [String]) -> Vec<&'a String> {
        names.iter().filter(|n| self.holds(n)).collect()
    }
}

/// The share (from 1 to `n`) environment `name` falls into.
pub fn share_of(name: &str, n: u32) -> u32 {
    let digest = Sha256::digest(name.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(first) % u64::from(n.max(1))) as u32 + 1
}

impl std::str::FromStr for Shard {
    type Err = String;

    /// `K/N`, 1 ≤ K ≤ N ≤ [`MAX_SHARDS`].
    fn from_str(s: &str) -> Result<Shard, String> {
        let usage = || format!("`{s}` is not K/N (e.g. 2/4: the second of four shares)");
        let (k, n) = s.trim().split_once('/').ok_or_else(usage)?;
        let k: u32 = k.trim().parse().map_err(|_| usage())?;
        let n: u32 = n.trim().parse().map_err(|_| usage())?;
        if n == 0 || n > MAX_SHARDS {
            return Err(format!("N must be from 1 to {MAX_SHARDS}, not {n}"));
        }
        if k == 0 || k > n {
            return Err(format!(
                "K counts from 1 to N ({n}): the shares are 1/{n} to {n}/{n}, not {k}/{n}"
            ));
        }
        Ok(Shard { k, n })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(count: usize) -> Vec<String> {
        (0..count).map(|i| format!("env-{i:03}")).collect()
    }

    #[test]
    fn the_shares_cover_every_environment_exactly_once() {
        let envs = names(200);
        for n in [1, 2, 3, 4, 7, 16] {
            let mut all: Vec<&String> = (1..=n).flat_map(|k| Shard { k, n }.select(&envs)).collect();
            all.sort();
            assert_eq!(all, envs.iter().collect::<Vec<_>>(), "n = {n}");
        }
    }

    #[test]
    fn adding_an_environment_moves_no_other() {
        let before = names(50);
        let mut after = before.clone();
        after.extend(["aaa".to_owned(), "edge-eu".to_owned(), "zzz".to_owned()]);
        after.sort();
        for n in [2, 3, 5] {
            for k in 1..=n {
                let shard = Shard { k, n };
                let was = shard.select(&before);
                let now = shard.select(&after);
                let new: Vec<&&String> = now.iter().filter(|e| !was.contains(e)).collect();
                assert!(was.iter().all(|e| now.contains(e)), "{shard}: {was:?} -> {now:?}");
                assert!(new.iter().all(|e| !before.contains(e)), "{shard}: {new:?}");
            }
        }
    }

    #[test]
    fn the_shares_are_a_fixed_function_of_the_name() {
        // Fixed here, so that changing the function shows: jobs of one CI
        // matrix running different strata versions would otherwise skip or
        // repeat environments.
        assert_eq!(
            ["dev", "staging", "production", "edge"].map(|e| share_of(e, 4)),
            [4, 1, 2, 3]
        );
    }

    #[test]
    fn the_shares_are_roughly_even() {
        let envs = names(1000);
        for k in 1..=4 {
            let held = envs.iter().filter(|e| Shard { k, n: 4 }.holds(e)).count();
            assert!((200..=300).contains(&held), "share {k}/4 holds {held}");
        }
    }

    #[test]
    fn k_of_n_is_read_and_checked() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { k: 2, n: 4 }));
        assert_eq!(" 1/1 ".parse::<Shard>(), Ok(Shard { k: 1, n: 1 }));
        assert!("0/4".parse::<Shard>().unwrap_err().contains("from 1"));
        assert!("5/4".parse::<Shard>().is_err());
        assert!("1/0".parse::<Shard>().is_err());
        assert!("2".parse::<Shard>().is_err());
        assert!("a/b".parse::<Shard>().is_err());
        assert_eq!(Shard { k: 3, n: 8 }.to_string(), "3/8");
    }
}
