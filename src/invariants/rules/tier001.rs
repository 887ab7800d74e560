//! TIER001: a core component requires an addon.

use crate::invariants::{Ctx, Finding, Sink};
use crate::load::Tier;

pub const NAME: &str = "core-requires-addon";

doc!(
    r#"## What it does
Flags a component with `tier: core` whose `requires` names a component with
`tier: addon`. Core components are the platform's foundation (network,
storage, DNS); they come up first and must not wait for anything optional.

## Why is this bad?
An environment may take the core tier alone (`components: {include:
["tier:core"]}`), which leaves the addon out and fails the render; where
both are deployed, the foundation waits for an optional component, so a
broken addon blocks the CNI or the storage from converging, and
`dependsOn` in Flux and sync waves in Argo CD order them the wrong way.

## Example
```yaml
# gitops/platform/longhorn/config.yaml
tier: core
requires: [cilium, monitoring]   # monitoring is an addon
```

Use instead:
```yaml
tier: core
requires: [cilium]
```
and let the addon require the core component instead, or make the required
component core too.
"#
);

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    for c in ctx.platform.components_in(ctx.env).filter(|c| c.tier == Tier::Core) {
        for (req, origin) in &c.requires {
            let Some(r) = ctx.platform.components.get(req) else {
                continue;
            };
            if r.tier != Tier::Addon {
                continue;
            }
            let mut f = Finding::new(
                origin.clone(),
                format!("core component `{}` requires `{req}`, an addon", c.name),
            )
            .label("an addon")
            .help(format!(
                "drop `{req}` from the requires of `{}`, or make `{req}` core (`tier: core` in {})",
                c.name,
                r.config_path()
            ))
            .component(&c.name);
            if let Some((_, o)) = &r.tier_text {
                f = f.related(o.clone(), format!("`{req}` is an addon"));
            }
            sink.push(f);
        }
    }
}
