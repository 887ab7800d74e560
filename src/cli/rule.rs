//! `strata rule [CODE]`: list the invariant rules, or print one rule's
//! documentation. Needs no repository.

use clap::Args;

use super::exit;
use crate::diag::RuleMeta;
use crate::invariants::registry::{self, RULES};

#[derive(Args, Debug)]
pub struct RuleArgs {
    /// The rule to explain, e.g. NET001 (default: list every rule)
    #[arg(value_name = "CODE")]
    pub code: Option<String>,
}

/// Every rule's metadata, for the SARIF renderer.
pub fn metadata() -> Vec<RuleMeta> {
    RULES
        .iter()
        .map(|r| RuleMeta {
            id: r.code,
            name: r.name,
            summary: r.summary,
            help: r.doc,
        })
        .collect()
}

pub fn run(args: &RuleArgs) -> i32 {
    let Some(code) = &args.code else {
        let width = RULES.iter().map(|r| r.name.len()).max().unwrap_or(0);
        for r in RULES {
            println!("{:<8} {:<width$}  {}", r.code, r.name, r.summary);
        }
        return exit::OK;
    };
    let rule = registry::find(code).or_else(|| RULES.iter().find(|r| r.name == code.as_str()));
    match rule {
        Some(r) => {
            println!("{} ({}): {}\n", r.code, r.name, r.summary);
            print!("{}", r.doc);
            if !r.topology {
                println!("\nThis rule applies on every topology, `single` included.");
            }
            exit::OK
        }
        None => {
            let known: Vec<&str> = RULES
                .iter()
                .map(|r| r.code)
                .chain(RULES.iter().map(|r| r.name))
                .collect();
            let upper = code.to_ascii_uppercase();
            eprintln!("error: no rule `{code}`");
            match crate::load::decode::suggest(&upper, &known).or_else(|| crate::load::decode::suggest(code, &known)) {
                Some(s) => eprintln!("  = help: did you mean `{s}`? `strata rule` lists every rule"),
                None => eprintln!("  = help: `strata rule` lists every rule"),
            }
            exit::INPUT
        }
    }
}
