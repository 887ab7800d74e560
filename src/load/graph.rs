//! The `requires` graph: every requirement must name a component, there must
//! be no cycle, and each component's depth (the longest chain of
//! requirements below it) gives its Argo CD sync wave.
//!
//! Every pass is linear in the components and requirements, and what is
//! reported about a broken graph is bounded: a platform where every
//! component requires every other one gets a handful of diagnostics and a
//! count, not one per edge.

use std::collections::BTreeMap;

use crate::diag::{Diagnostic, codes};
use crate::load::Component;
use crate::load::decode::{list_names, suggest};
use crate::yaml::Origin;

/// The most diagnostics of one kind (unknown requirements, cycles) reported
/// in full; the rest are counted in one more.
pub const MAX_REPORTED: usize = 10;

/// Depth of every component: 0 for one that requires nothing.
pub fn depths(components: &BTreeMap<String, Component>) -> Result<BTreeMap<String, u32>, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let names: Vec<&str> = components.keys().map(String::as_str).collect();
    let mut unknown = 0usize;
    let mut first_unknown: Option<Origin> = None;
    for c in components.values() {
        for (req, origin) in &c.requires {
            if req == &c.name {
                diags.push(
                    Diagnostic::error(
                        codes::GRAPH,
                        origin.clone(),
                        format!("component `{}` requires itself", c.name),
                    )
                    .with_label("remove this entry"),
                );
            } else if !components.contains_key(req) {
                unknown += 1;
                if unknown > MAX_REPORTED {
                    first_unknown.get_or_insert_with(|| origin.clone());
                    continue;
                }
                let mut d = Diagnostic::error(
                    codes::GRAPH,
                    origin.clone(),
                    format!("component `{}` requires `{req}`, which is no component", c.name),
                )
                .with_label("no such component");
                d = match suggest(req, &names) {
                    Some(s) => d.with_help(format!("did you mean `{s}`?")),
                    None => d.with_help(format!("components: {}", list_names(names.iter().copied(), ", "))),
                };
                diags.push(d);
            }
        }
    }
    if let Some(origin) = first_unknown {
        diags.push(
            Diagnostic::error(
                codes::GRAPH,
                origin,
                format!(
                    "{} more requirement(s) name no component; the first is here",
                    unknown - MAX_REPORTED
                ),
            )
            .with_help("each name under `requires` must be a component folder of the platform"),
        );
    }
    if !diags.is_empty() {
        return Err(diags);
    }

    // Index the graph once: node i requires edges[i].
    let index: BTreeMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let edges: Vec<Vec<usize>> = components
        .values()
        .map(|c| c.requires.iter().map(|(r, _)| index[r.as_str()]).collect())
        .collect();
    let components_vec: Vec<&Component> = components.values().collect();

    let sccs = strongly_connected(&edges);
    let cyclic: Vec<&Vec<usize>> = sccs.iter().filter(|s| s.len() > 1).collect();
    if !cyclic.is_empty() {
        let in_cycles: usize = cyclic.iter().map(|s| s.len()).sum();
        for scc in cyclic.iter().take(MAX_REPORTED) {
            diags.push(cycle_diagnostic(scc, &edges, &components_vec, &names));
        }
        if cyclic.len() > MAX_REPORTED {
            let rest = &cyclic[MAX_REPORTED..];
            let first = &components_vec[rest[0][0]];
            diags.push(
                Diagnostic::error(
                    codes::GRAPH,
                    first.origin(),
                    format!(
                        "{} more group(s) of components require each other in a cycle ({in_cycles} components in cycles in all)",
                        rest.len()
                    ),
                )
                .with_help("remove one requirement of each cycle; a component cannot wait for itself"),
            );
        }
        return Err(diags);
    }

    // No cycle: the strongly connected components come out of Tarjan's
    // algorithm in reverse topological order (requirements first).
    let mut depth = vec![0u32; names.len()];
    for scc in &sccs {
        let node = scc[0];
        depth[node] = edges[node].iter().map(|r| depth[*r] + 1).max().unwrap_or(0);
    }
    Ok(names.iter().zip(depth).map(|(n, d)| ((*n).to_owned(), d)).collect())
}

