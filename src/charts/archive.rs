//! Reading a Helm chart without helm: its `Chart.yaml` (name, version,
//! dependencies with their aliases), its `values.yaml` (the chart's own
//! defaults), and a scan of its templates for what makes a render depend on
//! more than its values (`.Capabilities.APIVersions`) or differ between two
//! renders (random strings, generated certificates, the clock). Works on a
//! packaged archive (`.tgz`) and on a chart folder, and descends into the
//! subcharts bundled under `charts/`.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;

use serde_json::Value as J;

/// Largest total of uncompressed bytes read from one archive (a gzip bomb
/// stops here).
pub const MAX_UNPACKED: u64 = 256 * 1024 * 1024;
/// Most entries read from one archive.
pub const MAX_ENTRIES: usize = 50_000;
/// Deepest nesting of bundled subchart archives.
const MAX_NESTING: usize = 6;

/// Template functions whose output changes from one render to the next.
const UNSTABLE_FUNCS: &[&str] = &[
    "randAlphaNum",
    "randAlpha",
    "randNumeric",
    "randAscii",
    "randBytes",
    "randInt",
    "uuidv4",
    "genCA",
    "genCAWithKey",
    "genPrivateKey",
    "genSelfSignedCert",
    "genSelfSignedCertWithKey",
    "genSignedCert",
    "genSignedCertWithKey",
    "now",
    "htpasswd",
    "bcrypt",
    "shuffle",
];

/// A dependency as `Chart.yaml` (or a v1 chart's `requirements.yaml`) lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dependency {
    pub name: String,
    pub alias: Option<String>,
    pub repository: String,
    pub version: String,
    pub condition: Option<String>,
    /// `tags:`, switched by the top chart's `tags.<tag>` values.
    pub tags: Vec<String>,
}

impl Dependency {
    /// The key its values live under in the parent chart's values.
    pub fn values_key(&self) -> &str {
        self.alias.as_deref().unwrap_or(&self.name)
    }
}

/// What strata needs to know about a chart.
#[derive(Clone, Debug, Default)]
pub struct ChartInfo {
    pub name: String,
    pub version: String,
    pub dependencies: Vec<Dependency>,
    /// `values.yaml` as written (empty when the chart has none).
    pub values_text: Arc<str>,
    /// Some template refers to `.Capabilities.APIVersions`, so the API
    /// versions given to helm decide the output.
    pub uses_api_versions: bool,
    /// Templates that call a function whose output differs between renders,
    /// with the function.
    pub unstable: Vec<(String, String)>,
    /// Subcharts bundled under `charts/`, by chart name.
    pub subcharts: BTreeMap<String, ChartInfo>,
    /// API groups of the CustomResourceDefinitions the chart holds (in
    /// `crds/`, or in a template with the group written out): what ORD001
    /// knows of a chart that is not rendered.
    pub crd_groups: std::collections::BTreeSet<String>,
    /// `values.yaml`, parsed once.
    parsed: std::sync::OnceLock<J>,
    /// `values.yaml` with the place of every value, parsed when first asked.
    spanned: std::sync::OnceLock<Option<crate::yaml::Node>>,
}

impl ChartInfo {
    /// The chart's default values, parsed as Helm parses them.
    pub fn values(&self) -> &J {
        self.parsed.get_or_init(|| {
            if self.values_text.trim().is_empty() {
                return J::Object(Default::default());
            }
            let file: Arc<str> = Arc::from(format!("{}/values.yaml", self.name));
            crate::yaml::parse_plain_multi(&file, &self.values_text)
                .ok()
                .and_then(|mut docs| (!docs.is_empty()).then(|| docs.swap_remove(0)))
                .filter(J::is_object)
                .unwrap_or_else(|| J::Object(Default::default()))
        })
    }

    /// Where the chart's values.yaml writes the default at a dotted path
    /// (its places name the file `values.yaml`).
    pub fn default_node(&self, path: &str) -> Option<&crate::yaml::Node> {
        self.spanned
            .get_or_init(|| {
                let text = self.values_text.trim();
                (!text.is_empty())
                    .then(|| crate::yaml::parse(&Arc::from("values.yaml"), &self.values_text).ok())
                    .flatten()
            })
            .as_ref()?
            .get_path(path)
    }

