//! Reading what `helm template` prints: a stream of YAML documents, each
//! after a `# Source: <chart>/templates/<file>` line, into objects that
//! remember their template.

use std::sync::Arc;

use serde_json::Value as J;

/// One object a chart renders.
#[derive(Clone, Debug, PartialEq)]
pub struct Rendered {
    pub value: J,
    /// The chart template it came from (`# Source:`), e.g. `web/templates/deployment.yaml`.
    pub template: String,
}

/// Splits helm's output into objects. `List` objects are flattened into
/// their items, as kubectl and the GitOps engines do.
pub fn parse(text: &str) -> Result<Vec<Rendered>, String> {
    let mut out = Vec::new();
    let mut source = String::new();
    let mut block = String::new();
    let flush = |block: &mut String, source: &str, out: &mut Vec<Rendered>| -> Result<(), String> {
        if block.trim().is_empty() {
            block.clear();
            return Ok(());
        }
        let file: Arc<str> = Arc::from(if source.is_empty() { "<helm output>" } else { source });
        let docs = crate::yaml::parse_plain_multi(&file, block).map_err(|e| {
            format!(
                "the chart rendered YAML that does not parse ({source}, line {} of that document): {}",
                e.origin.line, e.message
            )
        })?;
        block.clear();
        for doc in docs {
            match doc {
                J::Null => {}
                J::Object(_) => push(doc, source, out)?,
                other => {
                    return Err(format!(
                        "the chart rendered a document that is not a Kubernetes object ({source}): {}",
                        crate::diag::found(&other)
                    ));
                }
            }
        }
        Ok(())
    };
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end();
        if bare == "---" || bare.starts_with("--- ") {
            flush(&mut block, &source, &mut out)?;
            continue;
        }
        if let Some(s) = bare.strip_prefix("# Source: ") {
            // A new template starts; a previous block without a separator ends here.
            if !block.trim().is_empty()
                && block
                    .lines()
                    .any(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
            {
                flush(&mut block, &source, &mut out)?;
            }
            source = s.trim().to_owned();
            continue;
        }
        block.push_str(line);
    }
    flush(&mut block, &source, &mut out)?;
    Ok(out)
}

fn push(doc: J, source: &str, out: &mut Vec<Rendered>) -> Result<(), String> {
    let kind = doc["kind"].as_str().unwrap_or("");
    if kind == "List" || (kind.ends_with("List") && doc["items"].is_array()) {
        if let J::Array(items) = &doc["items"] {
            for i in items {
                if i.is_object() {
                    push(i.clone(), source, out)?;
                }
            }
        }
        return Ok(());
    }
    let named = |p: &str| doc.pointer(p).and_then(J::as_str).is_some_and(|s| !s.is_empty());
    if !(named("/apiVersion") && named("/kind")) {
        return Err(format!(
            "the chart rendered an object without apiVersion or kind ({source})"
        ));
    }
    out.push(Rendered {
        value: doc,
        template: source.to_owned(),
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_documents_and_keeps_sources() {
        let text = "---\n# Source: web/templates/sa.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n---\n# Source: web/templates/two.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  on: yes\n---\n# Source: web/templates/empty.yaml\n\n";
        let objs = parse(text).unwrap();
        assert_eq!(objs.len(), 3);
        assert_eq!(objs[0].template, "web/templates/sa.yaml");
        assert_eq!(objs[2].template, "web/templates/two.yaml");
        // Helm's YAML 1.1 reading.
        assert_eq!(objs[2].value["data"]["on"], true);
    }

    #[test]
    fn lists_are_flattened_and_junk_is_refused() {
        let text = "# Source: x/templates/l.yaml\napiVersion: v1\nkind: List\nitems:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n";
        assert_eq!(parse(text).unwrap().len(), 1);
        assert!(parse("# Source: x/templates/s.yaml\n- a\n").is_err());
        assert!(parse("# Source: x/templates/s.yaml\nfoo: bar\n").is_err());
    }
}
