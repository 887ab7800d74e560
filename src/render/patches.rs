//! RFC 6902 patches from config.yaml and the environment on the objects
//! strata generates for a component.

use super::Object;
use crate::diag::{Diagnostic, codes};
use crate::load::{Component, Environment};
use crate::yaml::{self};

/// Applies the RFC 6902 patches of a component (its config.yaml and the
/// environment's) to one object strata generated for it. A patch may
/// change the values: an object with deferred values gets them first.
pub(super) fn apply_patches(c: Option<&Component>, env: &Environment, object: &mut Object) -> Result<(), Diagnostic> {
    let kind = object.kind().to_owned();
    let name = object.name().to_owned();
    let own = c.map(|c| c.patches.as_slice()).unwrap_or_default();
    let from_env = env
        .patches
        .iter()
        .filter(|p| p.component.as_deref().is_none_or(|x| c.is_some_and(|c| c.name == x)));
    let mut patches = own
        .iter()
        .chain(from_env)
        .filter(|p| p.kind == kind && p.name.as_ref().is_none_or(|n| *n == name))
        .peekable();
    if patches.peek().is_some() {
        object.materialize();
    }
    let value = &mut object.value;
    for p in patches {
        let patch: json_patch::Patch = match serde_json::from_value(p.ops.clone()) {
            Ok(x) => x,
            Err(e) => {
                return Err(
                    Diagnostic::error(codes::PATCH, p.origin.clone(), format!("not an RFC 6902 patch: {e}")).with_help(
                        "each operation is {op: add|remove|replace|move|copy|test, path: /json/pointer, value|from: …}",
                    ),
                );
            }
        };
        if let Err(e) = json_patch::patch(value, &patch) {
            let at = match &p.node.value {
                yaml::Value::Seq(items) => items
                    .get(e.operation)
                    .map_or_else(|| p.origin.clone(), |n| n.origin.clone()),
                _ => p.origin.clone(),
            };
            return Err(Diagnostic::error(
                codes::PATCH,
                at,
                format!("the patch cannot be applied to {kind}/{name}: {}", e.kind),
            )
            .with_label("this operation")
            .with_help("check the JSON pointer against the generated object: `strata render` writes it under rendered/")
            .in_env(&env.name));
        }
    }
    Ok(())
}
