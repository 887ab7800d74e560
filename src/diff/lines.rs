//! The edit script between the lines of two texts, in bounded work, so
//! that a very large object cannot make a diff slow.

use similar::{Algorithm, DiffOp};

use super::{DIFF_STEPS, DIFF_STEPS_PER_LINE};

/// The edit script between two texts' lines, within a bounded amount of
/// work: the common start and end are taken off in one pass, Myers'
/// algorithm diffs what fits the budget, and a larger stretch is split at
/// lines that occur once on each side (in the longest run that keeps their
/// order, as patience diff does). A stretch with no such line, or past the
/// budget, is replaced whole; the second value says whether that happened.
/// The same inputs always give the same script.
pub(super) fn line_ops(old: &[&str], new: &[&str]) -> (Vec<DiffOp>, bool) {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let mut work = LineDiff {
        old,
        new,
        budget: DIFF_STEPS.saturating_add(DIFF_STEPS_PER_LINE.saturating_mul(old.len() + new.len())),
        ops: Vec::new(),
        coarse: false,
    };
    work.equal(0, 0, prefix);
    work.range(prefix..old.len() - suffix, prefix..new.len() - suffix, 0);
    work.equal(old.len() - suffix, new.len() - suffix, suffix);
    (merge_ops(work.ops), work.coarse)
}

struct LineDiff<'a, 'b> {
    old: &'a [&'b str],
    new: &'a [&'b str],
    budget: usize,
    ops: Vec<DiffOp>,
    coarse: bool,
}

impl LineDiff<'_, '_> {
    /// How deep stretches are split at unique lines before the rest is
    /// replaced whole.
    const MAX_SPLITS: usize = 8;

    fn equal(&mut self, old_index: usize, new_index: usize, len: usize) {
        if len > 0 {
            self.ops.push(DiffOp::Equal {
                old_index,
                new_index,
                len,
            });
        }
    }

    fn replace(&mut self, o: std::ops::Range<usize>, n: std::ops::Range<usize>) {
        if !o.is_empty() {
            self.ops.push(DiffOp::Delete {
                old_index: o.start,
                old_len: o.len(),
                new_index: n.start,
            });
        }
        if !n.is_empty() {
            self.ops.push(DiffOp::Insert {
                old_index: o.end,
                new_index: n.start,
                new_len: n.len(),
            });
        }
    }

    fn range(&mut self, o: std::ops::Range<usize>, n: std::ops::Range<usize>, depth: usize) {
        if o.is_empty() || n.is_empty() {
            return self.replace(o, n);
        }
        let grid = (o.len() + 1).saturating_mul(n.len() + 1);
        if grid <= self.budget {
            self.budget -= grid;
            self.ops
                .extend(similar::capture_diff(Algorithm::Myers, self.old, o, self.new, n));
            return;
        }
        let anchors = if depth < Self::MAX_SPLITS {
            unique_anchors(&self.old[o.clone()], &self.new[n.clone()])
        } else {
            Vec::new()
        };
        if anchors.is_empty() {
            self.coarse = true;
            return self.replace(o, n);
        }
        let (mut i, mut j) = (o.start, n.start);
        for (a, b) in anchors {
            let (a, b) = (o.start + a, n.start + b);
            self.range(i..a, j..b, depth + 1);
            self.equal(a, b, 1);
            (i, j) = (a + 1, b + 1);
        }
        self.range(i..o.end, j..n.end, depth + 1);
    }
}

