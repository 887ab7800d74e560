//! Likely typos in values layers: a key that an environment or substrate
//! layer sets, that no lower layer and no chart default has, and that is a
//! letter or two away from a key that does exist at the same level
//! (`replcas: 2` next to the chart's `replicas`). Helm hands such a key to
//! the chart, which ignores it, so the layer silently changes nothing.
//!
//! What the chart has is read from its values.yaml when strata has the
//! chart, else from the paths its profile names; a component with neither
//! is not checked. Keys of maps that charts take as they are (labels,
//! annotations, environment variables, extra arguments, a map whose chart
//! default is `{}`) are never flagged.

/// Edit distance (a swap of two neighbouring letters is one edit), a
/// case-only difference counting as the nearest.
fn distance(a: &str, b: &str) -> usize {
    if a.to_lowercase() == b.to_lowercase() {
        0
    } else {
        strsim::osa_distance(a, b)
    }
}

/// The keys near `word`, nearest first, for suggestions: a case-only
/// difference, an edit distance up to a third of the word (at least 2), or
/// what [`crate::load::decode::suggest`] finds close.
pub fn near<'k>(word: &str, candidates: &[&'k str]) -> Vec<&'k str> {
    let limit = (word.chars().count() / 3).max(2);
    let liked = crate::load::decode::suggest(word, candidates);
    let mut out: Vec<(usize, &'k str)> = candidates
        .iter()
        .filter(|c| **c != word)
        .map(|c| (distance(word, c), *c))
        .filter(|(d, c)| *d <= limit || Some(*c) == liked)
        .collect();
    out.sort();
    out.into_iter().map(|(_, c)| c).collect()
}