    /// The chart's default at a dotted values path, if its values.yaml has one.
    pub fn default_at(&self, path: &str) -> Option<&J> {
        path.split('.')
            .filter(|k| !k.is_empty())
            .try_fold(self.values(), |v, k| v.as_object()?.get(k))
    }

    /// The chart a dependency's values key (its alias, or its name) names,
    /// among the bundled subcharts.
    pub fn subchart(&self, key: &str) -> Option<&ChartInfo> {
        let name = self
            .dependencies
            .iter()
            .find(|d| d.values_key() == key)
            .map_or(key, |d| d.name.as_str());
        self.subcharts.get(name)
    }

    /// Whether this chart or a bundled subchart refers to API versions.
    pub fn any_uses_api_versions(&self) -> bool {
        self.uses_api_versions || self.subcharts.values().any(ChartInfo::any_uses_api_versions)
    }

    /// Every unstable template of this chart and its subcharts.
    pub fn all_unstable(&self) -> Vec<(String, String)> {
        let mut out = self.unstable.clone();
        for s in self.subcharts.values() {
            out.extend(s.all_unstable());
        }
        out
    }
}

/// Reads a packaged chart (`.tgz`).
pub fn read_archive(bytes: &[u8]) -> Result<ChartInfo, String> {
    read_archive_at(bytes, 0, false)
}

/// Reads a chart archive from outside the store (`strata charts add`)
/// strictly: besides what [`read_archive`] refuses, no entry may be a
/// link or a device, and every entry lives under the one chart folder.
pub fn verify_archive(bytes: &[u8]) -> Result<ChartInfo, String> {
    read_archive_at(bytes, 0, true)
}

fn read_archive_at(bytes: &[u8], depth: usize, strict: bool) -> Result<ChartInfo, String> {
    if depth > MAX_NESTING {
        return Err("subcharts are nested too deeply".into());
    }
    from_files(&unpack(bytes, strict)?, depth)
}

/// The files of a packaged chart, by path relative to its chart folder,
/// within the limits on size and entries; `strict` as [`verify_archive`].
pub fn unpack(bytes: &[u8], strict: bool) -> Result<Vec<(String, Vec<u8>)>, String> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Err("not a gzip-compressed tar, which a chart archive (.tgz) is".into());
    }
    let gz = flate2::read::GzDecoder::new(bytes);
    let mut archive = tar::Archive::new(gz.take(MAX_UNPACKED + 1));
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut total: u64 = 0;
    let entries = archive
        .entries()
        .map_err(|e| format!("not a chart archive (gzip-compressed tar): {e}"))?;
    for (i, entry) in entries.enumerate() {
        if i >= MAX_ENTRIES {
            return Err(format!("the archive has more than {MAX_ENTRIES} entries"));
        }
        let mut entry = entry.map_err(|e| format!("a damaged archive: {e}"))?;
        let kind = entry.header().entry_type();
        let path = entry
            .path()
            .map_err(|e| format!("an entry with an unreadable name: {e}"))?
            .to_string_lossy()
            .replace('\\', "/");
        check_entry_path(&path)?;
        if !kind.is_file() {
            let harmless = kind.is_dir()
                || kind.is_pax_global_extensions()
                || kind.is_pax_local_extensions()
                || kind.is_gnu_longname()
                || kind.is_gnu_longlink();
            if strict && !harmless {
                return Err(format!("entry {path} is not a file or a folder (a link or a device)"));
            }
            continue;
        }
        total += entry.size();
        if total > MAX_UNPACKED {
            return Err(format!("the archive unpacks to more than {} MiB", MAX_UNPACKED >> 20));
        }
        let mut buf = Vec::with_capacity(entry.size().min(1 << 20) as usize);
        entry
            .read_to_end(&mut buf)
            .map_err(|e| format!("a damaged archive entry {path}: {e}"))?;
        files.push((path, buf));
    }
    // Every entry lives under the chart's own folder.
    let top = files
        .iter()
        .find_map(|(p, _)| p.strip_suffix("/Chart.yaml").filter(|t| !t.contains('/')))
        .ok_or("the archive holds no <chart>/Chart.yaml")?
        .to_owned();
    let prefix = format!("{top}/");
    if strict && let Some((p, _)) = files.iter().find(|(p, _)| !p.starts_with(&prefix)) {
        return Err(format!("entry {p} lies outside the chart folder {top}/"));
    }
    Ok(files
        .into_iter()
        .filter_map(|(p, b)| p.strip_prefix(&prefix).map(|r| (r.to_owned(), b)))
        .collect())
}

