//! Unit tests of the secrets module: recognition in every form, and
//! redaction of parsed values and printed text.

use std::sync::Arc;

use super::encode::{STD, URL, base64, base64_decode, encodings};
use super::{MARK, Secrets, Sensitive, hidden_lines, redact_for_display};
use crate::yaml::Node;

fn node(text: &str) -> Node {
    crate::yaml::parse(&Arc::from("c.yaml"), text).unwrap()
}

fn secrets_of(value: &str) -> Secrets {
    let v = node(value);
    let public = node("endpoint: https://10.0.0.1:6443\n");
    Secrets::of_contract(
        "contracts/c.json",
        &[Sensitive {
            name: "s",
            value: &v,
            ty: None,
        }],
        &public,
    )
}

#[test]
fn base64_matches_a_reference() {
    assert_eq!(base64(b"", STD), "");
    assert_eq!(base64(b"f", STD), "Zg==");
    assert_eq!(base64(b"fo", STD), "Zm8=");
    assert_eq!(base64(b"foobar", STD), "Zm9vYmFy");
    assert_eq!(base64(&[0xfb, 0xff], URL), "-_8=");
    for text in ["", "f", "fo", "foo", "foobar", "a longer text, with ünïcode"] {
        assert_eq!(
            base64_decode(&base64(text.as_bytes(), STD)).as_deref(),
            Some(text.as_bytes())
        );
    }
    assert_eq!(base64_decode("Zm9v\nYmFy").as_deref(), Some(&b"foobar"[..]));
    assert!(base64_decode("not base64!").is_none());
}

#[test]
fn texts_hidden_as_secrets_are_long_enough_to_search_for() {
    let s = Secrets::of_texts("the data of a Secret", ["hunter2-long".to_owned(), "true".to_owned()]);
    assert!(s.holds("x hunter2-long y"));
    assert!(!s.holds("true"));
    assert!(Secrets::of_texts("none", ["abc".to_owned()]).is_empty());
}

#[test]
fn base64_of_a_secret_is_found_inside_longer_base64_at_any_alignment() {
    let s = secrets_of("\"hunter2-very-secret\"");
    for prefix in ["", "x", "xy", "some text before: "] {
        let whole = format!("{prefix}hunter2-very-secret and after");
        for table in [STD, URL] {
            let enc = base64(whole.as_bytes(), table);
            assert!(s.holds(&enc), "{prefix:?} {enc}");
            assert_ne!(s.redact_text(&enc), enc);
        }
    }
    assert!(!s.holds(&base64(b"hunter3-very-secret and after", STD)));
    // The whole encoded run is hidden, not only the part that depends
    // on the secret alone.
    let enc = base64(b"user:hunter2-very-secret", URL);
    assert_eq!(s.redact_text(&format!("b64: {enc} end")), format!("b64: {MARK} end"));
}

#[test]
fn every_encoding_is_found_and_redacted() {
    let secret = "Sx-\"q\\t\"\ttab\u{1b}<&>\u{2028}é";
    let s = secrets_of(&serde_json::to_string(secret).unwrap());
    for e in encodings(secret) {
        let text = format!("before {e} after");
        let red = s.redact_text(&text);
        assert_eq!(red, format!("before {MARK} after"), "{e:?}");
    }
    // As Go writes it inside JSON inside JSON (an annotation in a JSON document).
    let inner = serde_json::to_string(&serde_json::json!({"k": secret})).unwrap();
    let outer = serde_json::to_string(&inner).unwrap();
    assert!(s.text_holds(&outer), "{outer}");
}

#[test]
fn only_the_occurrence_is_redacted() {
    let s = secrets_of("\"p4ssw0rd-XYZ\"");
    assert_eq!(
        s.redact_text("`a`: expected an integer, found the string \"p4ssw0rd-XYZ\""),
        format!("`a`: expected an integer, found the string \"{MARK}\"")
    );
    assert_eq!(s.redact_text("nothing here"), "nothing here");
}

#[test]
fn a_value_cut_short_by_an_ellipsis_is_redacted() {
    let long = "A".repeat(10) + &"0123456789abcdef".repeat(5);
    let s = secrets_of(&format!("\"{long}\""));
    let cut: String = long.chars().take(60).collect();
    let msg = format!("found the string \"{cut}…\"");
    assert_eq!(s.redact_text(&msg), format!("found the string \"{MARK}\""));
}

#[test]
fn short_secrets_match_whole_values_and_quoted_text_only() {
    let s = secrets_of("{pin: 4711, code: ab}");
    assert!(s.holds("ab") && s.holds("4711"));
    assert!(!s.holds("about") && !s.holds("47110"));
    assert!(s.is_number_secret(&serde_json::Number::from(4711)));
    assert_eq!(s.redact_text("found \"ab\" in a tab"), format!("found {MARK} in a tab"));
    // From four characters, a short secret is hidden as a word too.
    assert_eq!(
        s.redact_text("expected a string, found 4711"),
        format!("expected a string, found {MARK}")
    );
    assert_eq!(s.redact_text("port 47110 and x4711"), "port 47110 and x4711");
    // Keys of a sensitive mapping are secrets too.
    assert!(s.holds("code") && s.holds("pin"));
}

