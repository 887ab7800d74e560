//! New platforms: the skeleton `strata init` writes — a `strata.yaml`, one
//! component, one environment and a contract template — and the careful
//! writer it and `strata import` share, which never replaces a user's file
//! and never writes outside the folder it was given.

mod skeleton;
pub mod write;

pub use write::{NewFile, Refusal, check_empty_of_platform, write_new};

/// The substrate types a skeleton can be written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Substrate {
    Kind,
    Talos,
}

impl Substrate {
    pub fn name(self) -> &'static str {
        match self {
            Substrate::Kind => "kind",
            Substrate::Talos => "talos",
        }
    }

    /// The first environment's name: a kind cluster is for development,
    /// a Talos cluster's first environment is its staging.
    pub fn env(self) -> &'static str {
        match self {
            Substrate::Kind => "dev",
            Substrate::Talos => "staging",
        }
    }
}

/// The one component a skeleton has.
pub const COMPONENT: &str = "hello";

/// The files of a new platform on `substrate`, relative to its root.
pub fn skeleton(substrate: Substrate) -> Vec<NewFile> {
    let env = substrate.env();
    let dir = format!("gitops/platform/{COMPONENT}");
    vec![
        NewFile::new(crate::load::project::FILE, skeleton::STRATA_YAML),
        NewFile::new(format!("{dir}/config.yaml"), skeleton::CONFIG_YAML),
        NewFile::new(format!("{dir}/values.yaml"), skeleton::VALUES_YAML),
        NewFile::new(format!("{dir}/values-{env}.yaml"), skeleton::env_values(env)),
        NewFile::new(
            format!("{dir}/manifests/configmap-{COMPONENT}.yaml.j2"),
            skeleton::MANIFEST,
        ),
        NewFile::new(format!("environments/{env}.yaml"), skeleton::environment(substrate)),
        NewFile::new(format!("contracts/{env}.yaml"), skeleton::contract(substrate)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_a_skeleton_is_yaml() {
        for s in [Substrate::Kind, Substrate::Talos] {
            for f in skeleton(s) {
                if f.path.ends_with(".j2") {
                    continue;
                }
                let name = std::sync::Arc::from(f.path.as_str());
                crate::yaml::parse(&name, &f.text()).unwrap_or_else(|e| panic!("{}: {e:?}", f.path));
            }
        }
    }
}