/// Reads a chart from its files, by path relative to the chart folder.
pub fn from_files(files: &[(String, Vec<u8>)], depth: usize) -> Result<ChartInfo, String> {
    let get = |name: &str| files.iter().find(|(p, _)| p == name).map(|(_, b)| b.as_slice());
    let chart_yaml = get("Chart.yaml").ok_or("the chart has no Chart.yaml")?;
    let chart_text = std::str::from_utf8(chart_yaml).map_err(|_| "Chart.yaml is not UTF-8")?;
    let meta = parse_plain(chart_text, "Chart.yaml")?;
    let field = |k: &str| match &meta[k] {
        J::String(s) => s.clone(),
        J::Number(n) => n.to_string(),
        _ => String::new(),
    };
    let mut info = ChartInfo {
        name: field("name"),
        version: field("version"),
        ..ChartInfo::default()
    };
    if info.name.is_empty() {
        return Err("Chart.yaml has no `name`".into());
    }
    let deps = match &meta["dependencies"] {
        J::Array(a) => a.clone(),
        _ => match get("requirements.yaml") {
            Some(r) => {
                let text = std::str::from_utf8(r).map_err(|_| "requirements.yaml is not UTF-8")?;
                match &parse_plain(text, "requirements.yaml")?["dependencies"] {
                    J::Array(a) => a.clone(),
                    _ => Vec::new(),
                }
            }
            None => Vec::new(),
        },
    };
    for d in deps {
        let s = |k: &str| d[k].as_str().map(str::to_owned);
        info.dependencies.push(Dependency {
            name: s("name").unwrap_or_default(),
            alias: s("alias").filter(|a| !a.is_empty()),
            repository: s("repository").unwrap_or_default(),
            version: match &d["version"] {
                J::String(v) => v.clone(),
                J::Number(n) => n.to_string(),
                _ => String::new(),
            },
            condition: s("condition"),
            tags: match &d["tags"] {
                J::Array(a) => a.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect(),
                _ => Vec::new(),
            },
        });
    }
    if let Some(v) = get("values.yaml") {
        info.values_text = Arc::from(String::from_utf8_lossy(v).as_ref());
    }
    for (path, bytes) in files {
        if path.starts_with("crds/") || path.starts_with("templates/") {
            info.crd_groups.extend(crd_groups(&String::from_utf8_lossy(bytes)));
        }
        if let Some(rest) = path.strip_prefix("templates/") {
            let text = String::from_utf8_lossy(bytes);
            if text.contains(".Capabilities.APIVersions") {
                info.uses_api_versions = true;
            }
            if let Some(f) = unstable_call(&text) {
                info.unstable
                    .push((format!("{}/templates/{rest}", info.name), f.to_owned()));
            }
        }
    }
    // Bundled subcharts: archives directly under charts/, or folders.
    let mut sub_dirs: BTreeMap<String, Vec<(String, Vec<u8>)>> = BTreeMap::new();
    for (path, bytes) in files {
        let Some(rest) = path.strip_prefix("charts/") else {
            continue;
        };
        match rest.split_once('/') {
            None if rest.ends_with(".tgz") => {
                let sub =
                    read_archive_at(bytes, depth + 1, false).map_err(|e| format!("subchart charts/{rest}: {e}"))?;
                info.subcharts.insert(sub.name.clone(), sub);
            }
            Some((dir, inner)) => sub_dirs
                .entry(dir.to_owned())
                .or_default()
                .push((inner.to_owned(), bytes.clone())),
            None => {}
        }
    }
    for (dir, sub_files) in sub_dirs {
        if depth + 1 > MAX_NESTING {
            return Err("subcharts are nested too deeply".into());
        }
        if sub_files.iter().any(|(p, _)| p == "Chart.yaml") {
            let sub = from_files(&sub_files, depth + 1).map_err(|e| format!("subchart charts/{dir}: {e}"))?;
            info.subcharts.insert(sub.name.clone(), sub);
        }
    }
    Ok(info)
}

