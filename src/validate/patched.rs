//! The line behind a value that a `patches:` operation wrote into an object
//! strata generates: the operation whose JSON pointer leads to (or into)
//! the problem's place, and within its `value` the node at the rest of the
//! path. The last such operation wins, as it is the one applied last.

use super::Item;
use super::locate;
use super::message::{Problem, Seg};
use crate::load::Platform;
use crate::load::component::Patch;
use crate::yaml::{Node, Origin, Value};

/// The tokens of an RFC 6901 JSON pointer.
fn tokens(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

fn same_step(token: &str, seg: &Seg) -> bool {
    match seg {
        Seg::Key(k) => k == token,
        Seg::Index(i) => token.parse::<usize>().is_ok_and(|t| t == *i),
    }
}

/// The origin, in one patch, of the value at `p`'s place.
fn in_patch(patch: &Patch, p: &Problem) -> Option<Origin> {
    let Value::Seq(ops) = &patch.node.value else {
        return None;
    };
    let mut found = None;
    for op in ops {
        let writes = matches!(op.get("op").and_then(Node::as_str), Some("add" | "replace"));
        let (Some(path), Some(value)) = (op.get("path").and_then(Node::as_str), op.get("value")) else {
            continue;
        };
        if !writes {
            continue;
        }
        let tokens = tokens(path);
        if tokens.len() > p.path.len() || !tokens.iter().zip(&p.path).all(|(t, s)| same_step(t, s)) {
            continue;
        }
        let rest = Problem {
            path: p.path[tokens.len()..].to_vec(),
            ..p.clone()
        };
        found = Some(locate::origin_in(value, &rest));
    }
    found
}

/// The patch line that wrote the value at `p` in a generated object, when
/// a patch did.
pub(super) fn origin(platform: &Platform, item: &Item<'_>, p: &Problem) -> Option<Origin> {
    let env = platform.environments.get(item.env)?;
    let obj = item.obj;
    let patches: Vec<&Patch> = match item.component {
        Some(c) => crate::render::patches_of(c, env).filter(|x| x.on_generated()).collect(),
        None => env.patches.iter().filter(|x| x.component.is_none()).collect(),
    };
    patches
        .into_iter()
        .rev()
        .filter(|x| x.targets(obj.kind(), obj.name(), obj.namespace()))
        .find_map(|x| in_patch(x, p))
}
