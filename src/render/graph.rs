//! The `requires` graph: every requirement must name a component, there must
//! be no cycle, and each component's depth (the longest chain of
//! requirements below it) gives its Argo CD sync wave.

use std::collections::BTreeMap;

use crate::diag::{Diagnostic, codes};
use crate::load::{Component, decode::suggest};

/// Depth of every component: 0 for one that requires nothing.
pub fn depths(components: &BTreeMap<String, Component>) -> Result<BTreeMap<String, u32>, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let names: Vec<&str> = components.keys().map(String::as_str).collect();
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
                let mut d = Diagnostic::error(
                    codes::GRAPH,
                    origin.clone(),
                    format!("component `{}` requires `{req}`, which is no component", c.name),
                )
                .with_label("no such component");
                d = match suggest(req, &names) {
                    Some(s) => d.with_help(format!("did you mean `{s}`?")),
                    None => d.with_help(format!("components: {}", names.join(", "))),
                };
                diags.push(d);
            }
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }

    // Depth-first search with colours; a grey node met again closes a cycle.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        White,
        Grey,
        Black,
    }
    let mut mark: BTreeMap<&str, Mark> = names.iter().map(|n| (*n, Mark::White)).collect();
    let mut depth: BTreeMap<String, u32> = BTreeMap::new();
    let mut reported: Vec<Vec<String>> = Vec::new();
    for start in &names {
        if mark[start] != Mark::White {
            continue;
        }
        // Iterative, so a long chain cannot overflow the stack.
        let mut stack: Vec<(&str, usize)> = vec![(start, 0)];
        mark.insert(start, Mark::Grey);
        while let Some((node, idx)) = stack.pop() {
            let reqs = &components[node].requires;
            if idx < reqs.len() {
                stack.push((node, idx + 1));
                let next = reqs[idx].0.as_str();
                match mark[next] {
                    Mark::White => {
                        mark.insert(next, Mark::Grey);
                        stack.push((next, 0));
                    }
                    Mark::Grey => {
                        let pos = stack.iter().position(|(n, _)| *n == next).unwrap_or(0);
                        let mut cycle: Vec<String> = stack[pos..].iter().map(|(n, _)| n.to_string()).collect();
                        cycle.push(next.to_owned());
                        // Report each cycle once, from its smallest member.
                        let mut key = cycle[..cycle.len() - 1].to_vec();
                        key.sort();
                        if !reported.contains(&key) {
                            reported.push(key);
                            let origin = reqs[idx].1.clone();
                            diags.push(
                                Diagnostic::error(
                                    codes::GRAPH,
                                    origin,
                                    format!("`requires` forms a cycle: {}", cycle.join(" -> ")),
                                )
                                .with_label("this requirement closes the cycle")
                                .with_help("remove one requirement of the cycle; a component cannot wait for itself"),
                            );
                        }
                    }
                    Mark::Black => {}
                }
            } else {
                mark.insert(node, Mark::Black);
                let d = reqs
                    .iter()
                    .filter_map(|(r, _)| depth.get(r))
                    .map(|d| d + 1)
                    .max()
                    .unwrap_or(0);
                depth.insert(node.to_owned(), d);
            }
        }
    }
    if diags.is_empty() { Ok(depth) } else { Err(diags) }
}