/// The API groups a file of CustomResourceDefinitions writes out: the
/// `group:` lines of each document that is one (a template's computed
/// group is not known without rendering it).
fn crd_groups(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for doc in text.split("\n---") {
        if !doc.lines().any(|l| l.trim() == "kind: CustomResourceDefinition") {
            continue;
        }
        for l in doc.lines() {
            let Some(g) = l.trim().strip_prefix("group:") else {
                continue;
            };
            let g = g.trim().trim_matches(|c| c == '"' || c == '\'');
            let dns = !g.is_empty()
                && g.contains('.')
                && g.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
            if dns {
                out.push(g.to_owned());
            }
        }
    }
    out
}

/// An entry's path must stay inside the archive: relative, and without
/// `..` (helm refuses such a chart too).
fn check_entry_path(path: &str) -> Result<(), String> {
    let shown: String = path.chars().take(120).collect::<String>().escape_debug().to_string();
    if path.starts_with('/') || path.as_bytes().get(1) == Some(&b':') {
        return Err(format!("entry {shown} has an absolute path"));
    }
    if path.split('/').any(|p| p == "..") {
        return Err(format!("entry {shown} climbs out of the archive with `..`"));
    }
    Ok(())
}

fn parse_plain(text: &str, name: &str) -> Result<J, String> {
    let file: Arc<str> = Arc::from(name);
    let docs = crate::yaml::parse_plain_multi(&file, text).map_err(|e| format!("{name}: {}", e.message))?;
    Ok(docs.into_iter().next().unwrap_or(J::Null))
}

/// The first function of [`UNSTABLE_FUNCS`] a template calls, if any: the
/// name must stand as a word inside a template action.
fn unstable_call(text: &str) -> Option<&'static str> {
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let end = after.find("}}").unwrap_or(after.len());
        let action = &after[..end];
        if !action.trim_start_matches('-').trim_start().starts_with("/*") {
            for f in UNSTABLE_FUNCS {
                if has_word(action, f) {
                    return Some(f);
                }
            }
        }
        rest = &after[end.min(after.len())..];
    }
    None
}

fn has_word(haystack: &str, word: &str) -> bool {
    let bytes = haystack.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'$';
    let mut from = 0;
    while let Some(i) = haystack[from..].find(word) {
        let at = from + i;
        let before = at.checked_sub(1).map(|j| bytes[j]);
        let after = bytes.get(at + word.len()).copied();
        if !before.is_some_and(is_ident) && !after.is_some_and(is_ident) {
            return true;
        }
        from = at + word.len();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tgz(files: &[(&str, &str)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
        for (path, text) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(text.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, path, text.as_bytes()).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn reads_chart_dependencies_values_and_scans_templates() {
        let sub = tgz(&[
            ("sub/Chart.yaml", "apiVersion: v2\nname: sub\nversion: 0.2.0\n"),
            ("sub/templates/s.yaml", "x: {{ randAlphaNum 8 }}\n"),
        ]);
        let mut files = vec![
            ("web/Chart.yaml".to_owned(), b"apiVersion: v2\nname: web\nversion: 1.0.0\ndependencies:\n  - name: sub\n    alias: backend\n    version: ^0.2.0\n    repository: https://charts.example.com\n".to_vec()),
            ("web/values.yaml".to_owned(), b"replicas: 1\n".to_vec()),
            ("web/templates/d.yaml".to_owned(), b"{{ if .Capabilities.APIVersions.Has \"x/v1\" }}{{ end }}\nnow: today\n".to_vec()),
            ("web/charts/sub-0.2.0.tgz".to_owned(), sub),
        ];
        files.sort();
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
        for (p, b) in &files {
            let mut header = tar::Header::new_gnu();
            header.set_size(b.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, p, b.as_slice()).unwrap();
        }
        let bytes = builder.into_inner().unwrap().finish().unwrap();
        let info = read_archive(&bytes).unwrap();
        assert_eq!((info.name.as_str(), info.version.as_str()), ("web", "1.0.0"));
        assert_eq!(info.dependencies[0].values_key(), "backend");
        assert_eq!(info.values()["replicas"], 1);
        assert!(info.uses_api_versions);
        // `now` outside an action is text, not a call.
        assert!(info.unstable.is_empty());
        assert_eq!(
            info.all_unstable(),
            vec![("sub/templates/s.yaml".to_owned(), "randAlphaNum".to_owned())]
        );
    }

    #[test]
    fn refuses_what_is_not_a_chart() {
        assert!(read_archive(b"not gzip").is_err());
        assert!(read_archive(&tgz(&[("a/readme.txt", "x")])).is_err());
    }
}
