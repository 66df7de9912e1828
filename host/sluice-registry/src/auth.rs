//! Registry credentials: from the environment (`SLUICE_REGISTRY_USERNAME` and
//! `SLUICE_REGISTRY_PASSWORD`), else the docker config file (`$DOCKER_CONFIG/config.json`,
//! else `~/.docker/config.json`, with its credential helpers), else anonymous. Secrets are
//! never logged: [`Credentials`]'s `Debug` shows only the kind and the user name.

use docker_credential::{CredentialRetrievalError, DockerCredential};
use oci_client::secrets::RegistryAuth;

/// The variable holding the user name for every registry Sluice pulls from.
pub const ENV_USERNAME: &str = "SLUICE_REGISTRY_USERNAME";

/// The variable holding the password (or token) that goes with [`ENV_USERNAME`].
pub const ENV_PASSWORD: &str = "SLUICE_REGISTRY_PASSWORD";

/// How [`Credentials::lookup`] reads the docker config file (with its credential helpers)
/// for a registry: `docker_credential::get_credential` in production.
pub type DockerLookup = dyn Fn(&str) -> Result<DockerCredential, CredentialRetrievalError>;

/// How Sluice authenticates to one registry.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Credentials {
    /// No credentials (public repositories, a local registry).
    #[default]
    Anonymous,
    /// A user name and password (or token), sent as HTTP basic auth or exchanged for a
    /// bearer token, as the registry asks.
    Basic {
        /// The user name.
        username: String,
        /// The password or token; never logged.
        password: String,
        /// Where it came from (`SLUICE_REGISTRY_USERNAME`, `the docker config file`).
        origin: &'static str,
    },
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Anonymous => f.write_str("Anonymous"),
            Credentials::Basic {
                username, origin, ..
            } => f
                .debug_struct("Basic")
                .field("username", username)
                .field("password", &"<redacted>")
                .field("origin", origin)
                .finish(),
        }
    }
}

impl Credentials {
    /// The credentials for `registry`: the environment (read through `env`) when both
    /// variables are set, else the docker config file (read through `docker`, which is
    /// `docker_credential::get_credential` in production), else anonymous. An identity
    /// token in the docker config (an OAuth refresh token) is not supported and reads as
    /// anonymous, with a warning.
    pub fn lookup(
        registry: &str,
        env: &dyn Fn(&str) -> Option<String>,
        docker: &DockerLookup,
    ) -> Credentials {
        if let (Some(username), Some(password)) = (env(ENV_USERNAME), env(ENV_PASSWORD))
            && !username.is_empty()
        {
            return Credentials::Basic {
                username,
                password,
                origin: ENV_USERNAME,
            };
        }
        match docker(registry) {
            Ok(DockerCredential::UsernamePassword(username, password)) => Credentials::Basic {
                username,
                password,
                origin: "the docker config file",
            },
            Ok(DockerCredential::IdentityToken(_)) => {
                tracing::warn!(
                    registry,
                    "the docker config file holds an identity token for this registry, which Sluice does not use; pulling anonymously (set SLUICE_REGISTRY_USERNAME and SLUICE_REGISTRY_PASSWORD instead)"
                );
                Credentials::Anonymous
            }
            Err(e) => {
                // Recorded as a string field (quoted in the log line).
                let reason = e.to_string();
                tracing::debug!(
                    registry,
                    reason,
                    "no docker credentials; pulling anonymously"
                );
                Credentials::Anonymous
            }
        }
    }

    /// The credentials of the process: its environment and the docker config file.
    pub fn from_process(registry: &str) -> Credentials {
        Credentials::lookup(
            registry,
            &|k| std::env::var(k).ok(),
            &docker_credential::get_credential,
        )
    }

    pub(crate) fn to_client(&self) -> RegistryAuth {
        match self {
            Credentials::Anonymous => RegistryAuth::Anonymous,
            Credentials::Basic {
                username, password, ..
            } => RegistryAuth::Basic(username.clone(), password.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"{"auths":{"registry.example":{"auth":"dXNlcjpzM2NyZXQ="}}}"#;

    fn docker(server: &str) -> Result<DockerCredential, CredentialRetrievalError> {
        docker_credential::get_credential_from_reader(CONFIG.as_bytes(), server)
    }

    #[test]
    fn the_environment_wins_then_the_docker_config_then_anonymous() {
        let env = |k: &str| match k {
            ENV_USERNAME => Some("ci".to_string()),
            ENV_PASSWORD => Some("t0ken".to_string()),
            _ => None,
        };
        let c = Credentials::lookup("registry.example", &env, &docker);
        assert_eq!(
            c,
            Credentials::Basic {
                username: "ci".into(),
                password: "t0ken".into(),
                origin: ENV_USERNAME
            }
        );
        let none = |_: &str| None;
        let c = Credentials::lookup("registry.example", &none, &docker);
        assert_eq!(
            c,
            Credentials::Basic {
                username: "user".into(),
                password: "s3cret".into(),
                origin: "the docker config file"
            }
        );
        let shown = format!("{c:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        assert_eq!(
            Credentials::lookup("other.example", &none, &docker),
            Credentials::Anonymous
        );
    }
}
