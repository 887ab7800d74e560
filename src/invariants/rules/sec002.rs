//! SEC002: a contract in the repository holds a sensitive output's value.

use crate::invariants::{Ctx, Finding, Sink};

pub const NAME: &str = "sensitive-value-in-committed-contract";

doc!(
    r#"## What it does
Flags each sensitive output (`"sensitive": true`) whose value the
environment's contract file holds, at the line of the value. A contract
strata reads from the repository is committed with it, unless git ignores
the file; only one git ignores (written in CI by `tofu output -json >
FILE`, say) may hold values. The finding names the output, never its value.

## Why is this bad?
What is committed is published to everyone who can read the repository,
and stays in its history after the file is changed. strata never renders a
sensitive output, so the value does nothing in the file: rules and
references need only to know that the output exists and is sensitive.

## Example
```json
{
  "client_key": {
    "sensitive": true,
    "type": "string",
    "value": "-----BEGIN EC PRIVATE KEY-----\n..."
  }
}
```

Use instead:
```sh
tofu output -json | strata contract import --env staging -
```
which writes the output as its name, type and `sensitive: true`:
```json
{
  "client_key": {
    "sensitive": true,
    "type": "string"
  }
}
```
If the file was pushed, the value is in the history: rotate the
credential, then rewrite the history (`git filter-repo`) and force-push.
"#
);

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    let contract = &ctx.env.contract;
    for (name, origin) in &contract.held {
        sink.push(
            Finding::new(
                origin.clone(),
                format!(
                    "contract {} holds the value of the sensitive output `{name}`",
                    contract.file
                ),
            )
            .label("the value is here (not shown)")
            .note("a committed value is published with the repository and stays in its history")
            .help(format!(
                "write the contract with `tofu output -json | strata contract import --env {} -`, which keeps `{name}` as its name, type and `sensitive: true`; if the file was pushed, rotate the credential and rewrite the history (`git filter-repo`)",
                ctx.env.name
            ))
            .object(format!("contract/{name}")),
        );
    }
}