/// Lines that occur exactly once in `old` and once in `new`, as (old, new)
/// index pairs: the longest run of them in the same order on both sides.
fn unique_anchors(old: &[&str], new: &[&str]) -> Vec<(usize, usize)> {
    use std::collections::HashMap;
    // (count in old, index in old, count in new, index in new)
    let mut seen: HashMap<&str, (u32, usize, u32, usize)> = HashMap::with_capacity(old.len() + new.len());
    for (i, l) in old.iter().enumerate() {
        let e = seen.entry(l).or_insert((0, i, 0, 0));
        e.0 += 1;
    }
    for (j, l) in new.iter().enumerate() {
        if let Some(e) = seen.get_mut(l) {
            e.2 += 1;
            e.3 = j;
        }
    }
    // In old order, so that nothing depends on the hash map's order.
    let pairs: Vec<(usize, usize)> = old
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let &(co, io, cn, jn) = seen.get(l)?;
            (co == 1 && cn == 1 && io == i).then_some((i, jn))
        })
        .collect();
    // Longest increasing run of new indices (patience sorting).
    let mut tails: Vec<usize> = Vec::new(); // index into pairs
    let mut prev: Vec<Option<usize>> = vec![None; pairs.len()];
    for (k, &(_, j)) in pairs.iter().enumerate() {
        let pos = tails.partition_point(|&t| pairs[t].1 < j);
        if pos > 0 {
            prev[k] = Some(tails[pos - 1]);
        }
        if pos == tails.len() {
            tails.push(k);
        } else {
            tails[pos] = k;
        }
    }
    let mut out = Vec::with_capacity(tails.len());
    let mut at = tails.last().copied();
    while let Some(k) = at {
        out.push(pairs[k]);
        at = prev[k];
    }
    out.reverse();
    out
}

/// Joins neighbouring operations of the same kind, so that hunks group as
/// they would from one diff.
fn merge_ops(ops: Vec<DiffOp>) -> Vec<DiffOp> {
    let mut out: Vec<DiffOp> = Vec::with_capacity(ops.len());
    for op in ops {
        let merged = match (out.last_mut(), op) {
            (
                Some(DiffOp::Equal {
                    old_index,
                    new_index,
                    len,
                }),
                DiffOp::Equal {
                    old_index: o,
                    new_index: n,
                    len: l,
                },
            ) if *old_index + *len == o && *new_index + *len == n => {
                *len += l;
                true
            }
            _ => false,
        };
        if !merged {
            out.push(op);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use similar::{ChangeTag, DiffOp};

    use super::line_ops;

    /// Applies an edit script to `old`, to check that it gives `new`.
    fn apply(ops: &[DiffOp], old: &[&str], new: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        for op in ops {
            for c in op.iter_changes(old, new) {
                if c.tag() != ChangeTag::Delete {
                    out.push(c.value().to_owned());
                }
            }
        }
        out
    }

    #[test]
    fn a_long_list_where_every_item_changed_is_diffed_in_bounded_work() {
        let n = 200_000;
        let old: Vec<String> = (0..n).map(|i| format!("- item-{i}\n")).collect();
        let new: Vec<String> = (0..n).map(|i| format!("- other-{i}\n")).collect();
        let (old, new): (Vec<&str>, Vec<&str>) = (
            old.iter().map(String::as_str).collect(),
            new.iter().map(String::as_str).collect(),
        );
        let started = std::time::Instant::now();
        let (ops, coarse) = line_ops(&old, &new);
        assert!(coarse);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(apply(&ops, &old, &new), new);
        // Reversed: every line still there, none in order.
        let rev: Vec<&str> = old.iter().rev().copied().collect();
        let (ops, _) = line_ops(&old, &rev);
        assert_eq!(apply(&ops, &old, &rev), rev);
    }

    #[test]
    fn far_apart_changes_in_a_large_object_stay_small() {
        let old: Vec<String> = (0..100_000).map(|i| format!("key{i}: {i}\n")).collect();
        let mut new = old.clone();
        new[10] = "key10: changed\n".into();
        new[90_000] = "key90000: changed\n".into();
        let (old, new): (Vec<&str>, Vec<&str>) = (
            old.iter().map(String::as_str).collect(),
            new.iter().map(String::as_str).collect(),
        );
        let (ops, coarse) = line_ops(&old, &new);
        assert!(!coarse);
        assert_eq!(apply(&ops, &old, &new), new);
        let changed: usize = ops
            .iter()
            .filter(|o| !matches!(o, DiffOp::Equal { .. }))
            .map(|o| o.old_range().len() + o.new_range().len())
            .sum();
        assert_eq!(changed, 4);
    }
}
