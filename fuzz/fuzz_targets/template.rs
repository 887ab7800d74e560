//! Rendering a component's manifest template: any template source must
//! render within the fuel and output limits or fail with an error at the
//! template, and its output must parse or fail with a placed error. Never a
//! panic, a hang or unbounded memory.

#![no_main]

use std::collections::BTreeMap;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata::render::templates;

const NAME: &str = "gitops/platform/app/manifests/fuzz.yaml.j2";

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else { return };
    let overrides = BTreeMap::new();
    let engine = match templates::engine(&overrides, "templates", &[(NAME, source)]) {
        Ok(e) => e,
        Err(d) => {
            assert!(d.origin.line >= 1, "{d:?}");
            return;
        }
    };
    let ctx = serde_json::json!({
        "env": "staging",
        "substrate": "kind",
        "contract": {"substrate": "kind", "cluster_name": "staging", "network": {"cidr": "10.0.0.0/24"}},
        "values": {"replicaCount": 2, "image": {"tag": "v1"}, "list": [1, 2, 3], "text": "a\nb\n"},
        "component": {"component": "app", "namespace": "app", "requires": ["db"]},
    });
    let ctx = minijinja::Value::from(minijinja::value::Serde(&ctx));
    match templates::render(&engine, NAME, ctx) {
        Ok(text) => {
            assert!(text.len() <= templates::MAX_OUTPUT_BYTES);
            let file: Arc<str> = Arc::from(NAME);
            if let Err(e) = strata::yaml::parse_multi(&file, &text) {
                assert!(e.origin.line >= 1 && e.origin.col >= 1, "{e:?}");
            }
        }
        Err(e) => {
            let d = templates::template_error(NAME, &e);
            assert!(d.origin.line >= 1 && !d.message.is_empty(), "{d:?}");
        }
    }
});
