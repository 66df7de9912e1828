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
//! [`Usage`].
//!
//! # Errors
//!
//! HTTP errors go through [`classify()`](crate::classify()) (Bedrock's `x-amzn-ErrorType`
//! header and `{"message": …}` body). A streamed reply is a sequence of binary AWS event-stream
//! frames; an `exception` frame is classified as the HTTP error its type stands for (see
//! [`exception_status`]), so a mid-stream `validationException` "Input is too long for requested
//! model." is a context-window rejection. A frame with a bad CRC is a
//! [`ErrorKind::Protocol`] error; a stream that ends mid-frame or before `messageStop` is
//! [`ErrorKind::Transient`].
//!
//! When [`ProviderConfig::context_window_tokens`] is set, a request estimated at more than
//! 1.1 × the window is refused with [`ErrorKind::ContextWindowExceeded`] without being sent
//! (the estimate is [`Estimator`]'s, calibrated by the usage of earlier replies).
//!
//! `model.tool_choice` ([`ToolChoice`]): `auto` and `required` become
//! `toolConfig.toolChoice` `{"auto":{}}` and `{"any":{}}` on a request that offers tools;
//! by default nothing is sent (Bedrock's default is `auto`); `none` does not exist in
//! Converse and is refused when the backend is made.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Map, Value, json};
use sluice_protocol::{Role, ToolCall};

use crate::estimate::Estimator;
use crate::http::{Http, network, protocol};
use crate::provider::{ProviderConfig, Secret, ToolChoice};
use crate::wire::bad_request;
use crate::{Backend, BackendError, ErrorKind, ModelReply, ModelRequest, Usage, classify};

/// The SigV4 signing name of Bedrock's runtime API (not `bedrock-runtime`).
pub const SIGNING_NAME: &str = "bedrock";

/// The environment variable AWS's tools read a Bedrock API key from.
pub const BEARER_TOKEN_ENV: &str = "AWS_BEARER_TOKEN_BEDROCK";

/// The largest event-stream frame accepted, in bytes (AWS caps a message at 16 MiB).
pub const MAX_FRAME_BYTES: usize = 24 * 1024 * 1024;

/// The text of the user turn put first when a transcript does not start with one.
const LEADING_USER_PLACEHOLDER: &str = "(continuing the conversation)";

/// The backend for `config`, reading the process environment (`AWS_*`, `HOME`) for the
/// region and credentials (see the [module docs](self)).
///
/// # Errors
/// A [`ErrorKind::BadRequest`] error naming what to set when the region or every kind of
/// credentials is missing, or when the model id or endpoint is unusable; a
/// [`ErrorKind::Protocol`] error when the HTTP client cannot start.
pub fn connect(config: ProviderConfig) -> Result<Arc<dyn Backend>, BackendError> {
    let env = |name: &str| std::env::var(name).ok();
    let home = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    Ok(Arc::new(Bedrock::new(config, &env, home.as_deref())?))
}

/// AWS credentials for SigV4 (`Debug` shows the access key id only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwsCredentials {
    /// The access key id (`AKIA…`, `ASIA…`).
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: Secret,
    /// The session token of temporary credentials.
    pub session_token: Option<Secret>,
}

impl AwsCredentials {
    /// Credentials from their parts.
    pub fn new(
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
        session_token: Option<String>,
    ) -> AwsCredentials {
        AwsCredentials {
            access_key_id: access_key_id.into(),
            secret_access_key: Secret::new(secret_access_key),
            session_token: session_token.map(Secret::new),
        }
    }

    /// Credentials from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`
    /// as `env` reports them, else from the profile `AWS_PROFILE` names (default `default`)
    /// in `AWS_SHARED_CREDENTIALS_FILE`, else in `{home}/.aws/credentials`. Empty values count
    /// as unset.
    ///
    /// # Errors
    /// A [`ErrorKind::BadRequest`] error naming the variables, profile and file to set up when
    /// none of them holds both an access key id and a secret key.
    pub fn resolve(
        env: &dyn Fn(&str) -> Option<String>,
        home: Option<&Path>,
    ) -> Result<AwsCredentials, BackendError> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let (Some(id), Some(secret)) = (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
            return Ok(AwsCredentials::new(id, secret, var("AWS_SESSION_TOKEN")));
        }
        let profile = var("AWS_PROFILE").unwrap_or_else(|| "default".to_string());
        let file = var("AWS_SHARED_CREDENTIALS_FILE")
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".aws").join("credentials")));
        let mut why = match &file {
            Some(path) => format!("{} has no usable [{profile}] profile", path.display()),
            None => "no home directory to find ~/.aws/credentials in".to_string(),
        };
        if let Some(path) = &file {
            match std::fs::read_to_string(path) {
                Ok(text) => {
                    if let Some(credentials) = profile_credentials(&text, &profile) {
                        return Ok(credentials);
                    }
                }
                Err(e) => why = format!("cannot read {}: {e}", path.display()),
            }
        }
        Err(bad_request(format!(
            "Bedrock needs credentials: set {BEARER_TOKEN_ENV} (a Bedrock API key), or \
             AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (plus AWS_SESSION_TOKEN for temporary \
             credentials), or aws_access_key_id and aws_secret_access_key in the [{profile}] \
             profile of ~/.aws/credentials (AWS_PROFILE picks the profile, \
             AWS_SHARED_CREDENTIALS_FILE the file); {why}"
        )))
    }
}

/// The credentials of `profile` in the INI text of an AWS credentials file: `[name]` sections
/// of `key = value` lines (`#` and `;` start comment lines). `None` when the profile is absent
/// or lacks an access key id or secret key.
fn profile_credentials(text: &str, profile: &str) -> Option<AwsCredentials> {
    let mut in_profile = false;
    let mut keys: HashMap<String, String> = HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let section = section.trim();
            let section = section.strip_prefix("profile ").unwrap_or(section).trim();
            in_profile = section == profile;
            continue;
        }
        if in_profile && let Some((key, value)) = line.split_once('=') {
            keys.insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    let get = |key: &str| keys.get(key).filter(|v| !v.is_empty()).cloned();
    Some(AwsCredentials::new(
        get("aws_access_key_id")?,
        get("aws_secret_access_key")?,
        get("aws_session_token").or_else(|| get("aws_security_token")),
    ))
}

