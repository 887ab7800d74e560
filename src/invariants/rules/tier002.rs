//! TIER002: a component's tier is neither core nor addon.

use crate::invariants::{Ctx, Finding, Sink};

pub const NAME: &str = "unknown-tier";

doc!(
    r#"## What it does
Flags a component whose `tier:` is neither `core` nor `addon`. strata
renders such a component as an addon.

## Why is this bad?
Tiers decide what an environment takes (`tier:core`), what may require what
(TIER001), and what survives deletion: core components are never
cascade-deleted (no Argo CD resources finalizer, `deletionPolicy: Orphan` on
Flux). A misspelled `tier: cor` silently turns the CNI into an addon that
deleting its Application would uninstall.

## Example
```yaml
# gitops/platform/cilium/config.yaml
tier: foundation
```

Use instead:
```yaml
tier: core
```
"#
);

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    for c in ctx.platform.components_in(ctx.env) {
        let Some((t, origin)) = &c.tier_text else { continue };
        if t == "core" || t == "addon" {
            continue;
        }
        let suggestion = crate::load::decode::suggest(t, &["core", "addon"]).unwrap_or("core` or `addon");
        sink.push(
            Finding::new(
                origin.clone(),
                format!("component `{}` has tier `{t}`; tiers are core and addon", c.name),
            )
            .label("not a tier")
            .note("strata renders it as an addon: deleting it cascades to what it deployed")
            .help(format!("write `tier: {suggestion}` in {}", c.config_path()))
            .component(&c.name),
        );
    }
}
