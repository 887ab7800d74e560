//! One release rendered with values of the caller's choosing, uncached:
//! what `strata explain` renders a chart with, once with the merged values
//! and once with one value changed, to see which rendered fields that value
//! reaches. The same command line as inflation (see [`crate::helm::Template::args`]).

use serde_json::Value as J;

use super::{Settings, env_api_versions, kube_version, output};
use crate::charts::Ready;
use crate::helm::Runner;
use crate::load::Platform;
use crate::render::EnvRender;

/// Renders the chart of `component`, as inflating environment `r` does,
/// with `values` in place of its merged values: the objects helm prints,
/// with their templates, before strata places them.
pub fn render_with(
    settings: &Settings,
    platform: &Platform,
    r: &EnvRender,
    component: &str,
    ready: &Ready,
    values: &J,
) -> Result<Vec<output::Rendered>, String> {
    let path = settings.helm.as_ref().ok_or("helm is not on the PATH")?;
    let root = settings.state_root.as_ref().ok_or("no chart store")?;
    let home = root.join(crate::charts::STATE_DIR).join("helm");
    let helm = crate::helm::Helm::new(path, &home, None).map_err(|e| e.to_string())?;
    let c = platform
        .components
        .get(component)
        .ok_or_else(|| format!("no component {component}"))?;
    let api_versions = ready
        .info
        .any_uses_api_versions()
        .then(|| env_api_versions(r, &platform.project.crds_provided).0);
    let values = serde_json::to_vec(values).map_err(|e| e.to_string())?;
    let kube = kube_version(&platform.project.kubernetes_version);
    let template = crate::helm::Template {
        release: &c.name,
        chart: &ready.path,
        namespace: &c.namespace,
        kube_version: &kube,
        api_versions: api_versions.as_deref(),
        values: &values,
    };
    let out = helm
        .with_limits(settings.helm_limits)
        .template(&template)
        .map_err(|e| e.to_string())?;
    output::parse(&out)
}