/// A SigV4 signer for one set of credentials, region and service.
#[derive(Clone, Debug)]
pub struct SigV4 {
    /// The credentials to sign with.
    pub credentials: AwsCredentials,
    /// The region (`us-east-1`).
    pub region: String,
    /// The signing name (`bedrock`).
    pub service: String,
    /// Also sign (and send) `x-amz-content-sha256`, the body's SHA-256 (S3 needs it; Bedrock
    /// does not).
    pub content_sha256: bool,
}

impl SigV4 {
    /// The headers to add to a request to sign it: `x-amz-date`, `authorization`, and
    /// `x-amz-security-token` (with a session token) and `x-amz-content-sha256` (when
    /// [`SigV4::content_sha256`] is set), as lower-case `(name, value)` pairs.
    ///
    /// `url` is the full URL in the encoded form it is sent in (`https://host/path?query`); the
    /// path is percent-encoded once more for the canonical request, as every AWS service but S3
    /// expects. `headers` are the headers to sign, as sent (include `host`); `body` the exact
    /// bytes sent; `time` the signing time (the signature is valid for 15 minutes around it).
    ///
    /// # Errors
    /// A [`ErrorKind::BadRequest`] error when the URL or a header cannot be signed.
    pub fn sign(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        time: SystemTime,
    ) -> Result<Vec<(String, String)>, BackendError> {
        use aws_sigv4::http_request::{
            PayloadChecksumKind, SignableBody, SignableRequest, SigningSettings, sign,
        };
        let identity = aws_credential_types::Credentials::new(
            self.credentials.access_key_id.clone(),
            self.credentials.secret_access_key.expose().to_string(),
            self.credentials
                .session_token
                .as_ref()
                .map(|t| t.expose().to_string()),
            None,
            "sluice",
        )
        .into();
        let mut settings = SigningSettings::default();
        if self.content_sha256 {
            settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        }
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(&self.service)
            .time(time)
            .settings(settings)
            .build()
            .map_err(|e| bad_request(format!("cannot sign the request: {e}")))?
            .into();
        let request = SignableRequest::new(
            method,
            url,
            headers.iter().copied(),
            SignableBody::Bytes(body),
        )
        .map_err(|e| bad_request(format!("cannot sign the request to {url}: {e}")))?;
        let (instructions, _signature) = sign(request, &params)
            .map_err(|e| bad_request(format!("cannot sign the request to {url}: {e}")))?
            .into_parts();
        Ok(instructions
            .headers()
            .map(|(name, value)| (name.to_ascii_lowercase(), value.to_string()))
            .collect())
    }
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
    /// A [`ErrorKind::BadRequest`] error naming what to set when the region or the credentials
    /// are missing (see [`AwsCredentials::resolve`]), or when the region, model id or
    /// `base_url` make no valid URL; a [`ErrorKind::Protocol`] error when the HTTP client
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
            return Err(bad_request(format!(
                "the Bedrock region {region:?} is not a region name (like us-east-1)"
            )));
        }
        let needs_region = bearer.is_none() || config.base_url.is_none();
        let region = match region {
            Some(region) => region,
            None if needs_region => {
                return Err(bad_request(
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
            return Err(bad_request(
                "Bedrock Converse has no tool_choice \"none\": set model.tool_choice to auto, required or omit",
            ));
        }
        let model = config.model.trim().to_string();
        if model.is_empty() {
            return Err(bad_request(
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
        let url = reqwest::Url::parse(&text)
            .map_err(|e| bad_request(format!("the Bedrock endpoint {text:?} is not a URL: {e}")))?;
        let host = match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_string(),
            (None, _) => {
                return Err(bad_request(format!(
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
        builder
            .build()
            .map_err(|e| bad_request(format!("cannot build the Bedrock request: {e}")))
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
        let body = serde_json::to_vec(&body)
            .map_err(|e| protocol(format!("cannot encode the Bedrock request: {e}")))?;
        let (mut response, sent) = self.http.send(|| self.build(&body)).await?;
        let counted = |e: BackendError| BackendError {
            http_requests: Some(sent),
            ..e
        };
        let reply = if self.stream {
            let mut reader = StreamReader::default();
            while let Some(chunk) = response.chunk().await.map_err(|e| counted(network(&e)))? {
                reader.push(&chunk).map_err(counted)?;
            }
            reader.finish()
        } else {
            let bytes = response.bytes().await.map_err(|e| counted(network(&e)))?;
            parse_converse(&bytes)
        };
        reply
            .map(|reply| ModelReply {
                http_requests: Some(sent),
                ..reply
            })
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

// ---------------------------------------------------------------------------------------
// Request.

/// A content block before serialisation.
#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        id: String,
        text: String,
        error: bool,
    },
}

/// Bedrock's roles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    User,
    Assistant,
}

/// Tool-call ids re-keyed to `[a-zA-Z0-9_-]{1,64}`: every tool use gets a distinct id; a
/// result answers the latest tool use of its original id.
#[derive(Default)]
struct Ids {
    used: HashSet<String>,
    latest: HashMap<String, String>,
}

impl Ids {
    fn tool_use(&mut self, original: &str) -> String {
        let base: String = if is_valid_id(original) {
            original.to_string()
        } else {
            let cleaned: String = original
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .take(64)
                .collect();
            if cleaned.is_empty() {
                "call".to_string()
            } else {
                cleaned
            }
        };
        let mut id = base.clone();
        let mut n = 2u64;
        while self.used.contains(&id) {
            let suffix = format!("_{n}");
            let keep = 64usize.saturating_sub(suffix.len());
            id = format!("{}{suffix}", base.chars().take(keep).collect::<String>());
            n += 1;
        }
        self.used.insert(id.clone());
        self.latest.insert(original.to_string(), id.clone());
        id
    }

    fn result(&self, original: &str) -> Option<String> {
        self.latest.get(original).cloned()
    }
}

fn is_valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// True when an observation reports a failure: it starts with `{"ok":false` (whitespace
/// allowed between the tokens).
fn is_error_observation(text: &str) -> bool {
    let rest = text.trim_start();
    let Some(rest) = rest.strip_prefix('{') else {
        return false;
    };
    let Some(rest) = rest.trim_start().strip_prefix("\"ok\"") else {
        return false;
    };
    let Some(rest) = rest.trim_start().strip_prefix(':') else {
        return false;
    };
    rest.trim_start().starts_with("false")
}

/// A tool call's arguments as the JSON object Bedrock wants; anything else is `{}`.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => Value::Object(Map::new()),
    }
}

/// Appends `blocks` to the last turn when it has the same side, else as a new turn.
fn push_turn(turns: &mut Vec<(Side, Vec<Block>)>, side: Side, blocks: Vec<Block>) {
    if blocks.is_empty() {
        return;
    }
    match turns.last_mut() {
        Some((last, existing)) if *last == side => existing.extend(blocks),
        _ => turns.push((side, blocks)),
    }
}

/// The Converse request body for `request` (see the [module docs](self) for the mapping), with
/// `inferenceConfig.maxTokens` = `max_tokens`.
pub fn request_body(request: &ModelRequest, max_tokens: u32) -> Value {
    let mut ids = Ids::default();
    let mut turns: Vec<(Side, Vec<Block>)> = Vec::new();
    for message in &request.messages {
        match message.role {
            Role::User => {
                let mut blocks = Vec::new();
                if !message.content.trim().is_empty() {
                    blocks.push(Block::Text(message.content.clone()));
                }
                push_turn(&mut turns, Side::User, blocks);
            }
            Role::Assistant => {
                let mut blocks = Vec::new();
                if !message.content.trim().is_empty() {
                    blocks.push(Block::Text(message.content.clone()));
                }
                for call in &message.tool_calls {
                    blocks.push(Block::ToolUse {
                        id: ids.tool_use(&call.id),
                        name: call.name.clone(),
                        input: tool_input(&call.arguments),
                    });
                }
                push_turn(&mut turns, Side::Assistant, blocks);
            }
            Role::Tool => {
                let text = if message.content.is_empty() {
                    "(no output)".to_string()
                } else {
                    message.content.clone()
                };
                let original = message.tool_call_id.clone().unwrap_or_default();
                let block = match ids.result(&original) {
                    Some(id) => Block::ToolResult {
                        error: is_error_observation(&text),
                        id,
                        text,
                    },
                    None => Block::Text(orphan_result_text(&original, &text)),
                };
                push_turn(&mut turns, Side::User, vec![block]);
            }
        }
    }
    let turns = pair_tool_blocks(turns);

    let mut used_tools: Vec<String> = Vec::new();
    let mut has_tool_blocks = false;
    let messages: Vec<Value> = turns
        .iter()
        .map(|(side, blocks)| {
            let content: Vec<Value> = blocks
                .iter()
                .map(|block| match block {
                    Block::Text(text) => json!({"text": text}),
                    Block::ToolUse { id, name, input } => {
                        has_tool_blocks = true;
                        if !used_tools.contains(name) {
                            used_tools.push(name.clone());
                        }
                        json!({"toolUse": {"toolUseId": id, "name": name, "input": input}})
                    }
                    Block::ToolResult { id, text, error } => {
                        has_tool_blocks = true;
                        json!({"toolResult": {
                            "toolUseId": id,
                            "content": [{"text": text}],
                            "status": if *error { "error" } else { "success" },
                        }})
                    }
                })
                .collect();
            let role = match side {
                Side::User => "user",
                Side::Assistant => "assistant",
            };
            json!({"role": role, "content": content})
        })
        .collect();

    let mut body = Map::new();
    if !request.system.trim().is_empty() {
        body.insert("system".into(), json!([{"text": request.system}]));
    }
    body.insert("messages".into(), Value::Array(messages));
    let specs: Vec<Value> = if request.tools.is_empty() {
        used_tools
            .iter()
            .map(|name| {
                json!({"toolSpec": {
                    "name": name,
                    "description": "A tool used earlier in this conversation; not offered now.",
                    "inputSchema": {"json": {"type": "object"}},
                }})
            })
            .collect()
    } else {
        request
            .tools
            .iter()
            .map(|tool| {
                let description = if tool.description.trim().is_empty() {
                    tool.name.clone()
                } else {
                    tool.description.clone()
                };
                json!({"toolSpec": {
                    "name": tool.name,
                    "description": description,
                    "inputSchema": {"json": tool.input_schema},
                }})
            })
            .collect()
    };
    if !specs.is_empty() && (has_tool_blocks || !request.tools.is_empty()) {
        body.insert("toolConfig".into(), json!({"tools": specs}));
    }
    body.insert("inferenceConfig".into(), json!({"maxTokens": max_tokens}));
    Value::Object(body)
}

/// A tool result that answers no tool use, as text.
fn orphan_result_text(id: &str, text: &str) -> String {
    if id.is_empty() {
        format!("[tool result]\n{text}")
    } else {
        format!("[result of tool call {id}]\n{text}")
    }
}

/// Makes the turns acceptable to Bedrock: the first turn is a user turn; every tool use is
/// answered by a result in the user turn right after it (missing results are added as errors,
/// results that answer nothing there become text, results come before text).
fn pair_tool_blocks(turns: Vec<(Side, Vec<Block>)>) -> Vec<(Side, Vec<Block>)> {
    let mut out: Vec<(Side, Vec<Block>)> = Vec::new();
    if turns
        .first()
        .is_none_or(|(side, _)| *side == Side::Assistant)
    {
        out.push((
            Side::User,
            vec![Block::Text(LEADING_USER_PLACEHOLDER.to_string())],
        ));
    }
    let mut open: Vec<String> = Vec::new();
    for (side, blocks) in turns {
        match side {
            Side::Assistant => {
                if !open.is_empty() {
                    // An assistant turn right after another with unanswered tool uses cannot
                    // happen (turns alternate); keep the invariant anyway.
                    out.push((Side::User, missing_results(&open)));
                }
                open = blocks
                    .iter()
                    .filter_map(|b| match b {
                        Block::ToolUse { id, .. } => Some(id.clone()),
                        _ => None,
                    })
                    .collect();
                out.push((side, blocks));
            }
            Side::User => {
                let mut results = Vec::new();
                let mut texts = Vec::new();
                for block in blocks {
                    match block {
                        Block::ToolResult { id, text, error } => {
                            if let Some(at) = open.iter().position(|o| *o == id) {
                                open.remove(at);
                                results.push(Block::ToolResult { id, text, error });
                            } else {
                                texts.push(Block::Text(orphan_result_text(&id, &text)));
                            }
                        }
                        other => texts.push(other),
                    }
                }
                results.extend(missing_results(&open));
                open.clear();
                results.extend(texts);
                out.push((Side::User, results));
            }
        }
    }
    if !open.is_empty() {
        out.push((Side::User, missing_results(&open)));
    }
    out
}

fn missing_results(ids: &[String]) -> Vec<Block> {
    ids.iter()
        .map(|id| Block::ToolResult {
            id: id.clone(),
            text: r#"{"ok":false,"error":"no result was recorded for this tool call"}"#.to_string(),
            error: true,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Reply.

/// Decodes a Converse response body.
fn parse_converse(bytes: &[u8]) -> Result<ModelReply, BackendError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        protocol(format!(
            "the Bedrock reply is not JSON ({e}): {}",
            snippet(bytes)
        ))
    })?;
    let content = value
        .pointer("/output/message/content")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            protocol(format!(
                "the Bedrock reply has no output.message.content: {}",
                snippet(bytes)
            ))
        })?;
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for block in content {
        if let Some(text) = block.get("text").and_then(Value::as_str) {
            texts.push(text.to_string());
        } else if let Some(tool) = block.get("toolUse") {
            let id = tool.get("toolUseId").and_then(Value::as_str);
            let name = tool.get("name").and_then(Value::as_str);
            let (Some(id), Some(name)) = (id, name) else {
                return Err(protocol(format!(
                    "a Bedrock toolUse block lacks toolUseId or name: {tool}"
                )));
            };
            let input = tool
                .get("input")
                .cloned()
                .unwrap_or(Value::Object(Map::new()));
            tool_calls.push(ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: input.to_string(),
            });
        }
    }
    if let Some(reason) = value.get("stopReason").and_then(Value::as_str) {
        tracing::debug!(stop_reason = reason, "Bedrock reply");
    }
    Ok(ModelReply {
        content: join_texts(texts),
        tool_calls,
        usage: value.get("usage").and_then(usage_of),
        http_requests: None,
    })
}

fn usage_of(usage: &Value) -> Option<Usage> {
    let input = usage.get("inputTokens").and_then(Value::as_u64);
    let output = usage.get("outputTokens").and_then(Value::as_u64);
    if input.is_none() && output.is_none() {
        return None;
    }
    Some(Usage {
        input_tokens: input.unwrap_or(0),
        output_tokens: output.unwrap_or(0),
    })
}

/// Non-empty texts joined with `\n`.
fn join_texts(texts: Vec<String>) -> String {
    texts
        .into_iter()
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// At most 300 characters of `bytes`, for error messages.
fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    match text.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.into_owned(),
    }
}

/// The HTTP status an event-stream exception type stands for (Bedrock's error map):
/// `validationException` 400, `accessDeniedException` 403, `resourceNotFoundException` 404,
/// `modelTimeoutException` 408, `modelStreamErrorException` and `modelErrorException` 424,
/// `throttlingException` and `modelNotReadyException` 429, `internalServerException` 500,
/// `serviceUnavailableException` 503; anything else 400. Case-insensitive.
pub fn exception_status(exception_type: &str) -> u16 {
    match exception_type.to_ascii_lowercase().as_str() {
        "accessdeniedexception" => 403,
        "resourcenotfoundexception" => 404,
        "modeltimeoutexception" => 408,
        "modelstreamerrorexception" | "modelerrorexception" => 424,
        "throttlingexception" | "modelnotreadyexception" => 429,
        "internalserverexception" => 500,
        "serviceunavailableexception" => 503,
        _ => 400,
    }
}

// ---------------------------------------------------------------------------------------
// Event stream.

/// One decoded event-stream frame: its string headers and its payload.
#[derive(Debug, PartialEq, Eq)]
struct Frame {
    headers: Vec<(String, String)>,
    payload: Vec<u8>,
}

impl Frame {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// An incremental decoder of AWS event-stream frames: prelude (total length u32 BE, headers
/// length u32 BE, CRC32 of those 8 bytes), headers, payload, CRC32 of everything before it.
#[derive(Debug, Default)]
struct FrameDecoder {
    buffer: Vec<u8>,
}

impl FrameDecoder {
    fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete frame, `None` when more bytes are needed.
    fn next_frame(&mut self) -> Result<Option<Frame>, BackendError> {
        if self.buffer.len() < 12 {
            return Ok(None);
        }
        let total = be_u32(&self.buffer[0..4]) as usize;
        let headers_len = be_u32(&self.buffer[4..8]) as usize;
        let prelude_crc = be_u32(&self.buffer[8..12]);
        if crc32fast::hash(&self.buffer[0..8]) != prelude_crc {
            return Err(protocol(
                "a Bedrock event-stream frame has a bad prelude CRC",
            ));
        }
        if total < 16 || headers_len > total - 16 || total > MAX_FRAME_BYTES {
            return Err(protocol(format!(
                "a Bedrock event-stream frame has impossible lengths (total {total}, headers {headers_len})"
            )));
        }
        if self.buffer.len() < total {
            return Ok(None);
        }
        let frame: Vec<u8> = self.buffer.drain(..total).collect();
        let message_crc = be_u32(&frame[total - 4..]);
        if crc32fast::hash(&frame[..total - 4]) != message_crc {
            return Err(protocol(
                "a Bedrock event-stream frame has a bad message CRC",
            ));
        }
        let headers = parse_headers(&frame[12..12 + headers_len])?;
        let payload = frame[12 + headers_len..total - 4].to_vec();
        Ok(Some(Frame { headers, payload }))
    }

    fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }
}

fn be_u32(bytes: &[u8]) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[..4]);
    u32::from_be_bytes(word)
}

