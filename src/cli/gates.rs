//! `strata gates`: the rollout status of each decision record, computed
//! from the platform; `--check` compares it with the record, `--write`
//! updates the record's boxes and count.

use std::fmt::Write as _;

use clap::Args;

use super::{Context, exit};
use crate::gates::{self, Disagreement, GateState, Reason, RecordState};
use crate::pipeline::{self, Options};

#[derive(Args, Debug)]
pub struct GatesArgs {
    /// Exit 1 when a record's boxes or `Rollout: N of M gates` disagree
    /// with the computed state (for pre-commit and CI); write nothing
    #[arg(long, conflicts_with = "write")]
    pub check: bool,
    /// Rewrite each record's boxes and count to the computed state, and
    /// nothing else of it
    #[arg(long)]
    pub write: bool,
    #[command(flatten)]
    pub schema: super::SchemaArgs,
}

fn reason_line(r: &Reason) -> String {
    let mut s = format!("{}: {}", r.origin, r.source);
    if let Some(env) = &r.env {
        let _ = write!(s, " ({env})");
    }
    let _ = write!(s, ": {}", r.message);
    if let Some(l) = &r.label {
        let _ = write!(s, " [{l}]");
    }
    if let Some(w) = &r.waived {
        let _ = write!(s, "; {w}");
    }
    s
}

fn gate_lines(path: &str, g: &GateState, out: &mut String) {
    let mark = if g.done { "x" } else { " " };
    let _ = writeln!(out, "  [{mark}] {}  ({path}:{})", g.text, g.line);
    if g.done {
        if !g.judged.is_empty() {
            let _ = writeln!(out, "      passes: {}", g.judged.join("; "));
        }
        return;
    }
    for r in &g.reasons {
        let _ = writeln!(out, "      {}", reason_line(r));
    }
}

/// The report of one record, as `strata gates` prints it.
pub fn report(r: &RecordState) -> String {
    let mut out = String::new();
    let (done, total) = (r.done(), r.total());
    let _ = write!(out, "{}: Rollout: {done} of {total} gates", r.path);
    let says: Vec<(usize, usize)> = r.record.counts.iter().map(|c| (c.done, c.total)).collect();
    if says.iter().any(|s| *s != (done, total))
        && let Some((d, t)) = says.first()
    {
        let _ = write!(out, " (the record says {d} of {t})");
    }
    out.push('\n');
    for g in &r.gates {
        gate_lines(&r.path, g, &mut out);
    }
    out
}

fn disagreement_line(path: &str, d: &Disagreement) -> String {
    match d {
        Disagreement::Box { line, text, checked } => {
            if *checked {
                format!("{path}:{line}: the box of `{text}` is checked, but the gate is open")
            } else {
                format!("{path}:{line}: the box of `{text}` is not checked, but the gate is done")
            }
        }
        Disagreement::Count {
            line,
            says,
            done,
            total,
        } => format!(
            "{path}:{line}: says `Rollout: {} of {} gates`, but {done} of {total} gates are done",
            says.0, says.1
        ),
    }
}

/// The absolute path of a record, refused when it leaves the repository.
fn record_path(ctx: &Context, rel: &str) -> Result<std::path::PathBuf, String> {
    let p = ctx.root.join(rel);
    let real = p.canonicalize().map_err(|e| format!("{rel}: {e}"))?;
    if real.starts_with(&ctx.root) {
        Ok(real)
    } else {
        Err(format!("{rel} leads outside the repository, to {}", real.display()))
    }
}

pub fn run(ctx: &Context, args: &GatesArgs) -> i32 {
    let opts = Options {
        env: None,
        target: None,
        schemas: args.schema.settings(),
        inflate: ctx.inflate.clone(),
        layout: ctx.layout(None),
        ..Options::default()
    };
    let compiled = match pipeline::compile(&ctx.world, &ctx.sources, &opts) {
        Ok(c) => c,
        Err(mut d) => {
            ctx.report(&mut d);
            return exit::INPUT;
        }
    };
    let records = match gates::evaluate(&ctx.world, &ctx.sources, &compiled) {
        Ok(r) => r,
        Err(mut d) => {
            ctx.report(&mut d);
            return exit::INPUT;
        }
    };
    let mut stale = false;
    for r in &records {
        if !ctx.quiet {
            print!("{}", report(r));
        }
        let disagreements = r.disagreements();
        if disagreements.is_empty() {
            continue;
        }
        if args.write {
            let written = record_path(ctx, &r.path).and_then(|p| {
                crate::world::disk::replace_file(&p, r.rewritten().as_bytes()).map_err(|e| format!("{}: {e}", r.path))
            });
            match written {
                Ok(()) => ctx.info(&format!(
                    "wrote {}: {} box(es) and count(s) set to {} of {} gates",
                    r.path,
                    disagreements.len(),
                    r.done(),
                    r.total()
                )),
                Err(e) => {
                    eprintln!("error: cannot write the record {e}");
                    return exit::INPUT;
                }
            }
        } else if args.check {
            stale = true;
            for d in &disagreements {
                eprintln!("error: {}", disagreement_line(&r.path, d));
            }
        }
    }
    if stale {
        eprintln!("  = help: run `strata gates --write` to set the records to what strata computes");
        return exit::FINDINGS;
    }
    exit::OK
}