/// One cycle of a strongly connected group, found by a breadth-first search
/// from its first member back to itself, reported at the requirement that
/// closes it.
fn cycle_diagnostic(scc: &[usize], edges: &[Vec<usize>], components: &[&Component], names: &[&str]) -> Diagnostic {
    let mut member = vec![false; edges.len()];
    for &n in scc {
        member[n] = true;
    }
    let start = *scc.iter().min().unwrap_or(&0);
    // parent[n] = (previous node, index of the requirement in it).
    let mut parent: Vec<Option<(usize, usize)>> = vec![None; edges.len()];
    let mut queue = std::collections::VecDeque::from([start]);
    let mut closing: Option<(usize, usize)> = None;
    'search: while let Some(n) = queue.pop_front() {
        for (i, &next) in edges[n].iter().enumerate() {
            if !member[next] {
                continue;
            }
            if next == start {
                closing = Some((n, i));
                break 'search;
            }
            if parent[next].is_none() {
                parent[next] = Some((n, i));
                queue.push_back(next);
            }
        }
    }
    let Some((last, req)) = closing else {
        // Unreachable for a strongly connected group; report the group.
        return Diagnostic::error(
            codes::GRAPH,
            components[start].origin(),
            format!(
                "`requires` forms a cycle among {}",
                list_names(scc.iter().map(|n| names[*n]), ", ")
            ),
        );
    };
    let mut path = vec![last];
    let mut at = last;
    while let Some((p, _)) = parent[at] {
        path.push(p);
        at = p;
    }
    path.reverse();
    path.push(start);
    let shown = list_names(path.iter().map(|n| names[*n]), " -> ");
    let shown = if path.len() > crate::load::decode::MAX_NAMES {
        format!("{shown} -> {}", names[start])
    } else {
        shown
    };
    let origin = components[last].requires[req].1.clone();
    let mut d = Diagnostic::error(codes::GRAPH, origin, format!("`requires` forms a cycle: {shown}"))
        .with_label("this requirement closes the cycle")
        .with_help("remove one requirement of the cycle; a component cannot wait for itself");
    if scc.len() > path.len() - 1 {
        d = d.with_note(format!(
            "{} components require each other, directly or not: {}",
            scc.len(),
            list_names(scc.iter().map(|n| names[*n]), ", ")
        ));
    }
    d
}

/// Tarjan's strongly connected components, iteratively (a long chain of
/// requirements cannot overflow the stack). Each group is sorted; groups
/// come out in reverse topological order.
fn strongly_connected(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let n = edges.len();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    let mut next_index = 0;
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        let mut work: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some(&(v, i)) = work.last() {
            if i == 0 && index[v] == UNSEEN {
                index[v] = next_index;
                low[v] = next_index;
                next_index += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = edges[v].get(i) {
                if let Some(top) = work.last_mut() {
                    top.1 += 1;
                }
                if index[w] == UNSEEN {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut group = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    group.push(w);
                    if w == v {
                        break;
                    }
                }
                group.sort_unstable();
                out.push(group);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_come_requirements_first() {
        // 0 -> 1 -> 2, and 3 <-> 4.
        let edges = vec![vec![1], vec![2], vec![], vec![4], vec![3]];
        let g = strongly_connected(&edges);
        assert_eq!(g, vec![vec![2], vec![1], vec![0], vec![3, 4]]);
    }

    #[test]
    fn a_long_chain_does_not_overflow() {
        let n = 200_000;
        let edges: Vec<Vec<usize>> = (0..n).map(|i| if i + 1 < n { vec![i + 1] } else { vec![] }).collect();
        assert_eq!(strongly_connected(&edges).len(), n);
    }

    #[test]
    fn names_are_bounded() {
        let many: Vec<String> = (0..100).map(|i| format!("c{i}")).collect();
        let s = list_names(many.iter().map(String::as_str), ", ");
        assert!(s.ends_with("… (88 more)"), "{s}");
        assert_eq!(list_names(["a", "b"].into_iter(), " -> "), "a -> b");
    }
}