/// The frame's headers: `name_len u8, name, type u8, value`; string (7) values are kept,
/// the other types skipped by their sizes.
fn parse_headers(mut bytes: &[u8]) -> Result<Vec<(String, String)>, BackendError> {
    let bad = || protocol("a Bedrock event-stream frame has malformed headers");
    let take = |bytes: &mut &[u8], n: usize| -> Result<Vec<u8>, BackendError> {
        if bytes.len() < n {
            return Err(bad());
        }
        let (head, rest) = bytes.split_at(n);
        *bytes = rest;
        Ok(head.to_vec())
    };
    let mut headers = Vec::new();
    while !bytes.is_empty() {
        let name_len = usize::from(take(&mut bytes, 1)?[0]);
        let name = String::from_utf8(take(&mut bytes, name_len)?).map_err(|_| bad())?;
        let kind = take(&mut bytes, 1)?[0];
        let size = match kind {
            0 | 1 => 0,
            2 => 1,
            3 => 2,
            4 => 4,
            5 | 8 => 8,
            9 => 16,
            6 | 7 => {
                let len = take(&mut bytes, 2)?;
                usize::from(u16::from_be_bytes([len[0], len[1]]))
            }
            _ => return Err(bad()),
        };
        let value = take(&mut bytes, size)?;
        if kind == 7 {
            headers.push((name, String::from_utf8(value).map_err(|_| bad())?));
        }
    }
    Ok(headers)
}

