//! One release rendered with values of the caller's choosing, uncached:
//! what `strata explain` renders a chart with, once with the merged values
//! and once with one value changed, to see which rendered fields that value
//! reaches. The same command line as inflation (see [`super::helm_args`]).

use serde_json::Value as J;

use super::{Job, Settings, env_api_versions, helm_args, kube_version, output};
use crate::charts::Ready;
use crate::load::Platform;
use crate::profiles::version_origin;
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
    let job = Job {
        component: &c.name,
        namespace: &c.namespace,
        ready,
        values: serde_json::to_vec(values).map_err(|e| e.to_string())?,
        api_versions: ready.info.any_uses_api_versions().then(|| env_api_versions(r).0),
        origin: version_origin(c),
    };
    let kube = kube_version(&platform.project.kubernetes_version);
    let chart = ready.path.to_string_lossy().into_owned();
    let args = helm_args(&kube, &job, &chart);
    let out = helm.run(&args, Some(&job.values), false).map_err(|e| e.to_string())?;
    output::parse(&String::from_utf8_lossy(&out))
}
