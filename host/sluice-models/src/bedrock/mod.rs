//! AWS Bedrock through the Converse API.
//!
//! [`Bedrock`] sends a [`ModelRequest`] as one `POST
//! https://bedrock-runtime.{region}.amazonaws.com/model/{modelId}/converse` (or
//! `/converse-stream` when [`ProviderConfig::stream`] is set; `base_url` replaces the
//! `https://bedrock-runtime.{region}.amazonaws.com` part). The model id is percent-encoded in
//! the path, so base ids (`anthropic.claude-…-v1:0`), inference profiles (`us.anthropic.…`)
//! and ARNs all work.
//!
//! # Authentication, in order of preference
//!
//! 1. A **Bedrock API key**: [`ProviderConfig::api_key`], else the environment variable
//!    `AWS_BEARER_TOKEN_BEDROCK` ([`BEARER_TOKEN_ENV`], the variable AWS's own tools read), sent
//!    as `Authorization: Bearer <key>`; nothing is signed.
//! 2. **SigV4** (signing name [`SIGNING_NAME`], `bedrock`) with AWS credentials from
//!    `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN` for temporary
//!    credentials),
//! 3. else from the `[default]` profile (or the one `AWS_PROFILE` names) of
//!    `~/.aws/credentials` (or the file `AWS_SHARED_CREDENTIALS_FILE` names): keys
//!    `aws_access_key_id`, `aws_secret_access_key`, `aws_session_token`.
//!
//! SSO, assume-role, `credential_process` and instance roles are not supported (they need the
//! AWS SDK's credential chain). Credentials are read once, when the backend is built. Every
//! attempt (retries included) is signed afresh, over exactly the bytes sent: the headers
//! `host`, `content-type`, `x-amz-date` and, with a session token, `x-amz-security-token`.
//!
//! The region comes from [`ProviderConfig::region`], else `AWS_REGION`, else
//! `AWS_DEFAULT_REGION`; it is required unless a bearer key is used with a `base_url`.
//!
//! # Transcript mapping
//!
//! - the system prompt is the top-level `system: [{"text": …}]`, once;
//! - messages alternate `user`/`assistant` (adjacent same-role turns are merged) and start with
//!   a user turn (a placeholder user turn is inserted when the transcript starts otherwise);
//! - an assistant turn's tool calls are `toolUse` blocks (`input` is the arguments as a JSON
//!   object; arguments that are not a JSON object become `{}`);
//! - tool observations become `toolResult` blocks in the next user turn (before any text), with
//!   `status: "error"` when the observation starts with `{"ok":false`. A result that answers no
//!   tool use of the turn just before becomes text; a tool use left without a result gets an
//!   error result saying so (Bedrock refuses unpaired blocks);
//! - tool-call ids are re-keyed to Bedrock's `[a-zA-Z0-9_-]{1,64}`, consistently within one
//!   request (valid ids are kept; every tool use gets a distinct id);
//! - `toolConfig` is sent whenever tools are offered or the history has tool blocks (when no
//!   tool is offered, the tools named in the history are declared with an open schema, because
//!   Bedrock refuses tool blocks without a `toolConfig`); `inferenceConfig.maxTokens` is
//!   [`ProviderConfig::max_tokens`].
//!
//! The reply's text blocks are joined with `\n`; its `toolUse` blocks become tool calls whose
//! arguments are the input as compact JSON. `usage.inputTokens`/`outputTokens` become
//! [`Usage`](crate::Usage).
//!
//! # Errors
//!
//! HTTP errors go through [`classify()`](crate::classify()) (Bedrock's `x-amzn-ErrorType`
//! header and `{"message": …}` body). A streamed reply is a sequence of binary AWS event-stream
//! frames; an `exception` frame is classified as the HTTP error its type stands for (see
//! [`exception_status`]), so a mid-stream `validationException` "Input is too long for requested
//! model." is a context-window rejection. A frame with a bad CRC is a
//! [`ErrorKind::Protocol`](crate::ErrorKind::Protocol) error; a stream that ends mid-frame or before `messageStop` is
//! [`ErrorKind::Transient`](crate::ErrorKind::Transient).
//!
//! When [`ProviderConfig::context_window_tokens`] is set, a request estimated at more than
//! 1.1 × the window is refused with [`ErrorKind::ContextWindowExceeded`](crate::ErrorKind::ContextWindowExceeded) without being sent
//! (the estimate is [`Estimator`]'s, calibrated by the usage of earlier replies).
//!
//! `model.tool_choice` ([`ToolChoice`]): `auto` and `required` become
//! `toolConfig.toolChoice` `{"auto":{}}` and `{"any":{}}` on a request that offers tools;
//! by default nothing is sent (Bedrock's default is `auto`); `none` does not exist in
//! Converse and is refused when the backend is made.

mod codec;
mod credentials;
mod eventstream;
mod sign;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::json;