/// A content block being streamed.
#[derive(Debug)]
enum StreamBlock {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        input: String,
    },
}

/// Assembles a `converse-stream` reply from its bytes.
#[derive(Debug, Default)]
struct StreamReader {
    decoder: FrameDecoder,
    blocks: BTreeMap<u64, StreamBlock>,
    usage: Option<Usage>,
    stopped: bool,
}

impl StreamReader {
    /// Feeds bytes and handles every frame they complete.
    fn push(&mut self, bytes: &[u8]) -> Result<(), BackendError> {
        self.decoder.push(bytes);
        while let Some(frame) = self.decoder.next_frame()? {
            self.frame(frame)?;
        }
        Ok(())
    }

    fn frame(&mut self, frame: Frame) -> Result<(), BackendError> {
        match frame.header(":message-type") {
            Some("event") => {}
            Some("exception") => {
                let kind = frame.header(":exception-type").unwrap_or("exception");
                let headers = [("x-amzn-ErrorType".to_string(), kind.to_string())];
                let body = String::from_utf8_lossy(&frame.payload);
                return Err(classify(exception_status(kind), &headers, &body));
            }
            Some("error") => {
                let code = frame.header(":error-code").unwrap_or("error");
                let message = frame.header(":error-message").unwrap_or("");
                let headers = [("x-amzn-ErrorType".to_string(), code.to_string())];
                let body = json!({ "message": message }).to_string();
                return Err(classify(exception_status(code), &headers, &body));
            }
            other => {
                return Err(protocol(format!(
                    "a Bedrock event-stream frame has an unknown :message-type {other:?}"
                )));
            }
        }
        let event = frame.header(":event-type").unwrap_or("");
        let payload: Value = if frame.payload.is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_slice(&frame.payload).map_err(|e| {
                protocol(format!(
                    "a Bedrock {event} event is not JSON ({e}): {}",
                    snippet(&frame.payload)
                ))
            })?
        };
        let index = payload
            .get("contentBlockIndex")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        match event {
            "contentBlockStart" => {
                if let Some(tool) = payload.pointer("/start/toolUse") {
                    let id = tool.get("toolUseId").and_then(Value::as_str);
                    let name = tool.get("name").and_then(Value::as_str);
                    let (Some(id), Some(name)) = (id, name) else {
                        return Err(protocol(format!(
                            "a Bedrock toolUse start lacks toolUseId or name: {tool}"
                        )));
                    };
                    self.blocks.insert(
                        index,
                        StreamBlock::ToolUse {
                            id: id.to_string(),
                            name: name.to_string(),
                            input: String::new(),
                        },
                    );
                }
            }
            "contentBlockDelta" => {
                let Some(delta) = payload.get("delta") else {
                    return Ok(());
                };
                if let Some(text) = delta.get("text").and_then(Value::as_str) {
                    match self
                        .blocks
                        .entry(index)
                        .or_insert_with(|| StreamBlock::Text(String::new()))
                    {
                        StreamBlock::Text(existing) => existing.push_str(text),
                        StreamBlock::ToolUse { .. } => {
                            return Err(protocol(format!(
                                "Bedrock sent text into tool-use block {index}"
                            )));
                        }
                    }
                } else if let Some(fragment) = delta.pointer("/toolUse/input") {
                    let fragment = match fragment {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    match self.blocks.get_mut(&index) {
                        Some(StreamBlock::ToolUse { input, .. }) => input.push_str(&fragment),
                        _ => {
                            return Err(protocol(format!(
                                "Bedrock sent tool input for block {index}, which did not start as a tool use"
                            )));
                        }
                    }
                }
            }
            "messageStop" => {
                self.stopped = true;
                if let Some(reason) = payload.get("stopReason").and_then(Value::as_str) {
                    tracing::debug!(stop_reason = reason, "Bedrock stream stopped");
                }
            }
            "metadata" => {
                if let Some(usage) = payload.get("usage").and_then(usage_of) {
                    self.usage = Some(usage);
                }
            }
            // messageStart, contentBlockStop and events added later carry nothing we need.
            _ => {}
        }
        Ok(())
    }