#[test]
fn declared_attribute_names_and_published_texts_are_not_secrets() {
    let v = node("{host: https://10.0.0.1:6443, password: correct-horse}");
    let ty = node("[object, {host: string, password: string}]");
    let public = node("endpoint: https://10.0.0.1:6443\n");
    let s = Secrets::of_contract(
        "c.json",
        &[Sensitive {
            name: "db",
            value: &v,
            ty: Some(&ty),
        }],
        &public,
    );
    assert!(s.holds("correct-horse"));
    assert!(!s.holds("password") && !s.holds("host"));
    assert!(!s.holds("https://10.0.0.1:6443"));
    assert_eq!(s.outputs().collect::<Vec<_>>(), ["`db` of c.json"]);
}

#[test]
fn lines_of_a_multi_line_secret_are_searched_but_armour_and_short_lines_are_not() {
    let pem = "\"-----BEGIN KEY-----\\nMIIBfakeLINEofBASE64text0123\\nshort\\n-----END KEY-----\\n\"";
    let s = secrets_of(pem);
    assert!(s.text_holds("  MIIBfakeLINEofBASE64text0123"));
    assert!(!s.text_holds("-----BEGIN KEY-----"));
    assert!(!s.text_holds("short"));
    assert!(!format!("{s:?}").contains("MIIB"));
}

#[test]
fn snippets_hide_every_line_a_secret_spans() {
    let s = secrets_of("\"one two three four five six\"");
    let text = "a: 1\nfolded: >-\n  one two three\n  four five six\nb: 2\nc: \"one two\n  three four five six\"\n";
    let hidden = hidden_lines(text, &s);
    assert_eq!(hidden.into_iter().collect::<Vec<_>>(), [3, 4, 6, 7]);
}

#[test]
fn secret_shaped_content_is_hidden_at_any_depth_and_inside_text() {
    let annotation = serde_json::to_string(&serde_json::json!({
        "apiVersion": "v1", "kind": "Secret", "stringData": {"password": "hunter2-plain"}
    }))
    .unwrap();
    let v = serde_json::json!({
        "kind": "HelmRelease",
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": annotation}},
        "spec": {"values": {
            "extraObjects": [{"apiVersion": "v1", "kind": "Secret", "data": {"token": "c2VjcmV0"}}],
            "asText": "- apiVersion: v1\n  kind: Secret\n  stringData:\n    token: {{ .Values.token }}-raw\n",
            "yamlText": "apiVersion: v1\nkind: Secret\nstringData:\n  key: yaml-secret-value\n",
        }}
    });
    let (red, hidden) = redact_for_display(&v, &Secrets::default()).unwrap();
    let text = serde_json::to_string(&red).unwrap();
    for leak in ["hunter2-plain", "c2VjcmV0", "-raw", "yaml-secret-value"] {
        assert!(!text.contains(leak), "{leak}: {text}");
    }
    assert!(
        hidden.data.contains_key("spec.values.extraObjects[0].data.token"),
        "{hidden:?}"
    );
    assert_eq!(hidden.data.len(), 4, "{hidden:?}");
    assert!(hidden.sensitive.is_empty());
    // Nothing to hide: no copy.
    assert!(
        redact_for_display(
            &serde_json::json!({"kind": "ConfigMap", "data": {"a": "b"}}),
            &Secrets::default()
        )
        .is_none()
    );
}

#[test]
fn secrets_are_taken_out_of_values_keys_and_numbers() {
    let s = secrets_of("{token: abcdef-123456, pin: 4711}");
    let mut v = serde_json::json!({"a": "Bearer abcdef-123456", "abcdef-123456": 1, "n": 4711, "m": 47});
    assert!(s.redact_json(&mut v));
    let text = v.to_string();
    assert!(!text.contains("abcdef-123456") && !text.contains("4711"), "{text}");
    assert!(text.contains("47"));
}

#[test]
fn union_keeps_every_set() {
    let a = secrets_of("\"first-secret-value\"");
    let b = secrets_of("\"second-secret-value\"");
    let u = Secrets::union([&a, &b]);
    assert!(u.holds("x first-secret-value") && u.holds("second-secret-value"));
    assert!(Secrets::union([]).is_empty());
}

#[test]
fn a_secret_written_over_lines_is_hidden_whole() {
    let secret = "correct horse battery staple riding the long road home to the cabin by the lake";
    let s = secrets_of(&serde_json::to_string(secret).unwrap());
    // Folded at a space by a YAML writer, as in a values text.
    let folded =
        "a: 1\nleak: >-\n  correct horse battery staple riding the long road home to the cabin by\n  the lake\nb: 2\n";
    assert_eq!(s.redact_text(folded), format!("a: 1\nleak: >-\n  {MARK}\nb: 2\n"));
    assert!(s.holds(folded));
    // The same text held in a JSON or YAML string, its line breaks escaped.
    let escaped = serde_json::to_string(folded).unwrap();
    assert!(s.holds(&escaped));
    assert!(
        !s.redact_text(&escaped).contains("the lake"),
        "{}",
        s.redact_text(&escaped)
    );
    // Parsed values that hold such a text are taken out of it.
    let mut v = serde_json::json!({"spec": {"source": {"helm": {"values": folded}}}});
    assert!(s.redact_json(&mut v));
    assert!(!v.to_string().contains("the lake"), "{v}");
    // A multi-line secret of short lines, in a literal block.
    let lit = secrets_of("\"short line a1\\nshort line b2\\n\"");
    let text = "x: |\n    short line a1\n    short line b2\ny: 1\n";
    assert_eq!(lit.redact_text(text), format!("x: |\n    {MARK}\ny: 1\n"));
    // Whitespace only counts where the secret has it.
    assert!(!s.holds("correcthorse batterystaple riding the long road home to the cabin by the lake"));
    assert!(!lit.holds("short line a1"));
}