use self::codec::parse_converse;
pub use self::codec::{exception_status, request_body};
pub use self::credentials::{AwsCredentials, BEARER_TOKEN_ENV};
pub use self::eventstream::MAX_FRAME_BYTES;
use self::eventstream::StreamReader;
pub use self::sign::SigV4;
use crate::backend::{Backend, ModelReply, ModelRequest};
use crate::config::{ProviderConfig, Secret, ToolChoice};
use crate::error::BackendError;
use crate::estimate::Estimator;
use crate::http::Http;

/// The SigV4 signing name of Bedrock's runtime API (not `bedrock-runtime`).
pub const SIGNING_NAME: &str = "bedrock";

/// The backend for `config`, reading the process environment (`AWS_*`, `HOME`) for the
/// region and credentials (see the [module docs](self)).
///
/// # Errors
/// A [`ErrorKind::BadRequest`](crate::ErrorKind::BadRequest) error naming what to set when the region or every kind of
/// credentials is missing, or when the model id or endpoint is unusable; a
/// [`ErrorKind::Protocol`](crate::ErrorKind::Protocol) error when the HTTP client cannot start.
pub fn connect(config: ProviderConfig) -> Result<Arc<dyn Backend>, BackendError> {
    let env = |name: &str| std::env::var(name).ok();
    let home = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    Ok(Arc::new(Bedrock::new(config, &env, home.as_deref())?))
}

/// How requests are authenticated.
#[derive(Clone, Debug)]
enum Auth {
    /// A Bedrock API key, sent as `Authorization: Bearer`.
    Bearer(Secret),
    /// SigV4.
    SigV4(SigV4),
}

/// AWS Bedrock Converse (see the [module docs](self)).
#[derive(Clone, Debug)]
pub struct Bedrock {
    model: String,
    http: Http,
    auth: Auth,
    /// `…/model/{id}/converse` or `…/converse-stream`.
    url: reqwest::Url,
    /// The `host` header: the URL's host, with its port when not the scheme's default.
    host: String,
    stream: bool,
    max_tokens: u32,
    context_window_tokens: Option<u64>,
    tool_choice: ToolChoice,
    estimator: Arc<Estimator>,
    clock: fn() -> SystemTime,
}

