//! The human renderer: rustc-style snippets through annotate-snippets.

use annotate_snippets::{AnnotationKind, Element, Group, Level, Renderer, Snippet};

use super::{Diagnostic, Severity, Sources};
use crate::yaml::Origin;

/// Renders diagnostics for a terminal, optionally with colour. Their text
/// is scrubbed of secrets once more here, and snippets come from the
/// secret-free view of each file.
pub fn render_text(diags: &[Diagnostic], sources: &Sources, color: bool) -> String {
    let renderer = if color { Renderer::styled() } else { Renderer::plain() };
    let mut diags = diags.to_vec();
    super::scrub(&mut diags, sources);
    let mut out = String::new();
    for d in &diags {
        out.push_str(&render_one(d, sources, &renderer));
        out.push_str("\n\n");
    }
    out
}

/// The line of `origin` and the byte range of its text within that line.
fn excerpt(sources: &Sources, origin: &Origin) -> Option<(String, std::ops::Range<usize>)> {
    let text = sources.shown(&origin.file)?;
    let line = text.lines().nth(origin.line.checked_sub(1)? as usize)?.to_owned();
    let start = line
        .char_indices()
        .nth(origin.col.saturating_sub(1) as usize)
        .map_or(line.len(), |(i, _)| i);
    let len_chars = origin.len.max(1) as usize;
    let end = line[start..]
        .char_indices()
        .nth(len_chars)
        .map_or(line.len(), |(i, _)| start + i);
    Some((line, start..end.max(start)))
}

fn render_one(d: &Diagnostic, sources: &Sources, renderer: &Renderer) -> String {
    let level = match d.severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
        Severity::Note => Level::NOTE,
    };
    let title = match &d.env {
        Some(env) => format!("{} (environment {env})", d.message),
        None => d.message.clone(),
    };
    let excerpts: Vec<_> = std::iter::once((&d.origin, d.label.as_deref().unwrap_or("")))
        .chain(d.related.iter().map(|(o, l)| (o, l.as_str())))
        .map(|(o, l)| (o, l, excerpt(sources, o)))
        .collect();
    let mut elements: Vec<Element<'_>> = Vec::new();
    // annotate-snippets adds the line and column itself.
    let paths: Vec<String> = excerpts
        .iter()
        .map(|(o, _, ex)| {
            if ex.is_some() {
                o.file.to_string()
            } else {
                o.to_string()
            }
        })
        .collect();
    for (i, (origin, label, ex)) in excerpts.iter().enumerate() {
        match ex {
            Some((line, range)) => {
                let kind = if i == 0 {
                    AnnotationKind::Primary
                } else {
                    AnnotationKind::Context
                };
                elements.push(Element::from(
                    Snippet::source(line.as_str())
                        .line_start(origin.line as usize)
                        .path(paths[i].as_str())
                        .annotation(kind.span(range.clone()).label(*label)),
                ));
            }
            None => {
                let msg = if label.is_empty() {
                    format!("--> {}", paths[i])
                } else {
                    format!("--> {}: {label}", paths[i])
                };
                elements.push(Element::from(Level::NOTE.no_name().message(msg)));
            }
        }
    }
    for note in &d.notes {
        elements.push(Element::from(Level::NOTE.message(note.as_str())));
    }
    if let Some(help) = &d.help {
        elements.push(Element::from(Level::HELP.message(help.as_str())));
    }
    let group = Group::with_title(level.primary_title(title.as_str()).id(d.code)).elements(elements);
    let report: [Group<'_>; 1] = [group];
    renderer.render(&report).to_string()
}