    /// The reply, once the stream has ended.
    fn finish(self) -> Result<ModelReply, BackendError> {
        if !self.decoder.is_empty() {
            return Err(truncated(
                "the Bedrock stream ended in the middle of a frame",
            ));
        }
        if !self.stopped {
            return Err(truncated("the Bedrock stream ended before messageStop"));
        }
        let mut texts = Vec::new();
        let mut tool_calls = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                StreamBlock::Text(text) => texts.push(text),
                StreamBlock::ToolUse { id, name, input } => {
                    let arguments = if input.trim().is_empty() {
                        "{}".to_string()
                    } else {
                        match serde_json::from_str::<Value>(&input) {
                            Ok(value) => value.to_string(),
                            Err(_) => input,
                        }
                    };
                    tool_calls.push(ToolCall {
                        id,
                        name,
                        arguments,
                    });
                }
            }
        }
        Ok(ModelReply {
            content: join_texts(texts),
            tool_calls,
            usage: self.usage,
            http_requests: None,
        })
    }
}

fn truncated(message: &str) -> BackendError {
    BackendError::new(ErrorKind::Transient, message)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use sluice_protocol::{Message, ToolSpec};

    use super::*;

    /// 2015-08-30T12:36:00Z, the time of the AWS SigV4 test suite.
    fn suite_time() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_440_938_160)
    }

    fn suite_signer(session_token: Option<&str>, content_sha256: bool) -> SigV4 {
        SigV4 {
            credentials: AwsCredentials::new(
                "AKIDEXAMPLE",
                "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                session_token.map(str::to_string),
            ),
            region: "us-east-1".into(),
            service: "service".into(),
            content_sha256,
        }
    }

    fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    // The AWS SigV4 test suite (aws-c-auth tests/aws-signing-test-suite/v4, as vendored in
    // the aws-sigv4 crate): `get-vanilla`.
    #[test]
    fn sigv4_matches_the_get_vanilla_test_vector() {
        let headers = suite_signer(None, false)
            .sign(
                "GET",
                "https://example.amazonaws.com/",
                &[("host", "example.amazonaws.com")],
                b"",
                suite_time(),
            )
            .unwrap();
        assert_eq!(
            header(&headers, "authorization"),
            Some(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
                 SignedHeaders=host;x-amz-date, \
                 Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
            )
        );
        assert_eq!(header(&headers, "x-amz-date"), Some("20150830T123600Z"));
        assert_eq!(header(&headers, "x-amz-security-token"), None);
    }

    // Same suite: `get-vanilla-with-session-token`.
    #[test]
    fn sigv4_matches_the_session_token_test_vector() {
        let token = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267";
        let headers = suite_signer(Some(token), false)
            .sign(
                "GET",
                "https://example.amazonaws.com/",
                &[("host", "example.amazonaws.com")],
                b"",
                suite_time(),
            )
            .unwrap();
        assert_eq!(
            header(&headers, "authorization"),
            Some(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
                 SignedHeaders=host;x-amz-date;x-amz-security-token, \
                 Signature=07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8"
            )
        );
        assert_eq!(header(&headers, "x-amz-security-token"), Some(token));
    }

    // Same suite: `post-x-www-form-urlencoded` (body signed, x-amz-content-sha256 sent).
    #[test]
    fn sigv4_matches_the_post_form_test_vector() {
        let headers = suite_signer(None, true)
            .sign(
                "POST",
                "https://example.amazonaws.com/",
                &[
                    ("content-type", "application/x-www-form-urlencoded"),
                    ("host", "example.amazonaws.com"),
                    ("content-length", "13"),
                ],
                b"Param1=value1",
                suite_time(),
            )
            .unwrap();
        assert_eq!(
            header(&headers, "authorization"),
            Some(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
                 SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date, \
                 Signature=d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b"
            )
        );
        assert_eq!(
            header(&headers, "x-amz-content-sha256"),
            Some("9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e")
        );
    }

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name: &str| map.get(name).cloned()
    }

    #[test]
    fn credentials_come_from_the_environment_first() {
        let env = env_of(&[
            ("AWS_ACCESS_KEY_ID", "AKIAENV"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_SESSION_TOKEN", "token"),
        ]);
        let home = tempfile::tempdir().unwrap();
        let creds = AwsCredentials::resolve(&env, Some(home.path())).unwrap();
        assert_eq!(
            creds,
            AwsCredentials::new("AKIAENV", "secret", Some("token".into()))
        );
        assert!(!format!("{creds:?}").contains("secret\""));
    }

    #[test]
    fn credentials_come_from_the_profile_file() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".aws")).unwrap();
        std::fs::write(
            home.path().join(".aws/credentials"),
            "# comment\n[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key=s1\n\n\
             [work]\n; another\naws_access_key_id = AKIAWORK\naws_secret_access_key = s2\n\
             aws_session_token = t2\n",
        )
        .unwrap();
        let none = env_of(&[]);
        let creds = AwsCredentials::resolve(&none, Some(home.path())).unwrap();
        assert_eq!(creds, AwsCredentials::new("AKIADEFAULT", "s1", None));
        let work = env_of(&[("AWS_PROFILE", "work")]);
        let creds = AwsCredentials::resolve(&work, Some(home.path())).unwrap();
        assert_eq!(
            creds,
            AwsCredentials::new("AKIAWORK", "s2", Some("t2".into()))
        );
        // Half the env pair does not win over the file.
        let half = env_of(&[("AWS_ACCESS_KEY_ID", "AKIAHALF")]);
        let creds = AwsCredentials::resolve(&half, Some(home.path())).unwrap();
        assert_eq!(creds.access_key_id, "AKIADEFAULT");
        let missing = env_of(&[("AWS_PROFILE", "nope")]);
        let error = AwsCredentials::resolve(&missing, Some(home.path())).unwrap_err();
        assert_eq!(error.kind, ErrorKind::BadRequest);
        assert!(error.message.contains("[nope]"), "{}", error.message);
    }

    #[test]
    fn missing_credentials_and_region_name_what_to_set() {
        let home = tempfile::tempdir().unwrap();
        let mut config = ProviderConfig::new(crate::provider::Provider::Bedrock, "m");
        let error = Bedrock::new(config.clone(), &env_of(&[]), Some(home.path())).unwrap_err();
        assert_eq!(error.kind, ErrorKind::BadRequest);
        assert!(error.message.contains("AWS_REGION"), "{}", error.message);

        let error = Bedrock::new(
            config.clone(),
            &env_of(&[("AWS_DEFAULT_REGION", "eu-west-1")]),
            Some(home.path()),
        )
        .unwrap_err();
        assert_eq!(error.kind, ErrorKind::BadRequest);
        for wanted in [
            "AWS_BEARER_TOKEN_BEDROCK",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "[default]",
            "~/.aws/credentials",
            "AWS_PROFILE",
        ] {
            assert!(
                error.message.contains(wanted),
                "{wanted}: {}",
                error.message
            );
        }

        let bearer = Bedrock::new(
            config.clone(),
            &env_of(&[("AWS_REGION", "eu-west-1"), (BEARER_TOKEN_ENV, "key")]),
            None,
        )
        .unwrap();
        assert!(!bearer.signs());
        config.model = "us.anthropic.claude-3-5-haiku-20241022-v1:0".into();
        config.stream = false;
        let signed = Bedrock::new(
            config,
            &env_of(&[
                ("AWS_REGION", "eu-west-1"),
                ("AWS_ACCESS_KEY_ID", "a"),
                ("AWS_SECRET_ACCESS_KEY", "b"),
            ]),
            None,
        )
        .unwrap();
        assert!(signed.signs());
        assert_eq!(
            signed.url(),
            "https://bedrock-runtime.eu-west-1.amazonaws.com/model/us.anthropic.claude-3-5-haiku-20241022-v1%3A0/converse"
        );
        assert_eq!(
            encode_path_segment("arn:aws:bedrock:us-east-1:1:inference-profile/x"),
            "arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx"
        );
    }

    #[test]
    fn a_signed_bedrock_request_carries_the_sigv4_headers() {
        let mut config = ProviderConfig::new(crate::provider::Provider::Bedrock, "m:0");
        config.region = Some("us-west-2".into());
        let env = env_of(&[
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_SESSION_TOKEN", "session"),
        ]);
        let backend = Bedrock::new(config, &env, None)
            .unwrap()
            .with_clock(suite_time);
        let request = backend.build(b"{}").unwrap();
        let headers = request.headers();
        assert_eq!(headers["x-amz-date"], "20150830T123600Z");
        assert_eq!(headers["x-amz-security-token"], "session");
        assert_eq!(headers["host"], "bedrock-runtime.us-west-2.amazonaws.com");
        let authorization = headers["authorization"].to_str().unwrap();
        assert!(
            authorization.starts_with(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-west-2/bedrock/aws4_request, \
                 SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature="
            ),
            "{authorization}"
        );
    }

    fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn ids_are_rekeyed_consistently_and_unpaired_blocks_repaired() {
        let long = "x".repeat(70);
        let request = ModelRequest {
            system: String::new(),
            messages: vec![
                Message::assistant("", vec![call("call_a|fc_b", "t", "not json")], ""),
                Message::tool("call_a|fc_b", r#"{ "ok" : false,"error":"x"}"#, ""),
                Message::assistant(
                    "",
                    vec![call(&long, "t", "[1]"), call("call_a_fc_b", "t", "{}")],
                    "",
                ),
                Message::tool(&long, "", ""),
                Message::tool("stray", "late", ""),
                Message::user("next", ""),
                Message::assistant("dangling", vec![call("call_a|fc_b", "t", "{}")], ""),
            ],
            tools: vec![],
        };
        let body = request_body(&request, 10);
        let expected = json!({
            "messages": [
                {"role": "user", "content": [{"text": LEADING_USER_PLACEHOLDER}]},
                {"role": "assistant", "content": [
                    {"toolUse": {"toolUseId": "call_a_fc_b", "name": "t", "input": {}}}]},
                {"role": "user", "content": [
                    {"toolResult": {"toolUseId": "call_a_fc_b", "content": [{"text": r#"{ "ok" : false,"error":"x"}"#}], "status": "error"}}]},
                {"role": "assistant", "content": [
                    {"toolUse": {"toolUseId": "x".repeat(64), "name": "t", "input": {}}},
                    {"toolUse": {"toolUseId": "call_a_fc_b_2", "name": "t", "input": {}}}]},
                {"role": "user", "content": [
                    {"toolResult": {"toolUseId": "x".repeat(64), "content": [{"text": "(no output)"}], "status": "success"}},
                    {"toolResult": {"toolUseId": "call_a_fc_b_2", "content": [{"text": r#"{"ok":false,"error":"no result was recorded for this tool call"}"#}], "status": "error"}},
                    {"text": "[result of tool call stray]\nlate"},
                    {"text": "next"}]},
                {"role": "assistant", "content": [
                    {"text": "dangling"},
                    {"toolUse": {"toolUseId": "call_a_fc_b_3", "name": "t", "input": {}}}]},
                {"role": "user", "content": [
                    {"toolResult": {"toolUseId": "call_a_fc_b_3", "content": [{"text": r#"{"ok":false,"error":"no result was recorded for this tool call"}"#}], "status": "error"}}]},
            ],
            "toolConfig": {"tools": [{"toolSpec": {
                "name": "t",
                "description": "A tool used earlier in this conversation; not offered now.",
                "inputSchema": {"json": {"type": "object"}},
            }}]},
            "inferenceConfig": {"maxTokens": 10},
        });
        assert_eq!(body, expected);
    }

    #[test]
    fn plain_requests_have_no_tool_config_and_offered_tools_do() {
        let mut request = ModelRequest {
            system: "sys".into(),
            messages: vec![Message::user("hi", ""), Message::user("again", "")],
            tools: vec![],
        };
        assert_eq!(
            request_body(&request, 5),
            json!({
                "system": [{"text": "sys"}],
                "messages": [{"role": "user", "content": [{"text": "hi"}, {"text": "again"}]}],
                "inferenceConfig": {"maxTokens": 5},
            })
        );
        request.tools.push(ToolSpec {
            name: "read_file".into(),
            description: "Reads".into(),
            input_schema: json!({"type": "object"}),
        });
        assert_eq!(
            request_body(&request, 5)["toolConfig"],
            json!({"tools": [{"toolSpec": {"name": "read_file", "description": "Reads", "inputSchema": {"json": {"type": "object"}}}}]})
        );
        assert!(is_error_observation(r#"{"ok":false}"#));
        assert!(!is_error_observation(r#"{"ok":true}"#));
        assert!(!is_error_observation("ok false"));
    }

    /// An event-stream frame with string headers.
    fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
        let mut head = Vec::new();
        for (name, value) in headers {
            head.push(name.len() as u8);
            head.extend_from_slice(name.as_bytes());
            head.push(7);
            head.extend_from_slice(&(value.len() as u16).to_be_bytes());
            head.extend_from_slice(value.as_bytes());
        }
        let total = 16 + head.len() + payload.len();
        let mut out = Vec::new();
        out.extend_from_slice(&(total as u32).to_be_bytes());
        out.extend_from_slice(&(head.len() as u32).to_be_bytes());
        let prelude_crc = crc32fast::hash(&out);
        out.extend_from_slice(&prelude_crc.to_be_bytes());
        out.extend_from_slice(&head);
        out.extend_from_slice(payload);
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    fn event(kind: &str, payload: Value) -> Vec<u8> {
        frame(
            &[
                (":event-type", kind),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            payload.to_string().as_bytes(),
        )
    }

    #[test]
    fn frames_decode_byte_by_byte_and_skip_other_header_types() {
        let mut bytes = event("messageStart", json!({"role": "assistant"}));
        // A frame with a non-string header (type 4, an i32) before the string ones.
        let mut odd = frame(&[(":message-type", "event")], b"{}");
        let extra = [1u8, b'n', 4, 0, 0, 0, 7];
        odd.splice(12..12, extra);
        let total = odd.len() as u32;
        let headers = (odd.len() - 16 - 2) as u32;
        odd.truncate(odd.len() - 4);
        odd[0..4].copy_from_slice(&total.to_be_bytes());
        odd[4..8].copy_from_slice(&headers.to_be_bytes());
        let prelude = crc32fast::hash(&odd[0..8]);
        odd[8..12].copy_from_slice(&prelude.to_be_bytes());
        let crc = crc32fast::hash(&odd);
        odd.extend_from_slice(&crc.to_be_bytes());
        bytes.extend_from_slice(&odd);
        let mut decoder = FrameDecoder::default();
        let mut frames = Vec::new();
        for byte in &bytes {
            decoder.push(std::slice::from_ref(byte));
            while let Some(frame) = decoder.next_frame().unwrap() {
                frames.push(frame);
            }
        }
        assert!(decoder.is_empty());
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0].header(":event-type"), Some("messageStart"));
        assert_eq!(frames[1].header(":message-type"), Some("event"));
        assert_eq!(frames[1].header("n"), None);
        assert_eq!(frames[1].payload, b"{}");
    }

    #[test]
    fn bad_crcs_are_protocol_errors() {
        let good = event("messageStop", json!({"stopReason": "end_turn"}));
        for at in [9usize, good.len() - 1, 30] {
            let mut bad = good.clone();
            bad[at] ^= 0x01;
            let mut decoder = FrameDecoder::default();
            decoder.push(&bad);
            let error = decoder.next_frame().unwrap_err();
            assert_eq!(error.kind, ErrorKind::Protocol, "byte {at}");
            assert!(error.message.contains("CRC"), "{}", error.message);
        }
    }

    #[test]
    fn a_stream_cut_short_is_transient() {
        let mut reader = StreamReader::default();
        reader
            .push(&event(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"text": "hi"}}),
            ))
            .unwrap();
        assert_eq!(reader.finish().unwrap_err().kind, ErrorKind::Transient);
        let mut reader = StreamReader::default();
        let stop = event("messageStop", json!({}));
        reader.push(&stop[..stop.len() - 3]).unwrap();
        assert_eq!(reader.finish().unwrap_err().kind, ErrorKind::Transient);
    }

    #[test]
    fn tool_choice_none_is_refused_at_start() {
        let mut config = ProviderConfig::new(crate::provider::Provider::Bedrock, "m");
        config.region = Some("us-east-1".into());
        config.api_key = Some(Secret::new("k"));
        config.tool_choice = Some(ToolChoice::None);
        let error = Bedrock::new(config, &env_of(&[]), None).unwrap_err();
        assert_eq!(error.kind, ErrorKind::BadRequest);
        assert!(
            error.message.contains("model.tool_choice"),
            "{}",
            error.message
        );
    }
}