impl Bedrock {
    /// A backend for `config`. `env` reports environment variables (`AWS_BEARER_TOKEN_BEDROCK`,
    /// `AWS_REGION`, `AWS_DEFAULT_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_SESSION_TOKEN`, `AWS_PROFILE`, `AWS_SHARED_CREDENTIALS_FILE`); `home` is the home
    /// directory holding `.aws/credentials`. Nothing is sent.
    ///
    /// # Errors
    /// A [`ErrorKind::BadRequest`](crate::ErrorKind::BadRequest) error naming what to set when the region or the credentials
    /// are missing (see [`AwsCredentials::resolve`]), or when the region, model id or
    /// `base_url` make no valid URL; a [`ErrorKind::Protocol`](crate::ErrorKind::Protocol) error when the HTTP client
    /// cannot start.
    pub fn new(
        config: ProviderConfig,
        env: &dyn Fn(&str) -> Option<String>,
        home: Option<&Path>,
    ) -> Result<Bedrock, BackendError> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let bearer = config
            .api_key
            .clone()
            .filter(|k| !k.expose().trim().is_empty())
            .or_else(|| var(BEARER_TOKEN_ENV).map(Secret::new));
        let region = config
            .region
            .clone()
            .filter(|r| !r.trim().is_empty())
            .or_else(|| var("AWS_REGION"))
            .or_else(|| var("AWS_DEFAULT_REGION"))
            .map(|r| r.trim().to_string());
        if let Some(region) = &region
            && !region
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            return Err(BackendError::bad_request(format!(
                "the Bedrock region {region:?} is not a region name (like us-east-1)"
            )));
        }
        let needs_region = bearer.is_none() || config.base_url.is_none();
        let region = match region {
            Some(region) => region,
            None if needs_region => {
                return Err(BackendError::bad_request(
                    "Bedrock needs a region: set `region` in the [model] section of sluice.toml, \
                     or AWS_REGION (or AWS_DEFAULT_REGION), e.g. AWS_REGION=us-east-1",
                ));
            }
            None => String::new(),
        };
        let auth = match bearer {
            Some(key) => Auth::Bearer(key),
            None => Auth::SigV4(SigV4 {
                credentials: AwsCredentials::resolve(env, home)?,
                region: region.clone(),
                service: SIGNING_NAME.to_string(),
                content_sha256: false,
            }),
        };
        let tool_choice = ToolChoice::resolve(config.tool_choice, config.provider);
        if tool_choice == ToolChoice::None {
            return Err(BackendError::bad_request(
                "Bedrock Converse has no tool_choice \"none\": set model.tool_choice to auto, required or omit",
            ));
        }
        let model = config.model.trim().to_string();
        if model.is_empty() {
            return Err(BackendError::bad_request(
                "Bedrock needs a model id, e.g. --model bedrock:anthropic.claude-3-5-haiku-20241022-v1:0",
            ));
        }
        let base = match &config.base_url {
            Some(base) => base.trim().trim_end_matches('/').to_string(),
            None => format!("https://bedrock-runtime.{region}.amazonaws.com"),
        };
        let action = if config.stream {
            "converse-stream"
        } else {
            "converse"
        };
        let text = format!("{base}/model/{}/{action}", encode_path_segment(&model));
        let url = reqwest::Url::parse(&text).map_err(|e| {
            BackendError::bad_request(format!("the Bedrock endpoint {text:?} is not a URL: {e}"))
        })?;
        let host = match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_string(),
            (None, _) => {
                return Err(BackendError::bad_request(format!(
                    "the Bedrock endpoint {text:?} has no host"
                )));
            }
        };
        Ok(Bedrock {
            model,
            http: Http::new(config.timeouts, config.retry)?,
            auth,
            url,
            host,
            stream: config.stream,
            max_tokens: config.max_tokens,
            context_window_tokens: config.context_window_tokens,
            tool_choice,
            estimator: Arc::new(Estimator::new()),
            clock: SystemTime::now,
        })
    }

    /// The same backend signing with the time `clock` gives instead of the system clock (for
    /// tests; a signature is only accepted within 15 minutes of the real time).
    pub fn with_clock(mut self, clock: fn() -> SystemTime) -> Bedrock {
        self.clock = clock;
        self
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// True when requests are signed with SigV4 (false: a bearer API key).
    pub fn signs(&self) -> bool {
        matches!(self.auth, Auth::SigV4(_))
    }

    /// One attempt's request: `body` with fresh signing headers.
    fn build(&self, body: &[u8]) -> Result<reqwest::Request, BackendError> {
        let accept = if self.stream {
            "application/vnd.amazon.eventstream"
        } else {
            "application/json"
        };
        let mut builder = self
            .http
            .client()
            .post(self.url.clone())
            .header("host", &self.host)
            .header("content-type", "application/json")
            .header("accept", accept)
            .body(body.to_vec());
        match &self.auth {
            Auth::Bearer(key) => builder = builder.bearer_auth(key.expose()),
            Auth::SigV4(signer) => {
                let signed = [
                    ("host", self.host.as_str()),
                    ("content-type", "application/json"),
                ];
                let time = (self.clock)();
                for (name, value) in signer.sign("POST", self.url.as_str(), &signed, body, time)? {
                    builder = builder.header(name, value);
                }
            }
        }
        builder.build().map_err(|e| {
            BackendError::bad_request(format!("cannot build the Bedrock request: {e}"))
        })
    }
}

#[async_trait::async_trait]
impl Backend for Bedrock {
    /// `bedrock:{model id}`.
    fn name(&self) -> String {
        format!("bedrock:{}", self.model)
    }

    /// Sends `request` to Converse (or ConverseStream) and decodes the reply.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, BackendError> {
        self.estimator
            .around(request, self.context_window_tokens, self.exchange(request))
            .await
    }
}

impl Bedrock {
    /// Sends `request` through the retry loop and reads the answer.
    async fn exchange(&self, request: &ModelRequest) -> Result<ModelReply, BackendError> {
        let mut body = request_body(request, self.max_tokens);
        let choice = match self.tool_choice {
            ToolChoice::Auto => Some("auto"),
            ToolChoice::Required => Some("any"),
            ToolChoice::None | ToolChoice::Omit => None,
        };
        if let (Some(choice), Some(config)) = (choice, body.get_mut("toolConfig"))
            && !request.tools.is_empty()
        {
            config["toolChoice"] = json!({ choice: {} });
        }
        let body = serde_json::to_vec(&body).map_err(|e| {
            BackendError::protocol(format!("cannot encode the Bedrock request: {e}"))
        })?;
        let (mut response, sent) = self.http.send(|| self.build(&body)).await?;
        let counted = |e: BackendError| e.with_requests(sent);
        let reply = if self.stream {
            let mut reader = StreamReader::default();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| counted(BackendError::network(&e)))?
            {
                reader.push(&chunk).map_err(counted)?;
            }
            reader.finish()
        } else {
            let bytes = response
                .bytes()
                .await
                .map_err(|e| counted(BackendError::network(&e)))?;
            parse_converse(&bytes)
        };
        reply
            .map(|reply| reply.with_requests(sent))
            .map_err(counted)
    }
}

/// `text` percent-encoded for one URL path segment: everything but `A-Z a-z 0-9 - _ . ~`
/// (so `:` is `%3A` and `/` is `%2F`).
fn encode_path_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
