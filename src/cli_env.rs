//! The environment variables the real Claude Code CLI reads, each in one
//! class: [`Class::Credential`] (whose account pays, which endpoint serves),
//! [`Class::Shaping`] (what a new session is: models, prompts, tools,
//! memory), [`Class::Inert`] (cannot change a session's content). The scope
//! of a conversation (`identity.rs`) keeps a hash of the credentials and of
//! each shaping variable, and nothing of the rest.
//!
//! # Where the list came from
//!
//! [`names_read_by`] over the linux-x64 platform binary (the package
//! `@anthropic-ai/claude-code-linux-x64`: a native executable with the
//! JavaScript bundle inside) of four releases: 2.1.302 (the oldest
//! supported), 2.1.315, 2.1.330 (the pin, `.ci/claude-code-version`) and
//! 2.1.332 (the newest when this was written). It found 1,454, 1,492, 1,636
//! and 1,658 names, 1,740 in all, every one of them in [`VARS`]. [`VARS`] also
//! holds 56 names those releases read in ways no pattern below follows,
//! found by reading the bundle and marked "read indirectly": the per-model
//! `VERTEX_REGION_*` (a table of another module), and names on the CLI's own
//! lists of variables it knows, allows in settings, or checks as a provider's.
//!
//! The extraction runs over the raw bytes, split at control bytes (a bundled
//! module's source is one run of text; machine code breaks into short runs),
//! and finds, in each module:
//! - `process.env.X`, `process.env?.X`, `process.env["X"]` (any quote), and
//!   `process.env[K]` where the module declares `var K="X"` (and `K` as
//!   nothing else);
//! - the typed registry that recent releases read nearly all their own
//!   variables through (`s.CLAUDE_CODE_X`, a proxy over `process.env`): a
//!   module's `Wr(a,{X:()=>b,…})` whose bindings are mostly `b=H.bool()`,
//!   `H.str()`, `H.int(…)`, `H.triBool()`… (property names, which minifying
//!   keeps). It alone finds 1,373 names of 2.1.330;
//! - `Bun.env.X` and a bare `env.X`; `e=process.env` (a default parameter's
//!   too) then `e.X`; `{X,Y:y}=process.env`;
//! - the module's helpers that read the variable their parameter names
//!   (`function f(e){return process.env[e]}`, `f=(e)=>…`, and those that pass
//!   it on to one), called with a literal, `f("X")`: in that module, or in
//!   the modules that import the helper by its exported name;
//! - literal lists read item by item: `for(let k of["X","Y"])…process.env[k]`,
//!   `["X"].some((k)=>process.env[k])`, or the same over a list the module
//!   declares once (`var L=["X"]`);
//! - the built-in plugins' `env.get("X")` and their manifests'
//!   `env:{reads:["X",…]}`;
//! - OpenTelemetry's `getStringFromEnv("X")` and its siblings, and the AWS
//!   SDK's `environmentVariableSelector:(e)=>e.X` (or `e[K]`).
//!
//! # Updating it
//!
//! Run `tests/e2e/cli_env.rs` against the new release
//! (`CLAUDE_SHIM_TEST_CLI=… cargo test --release --test e2e cli_env`): it
//! names every variable the extraction finds that [`VARS`] lacks. Add each in
//! its sorted place with a class, and a reason where it is not obvious. Keep
//! the names a newer release no longer reads: an older supported one still
//! does. Between shaping and inert, when in doubt, shaping: a needless split
//! costs a cold turn, a missed one resumes a session that differs.

/// What a variable can change about a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Whose account pays, which endpoint serves: keys, tokens, base URLs,
    /// the provider and its region, project or profile.
    Credential,
    /// What a new session is: what the model is sent or can do.
    Shaping,
    /// Cannot change a session's content: telemetry, the terminal, timeouts,
    /// transport, the OS and the process around the CLI.
    Inert,
}

use Class::{Credential, Inert, Shaping};

/// The class of `name`, if Claude Code reads it (see [`VARS`]).
pub fn class_of(name: &str) -> Option<Class> {
    VARS.binary_search_by(|(n, _)| n.cmp(&name))
        .ok()
        .map(|i| VARS[i].1)
}

/// Every variable the CLI reads, sorted by name (byte order), with its class.
pub const VARS: &[(&str, Class)] = &[
    ("AGENT_PROXY_AUTH_TOKEN", Credential),
    // the API reached through this proxy
    ("AGENT_PROXY_URL", Credential),
    ("AI_AGENT", Inert),
    ("ALACRITTY_LOG", Inert),
    ("ALACRITTY_WINDOW_ID", Inert),
    ("ALLOW_ANT_COMPUTER_USE_MCP", Shaping),
    ("ALLUSERSPROFILE", Inert),
    ("ALL_PROXY", Inert),
    ("ANDROID_HOME", Inert),
    ("ANDROID_SDK_ROOT", Inert),
    ("ANTHROPIC_API_KEY", Credential),
    ("ANTHROPIC_AUTH_TOKEN", Credential),
    ("ANTHROPIC_AWS_API_KEY", Credential),
    ("ANTHROPIC_AWS_BASE_URL", Credential),
    ("ANTHROPIC_AWS_WORKSPACE_ID", Credential),
    ("ANTHROPIC_BASE_URL", Credential),
    ("ANTHROPIC_BEDROCK_BASE_URL", Credential),
    ("ANTHROPIC_BEDROCK_MANTLE_BASE_URL", Credential),
    ("ANTHROPIC_BEDROCK_REGION_PREFIX", Credential),
    // which Bedrock tier serves
    ("ANTHROPIC_BEDROCK_SERVICE_TIER", Credential),
    ("ANTHROPIC_BETAS", Shaping),
    // where the Anthropic profiles and their credentials are
    ("ANTHROPIC_CONFIG_DIR", Credential),
    ("ANTHROPIC_CUSTOM_HEADERS", Credential),
    ("ANTHROPIC_CUSTOM_MODEL_OPTION", Shaping),
    // a label in the /model picker
    ("ANTHROPIC_CUSTOM_MODEL_OPTION_DESCRIPTION", Inert),
    // a label in the /model picker
    ("ANTHROPIC_CUSTOM_MODEL_OPTION_NAME", Inert),
    // read indirectly
    (
        "ANTHROPIC_CUSTOM_MODEL_OPTION_SUPPORTED_CAPABILITIES",
        Shaping,
    ),
    ("ANTHROPIC_DEFAULT_FABLE_MODEL", Shaping),
    // a label in the /model picker
    ("ANTHROPIC_DEFAULT_FABLE_MODEL_DESCRIPTION", Inert),
    // a label in the /model picker
    ("ANTHROPIC_DEFAULT_FABLE_MODEL_NAME", Inert),
    // read indirectly
    (
        "ANTHROPIC_DEFAULT_FABLE_MODEL_SUPPORTED_CAPABILITIES",
        Shaping,
    ),
    ("ANTHROPIC_DEFAULT_HAIKU_MODEL", Shaping),
    // a label in the /model picker
    ("ANTHROPIC_DEFAULT_HAIKU_MODEL_DESCRIPTION", Inert),
    // a label in the /model picker
    ("ANTHROPIC_DEFAULT_HAIKU_MODEL_NAME", Inert),
    // read indirectly
    (
        "ANTHROPIC_DEFAULT_HAIKU_MODEL_SUPPORTED_CAPABILITIES",
        Shaping,
    ),
    ("ANTHROPIC_DEFAULT_MODEL", Shaping),
    ("ANTHROPIC_DEFAULT_OPUS_MODEL", Shaping),
    // a label in the /model picker
    ("ANTHROPIC_DEFAULT_OPUS_MODEL_DESCRIPTION", Inert),
    // a label in the /model picker
    ("ANTHROPIC_DEFAULT_OPUS_MODEL_NAME", Inert),
    // read indirectly
    (
        "ANTHROPIC_DEFAULT_OPUS_MODEL_SUPPORTED_CAPABILITIES",
        Shaping,
    ),
    ("ANTHROPIC_DEFAULT_SONNET_MODEL", Shaping),
    // a label in the /model picker
    ("ANTHROPIC_DEFAULT_SONNET_MODEL_DESCRIPTION", Inert),
    // a label in the /model picker
    ("ANTHROPIC_DEFAULT_SONNET_MODEL_NAME", Inert),
    // read indirectly
    (
        "ANTHROPIC_DEFAULT_SONNET_MODEL_SUPPORTED_CAPABILITIES",
        Shaping,
    ),
    // the Anthropic environment the SDK's runner serves
    ("ANTHROPIC_ENVIRONMENT_ID", Credential),
    ("ANTHROPIC_ENVIRONMENT_KEY", Credential),
    ("ANTHROPIC_FEDERATION_RULE_ID", Credential),
    ("ANTHROPIC_FOUNDRY_API_KEY", Credential),
    ("ANTHROPIC_FOUNDRY_AUTH_TOKEN", Credential),
    ("ANTHROPIC_FOUNDRY_BASE_URL", Credential),
    ("ANTHROPIC_FOUNDRY_RESOURCE", Credential),
    ("ANTHROPIC_GOOGLE_CLOUD_BASE_URL", Credential),
    ("ANTHROPIC_GOOGLE_CLOUD_LOCATION", Credential),
    ("ANTHROPIC_GOOGLE_CLOUD_PROJECT", Credential),
    ("ANTHROPIC_GOOGLE_CLOUD_WORKSPACE_ID", Credential),
    ("ANTHROPIC_IDENTITY_TOKEN", Credential),
    ("ANTHROPIC_IDENTITY_TOKEN_FILE", Credential),
    ("ANTHROPIC_LOG", Inert),
    ("ANTHROPIC_MODEL", Shaping),
    ("ANTHROPIC_ORGANIZATION_ID", Credential),
    ("ANTHROPIC_PROFILE", Credential),
    ("ANTHROPIC_SCOPE", Credential),
    ("ANTHROPIC_SERVICE_ACCOUNT_ID", Credential),
    // a per-run identifier
    ("ANTHROPIC_SESSION_ID", Inert),
    ("ANTHROPIC_SMALL_FAST_MODEL", Shaping),
    ("ANTHROPIC_SMALL_FAST_MODEL_AWS_REGION", Credential),
    // the API endpoint, as a socket
    ("ANTHROPIC_UNIX_SOCKET", Credential),
    ("ANTHROPIC_VERTEX_BASE_URL", Credential),
    ("ANTHROPIC_VERTEX_PROJECT_ID", Credential),
    ("ANTHROPIC_WEBHOOK_SIGNING_KEY", Inert),
    ("ANTHROPIC_WORKSPACE_ID", Credential),
    // a per-run identifier
    ("ANTHROPIC_WORK_ID", Inert),
    ("ANTHROPIC_WORK_SECRET", Credential),
    ("ANT_CLAUDE_CODE_METRICS_ENDPOINT", Inert),
    ("ANT_OTEL_EXPORTER_OTLP_ENDPOINT", Inert),
    ("ANT_OTEL_EXPORTER_OTLP_HEADERS", Inert),
    ("ANT_OTEL_EXPORTER_OTLP_PROTOCOL", Inert),
    ("ANT_OTEL_LOGS_EXPORTER", Inert),
    ("ANT_OTEL_METRICS_EXPORTER", Inert),
    ("ANT_OTEL_RESOURCE_ATTRIBUTES", Inert),
    ("ANT_OTEL_TRACES_EXPORTER", Inert),
    ("API_FORCE_IDLE_TIMEOUT", Inert),
    ("API_TIMEOUT_MS", Inert),
    ("APPDATA", Inert),
    ("APP_URL", Inert),
    ("AUTOMODE_DECISION_LOG", Inert),
    ("AWS_ACCESS_KEY_ID", Credential),
    ("AWS_ACCOUNT_ID", Credential),
    ("AWS_BEARER_TOKEN_BEDROCK", Credential),
    ("AWS_CA_BUNDLE", Inert),
    ("AWS_CONFIG_FILE", Credential),
    ("AWS_CONTAINER_AUTHORIZATION_TOKEN", Credential),
    ("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", Credential),
    ("AWS_CONTAINER_CREDENTIALS_FULL_URI", Credential),
    ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", Credential),
    // metadata of the keys, not whose they are
    ("AWS_CREDENTIAL_EXPIRATION", Inert),
    ("AWS_CREDENTIAL_SCOPE", Credential),
    ("AWS_DEFAULTS_MODE", Inert),
    // read indirectly
    ("AWS_DEFAULT_PROFILE", Credential),
    ("AWS_DEFAULT_REGION", Credential),
    // where AWS credentials come from
    ("AWS_EC2_METADATA_DISABLED", Credential),
    // where AWS credentials come from
    ("AWS_EC2_METADATA_SERVICE_ENDPOINT", Credential),
    // where AWS credentials come from
    ("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", Credential),
    // where AWS credentials come from
    ("AWS_EC2_METADATA_V1_DISABLED", Credential),
    ("AWS_ENDPOINT_URL", Credential),
    ("AWS_ENDPOINT_URL_BEDROCK", Credential),
    ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", Credential),
    ("AWS_ENDPOINT_URL_STS", Credential),
    ("AWS_EXECUTION_ENV", Inert),
    ("AWS_LAMBDA_BENCHMARK_MODE", Inert),
    ("AWS_LAMBDA_FUNCTION_NAME", Inert),
    ("AWS_LAMBDA_NODEJS_NO_GLOBAL_AWSLAMBDA", Inert),
    ("AWS_LOGIN_CACHE_DIRECTORY", Credential),
    ("AWS_MAX_ATTEMPTS", Inert),
    ("AWS_PROFILE", Credential),
    ("AWS_REGION", Credential),
    ("AWS_RETRY_MODE", Inert),
    ("AWS_ROLE_ARN", Credential),
    ("AWS_ROLE_SESSION_NAME", Credential),
    ("AWS_SDK_UA_APP_ID", Inert),
    ("AWS_SECRET_ACCESS_KEY", Credential),
    ("AWS_SESSION_TOKEN", Credential),
    ("AWS_SHARED_CREDENTIALS_FILE", Credential),
    // read indirectly
    ("AWS_USE_DUALSTACK_ENDPOINT", Credential),
    ("AWS_USE_FIPS_ENDPOINT", Credential),
    ("AWS_WEB_IDENTITY_TOKEN_FILE", Credential),
    ("AZURE_ADDITIONALLY_ALLOWED_TENANTS", Credential),
    ("AZURE_AUTHORITY_HOST", Credential),
    ("AZURE_CLIENT_CERTIFICATE_PASSWORD", Credential),
    ("AZURE_CLIENT_CERTIFICATE_PATH", Credential),
    ("AZURE_CLIENT_ID", Credential),
    ("AZURE_CLIENT_SECRET", Credential),
    ("AZURE_CLIENT_SEND_CERTIFICATE_CHAIN", Credential),
    ("AZURE_FEDERATED_TOKEN_FILE", Credential),
    ("AZURE_FUNCTIONS_ENVIRONMENT", Inert),
    ("AZURE_IDENTITY_DISABLE_MULTITENANTAUTH", Credential),
    ("AZURE_PASSWORD", Credential),
    ("AZURE_POD_IDENTITY_AUTHORITY_HOST", Credential),
    ("AZURE_REGIONAL_AUTHORITY_NAME", Credential),
    ("AZURE_TENANT_ID", Credential),
    ("AZURE_TOKEN_CREDENTIALS", Credential),
    ("AZURE_USERNAME", Credential),
    // the Bash tool's description states its timeouts
    ("BASH_DEFAULT_TIMEOUT_MS", Shaping),
    ("BASH_ENV", Inert),
    ("BASH_MAX_OUTPUT_LENGTH", Shaping),
    // the Bash tool's description states its timeouts
    ("BASH_MAX_TIMEOUT_MS", Shaping),
    ("BAT_THEME", Inert),
    ("BETA_TRACING_ENDPOINT", Inert),
    ("BOTO_PATH", Inert),
    ("BROWSER", Inert),
    ("BUF_BIGINT_DISABLE", Inert),
    ("BUGHUNTER_DEV_BUNDLE_B64", Inert),
    ("BUGHUNTER_FLEET_SIZE", Inert),
    ("BUILDKITE", Inert),
    ("BUN_CHROME_PATH", Inert),
    ("BUN_CRASH_REPORT_URL", Inert),
    ("BUN_DISABLE_DYNAMIC_CHUNK_SIZE", Inert),
    ("BUN_ENABLE_CRASH_REPORTING", Inert),
    ("BUN_FEATURE_FLAG_VERBOSE_WARNINGS", Inert),
    ("BUN_GC_TIMER_DISABLE", Inert),
    ("BUN_INSPECT_NOTIFY", Inert),
    ("BUN_INSTALL", Inert),
    ("BUN_OPTIONS", Inert),
    ("BUN_PORT", Inert),
    ("C9_PID", Inert),
    ("C9_USER", Inert),
    ("CACERT_UPDATES", Inert),
    ("CARGO_HTTP_CAINFO", Inert),
    ("CCR_AGENT_PROXY_CA_CERT_B64", Inert),
    ("CCR_AGENT_PROXY_CA_WATCH_ENABLED", Inert),
    ("CCR_AGENT_PROXY_CONNECTION_LIMITS_DISABLED", Inert),
    ("CCR_AGENT_PROXY_ENABLED", Inert),
    ("CCR_AGENT_PROXY_FRAME_HOSTS", Inert),
    ("CCR_AGENT_PROXY_INCLUDE_HOSTS", Inert),
    ("CCR_AGENT_PROXY_JAVA_STORE_DIRECT_DISABLED", Inert),
    ("CCR_AGENT_PROXY_LONG_POOL_IDLE_DISABLED", Inert),
    ("CCR_AGENT_PROXY_MAX_BUSY_TUNNELS", Inert),
    ("CCR_AGENT_PROXY_NO_PROXY_LOCAL_ONLY", Inert),
    ("CCR_AGENT_PROXY_NSS_RECORDS_DISABLED", Inert),
    ("CCR_AGENT_PROXY_RECEIVE_GATE_DISABLED", Inert),
    ("CCR_AGENT_PROXY_RELAY_MODE", Inert),
    ("CCR_AGENT_PROXY_STANDALONE_URL", Inert),
    ("CCR_AGENT_PROXY_TOKEN_FILE_DESCRIPTOR", Inert),
    ("CCR_AGENT_PROXY_UPLOAD_GATE_DISABLED", Inert),
    ("CCR_BYOC_RESOURCE_WATCHDOG_TELEMETRY", Inert),
    ("CCR_CHECKPOINT_URL", Inert),
    ("CCR_ENABLE_BUNDLE", Inert),
    ("CCR_FORCE_BUNDLE", Inert),
    ("CCR_ON_BRANCH_DEFAULT_GUARD", Inert),
    ("CCR_SESSION_PROFILE", Inert),
    ("CCR_SHR_SSE_HINTS", Inert),
    ("CCR_SPAWN_TIMESTAMP_MS", Inert),
    ("CDPATH", Inert),
    ("CF_PAGES", Inert),
    ("CHOKIDAR_INTERVAL", Inert),
    ("CHOKIDAR_USEPOLLING", Inert),
    ("CI", Inert),
    ("CIRCLECI", Inert),
    ("CI_NAME", Inert),
    ("CLAUBBIT", Inert),
    // set by a parent Claude Code; the shim chooses the session
    ("CLAUDECODE", Inert),
    ("CLAUDE_AFK_COUNTDOWN_MS", Inert),
    ("CLAUDE_AFK_TIMEOUT_MS", Inert),
    // how remote session logs are fetched
    ("CLAUDE_AFTER_LAST_COMPACT", Inert),
    ("CLAUDE_AGENTS_AUTO_RELAUNCHED_AT", Inert),
    ("CLAUDE_AGENTS_SELECT", Shaping),
    // the calling app, in the user agent
    ("CLAUDE_AGENT_SDK_CLIENT_APP", Inert),
    ("CLAUDE_AGENT_SDK_DISABLE_BUILTIN_AGENTS", Shaping),
    ("CLAUDE_AGENT_SDK_DISABLE_MCP_MANIFESTS", Shaping),
    ("CLAUDE_AGENT_SDK_MCP_NO_PREFIX", Shaping),
    // the calling SDK's version, in the user agent
    ("CLAUDE_AGENT_SDK_VERSION", Inert),
    // the artifact service, not the model
    ("CLAUDE_ARTIFACT_HOST_GRANT", Inert),
    ("CLAUDE_ASYNC_AGENT_STALL_TIMEOUT_MS", Inert),
    // when the CLI compacts: the shim counts compactions itself
    ("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", Inert),
    ("CLAUDE_AUTO_BACKGROUND_TASKS", Shaping),
    ("CLAUDE_AX_ANNOUNCEMENT_HOLD_MS", Inert),
    ("CLAUDE_AX_PREPARK_MS", Inert),
    ("CLAUDE_AX_REWRITE_HELD_ANNOUNCEMENT", Inert),
    ("CLAUDE_AX_SCREEN_READER", Inert),
    ("CLAUDE_AX_STARTUP_QUIET_MS", Inert),
    ("CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR", Shaping),
    ("CLAUDE_BG_AUTH_SNAPSHOT_PATH", Inert),
    ("CLAUDE_BG_AUTO_MEMORY_OFF", Shaping),
    ("CLAUDE_BG_BACKEND", Inert),
    ("CLAUDE_BG_CARRIED_PROMPTS_SHA256", Inert),
    ("CLAUDE_BG_CLAIM_AUTH", Inert),
    ("CLAUDE_BG_CRASH_UPLOAD_JUDGED", Inert),
    // account details the background daemon hands on
    ("CLAUDE_BG_DISPATCHER_RATE_LIMIT_TIER", Credential),
    // account details the background daemon hands on
    ("CLAUDE_BG_DISPATCHER_SUBSCRIPTION_TYPE", Credential),
    ("CLAUDE_BG_DISPATCH_ENTRYPOINT", Inert),
    // which endpoint serves the background session
    ("CLAUDE_BG_GATEWAY_ROUTED", Credential),
    // which endpoint serves the background session
    ("CLAUDE_BG_GATEWAY_WITHHELD", Credential),
    ("CLAUDE_BG_ISOLATION", Shaping),
    ("CLAUDE_BG_MEMORY_TOGGLED_OFF", Shaping),
    ("CLAUDE_BG_POST_CLEAR_RESPAWN", Inert),
    ("CLAUDE_BG_PTY_AUTH", Inert),
    ("CLAUDE_BG_RENDEZVOUS_SOCK", Inert),
    ("CLAUDE_BG_RV_AUTH", Inert),
    // account details the background daemon hands on
    ("CLAUDE_BG_SESSION_CREDENTIAL", Credential),
    ("CLAUDE_BG_SESSION_PERMISSION_RULES", Shaping),
    ("CLAUDE_BG_SILENT_PEER_TIMEOUT_MS", Inert),
    ("CLAUDE_BG_SOCKET_TOKENS_PATH", Inert),
    ("CLAUDE_BG_SOCK_ADMIT_SILENT_PEERS", Inert),
    ("CLAUDE_BG_SOURCE", Inert),
    ("CLAUDE_BG_STARTUP_WEDGE_MS", Inert),
    ("CLAUDE_BG_TCC_DISCLAIMED", Inert),
    ("CLAUDE_BG_WORKSPACE_TRUSTED", Inert),
    ("CLAUDE_BRIDGE_BASE_URL", Inert),
    ("CLAUDE_BRIDGE_OAUTH_TOKEN", Credential),
    ("CLAUDE_BRIDGE_REATTACH_GROUPING", Inert),
    ("CLAUDE_BRIDGE_REATTACH_NO_BACKFILL", Inert),
    ("CLAUDE_BRIDGE_REATTACH_OUTBOUND_ONLY", Inert),
    // the bridged session's owner
    ("CLAUDE_BRIDGE_REATTACH_OWNER_ACCT", Credential),
    // the bridged session's owner
    ("CLAUDE_BRIDGE_REATTACH_OWNER_ORG", Credential),
    ("CLAUDE_BRIDGE_REATTACH_SEQ", Inert),
    ("CLAUDE_BRIDGE_REATTACH_SESSION", Inert),
    ("CLAUDE_BRIDGE_SESSION_INGRESS_URL", Inert),
    ("CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS", Inert),
    ("CLAUDE_CHROME_CLASSIFIER_FLOOR", Shaping),
    // a per-run identifier
    ("CLAUDE_CHROME_PAIRED_DEVICE_ID", Inert),
    ("CLAUDE_CHROME_PERMISSION_MODE", Shaping),
    // a per-run identifier
    ("CLAUDE_CHROME_TAB_GROUP_KEY", Inert),
    ("CLAUDE_CLIENT_PRESENCE_FILE", Inert),
    ("CLAUDE_CODE_3P_PROBE_WROTE_HAIKU_DEFAULT", Shaping),
    ("CLAUDE_CODE_3P_PROBE_WROTE_OPUS_DEFAULT", Shaping),
    ("CLAUDE_CODE_3P_PROBE_WROTE_SONNET_DEFAULT", Shaping),
    ("CLAUDE_CODE_3P_SEEDED_OPUS_DEFAULT", Shaping),
    ("CLAUDE_CODE_3P_SEEDED_SONNET_DEFAULT", Shaping),
    ("CLAUDE_CODE_ACCESSIBILITY", Inert),
    ("CLAUDE_CODE_ACCOUNT_TAGGED_ID", Credential),
    ("CLAUDE_CODE_ACCOUNT_UUID", Credential),
    // set by the GitHub Action, which runs with its own prompts
    ("CLAUDE_CODE_ACTION", Shaping),
    ("CLAUDE_CODE_ACT_DONT_REDERIVE", Shaping),
    ("CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD", Shaping),
    ("CLAUDE_CODE_ADDITIONAL_PROTECTION", Shaping),
    ("CLAUDE_CODE_ADOPT_UNDERIVABLE_PARKED_PERMISSION", Inert),
    ("CLAUDE_CODE_AGENT", Shaping),
    ("CLAUDE_CODE_AGENTS_MD_ROWS_EVERY_PROCESS", Shaping),
    ("CLAUDE_CODE_AGENT_PROGRESS_SUMMARIES", Inert),
    ("CLAUDE_CODE_AGENT_PROXY_GH_SHIM", Inert),
    ("CLAUDE_CODE_AGENT_PROXY_GIT_CONFIG", Inert),
    ("CLAUDE_CODE_AGENT_PROXY_GIT_HOSTS", Inert),
    ("CLAUDE_CODE_AGENT_VIEW_RELAUNCH", Inert),
    ("CLAUDE_CODE_ALLOW_OTHER_MODELS", Shaping),
    // read indirectly
    ("CLAUDE_CODE_ALTGR_AS_TEXT", Inert),
    ("CLAUDE_CODE_ALT_SCREEN_FULL_REPAINT", Inert),
    ("CLAUDE_CODE_ALWAYS_ENABLE_EFFORT", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_AMBER_ASTROLABE", Shaping),
    ("CLAUDE_CODE_API_BASE_URL", Credential),
    ("CLAUDE_CODE_API_KEY_FILE_DESCRIPTOR", Credential),
    ("CLAUDE_CODE_API_KEY_HELPER_TTL_MS", Credential),
    ("CLAUDE_CODE_APPEND_PROMPT_HEAD", Shaping),
    ("CLAUDE_CODE_ARTIFACT", Shaping),
    // the artifact service, not the model
    ("CLAUDE_CODE_ARTIFACTS_API_BASE_URL", Inert),
    // the artifact service, not the model
    ("CLAUDE_CODE_ARTIFACTS_API_TOKEN", Inert),
    ("CLAUDE_CODE_ARTIFACT_ASK_FIRST", Shaping),
    ("CLAUDE_CODE_ARTIFACT_ASSETS", Shaping),
    // the artifact service, not the model
    ("CLAUDE_CODE_ARTIFACT_ASSET_BASE_URL", Inert),
    ("CLAUDE_CODE_ARTIFACT_AUTO_OPEN", Inert),
    ("CLAUDE_CODE_ARTIFACT_COMMENTS", Shaping),
    ("CLAUDE_CODE_ARTIFACT_COMMENTS_AUTOREACT", Shaping),
    ("CLAUDE_CODE_ARTIFACT_COMMENT_FAST_ACK", Shaping),
    ("CLAUDE_CODE_ARTIFACT_COMMENT_FAST_ACK_FIXED", Shaping),
    ("CLAUDE_CODE_ARTIFACT_COMMENT_RESPONDER", Shaping),
    ("CLAUDE_CODE_ARTIFACT_DB", Shaping),
    ("CLAUDE_CODE_ARTIFACT_DB_STR_REPLACE", Shaping),
    ("CLAUDE_CODE_ARTIFACT_DELETE", Shaping),
    ("CLAUDE_CODE_ARTIFACT_FRESH_READ", Shaping),
    ("CLAUDE_CODE_ARTIFACT_HOT", Shaping),
    // the artifact service, not the model
    ("CLAUDE_CODE_ARTIFACT_LIVE_BASE_URL", Inert),
    ("CLAUDE_CODE_ARTIFACT_LIVE_WATCH", Shaping),
    ("CLAUDE_CODE_ARTIFACT_MULTI_FILE", Shaping),
    ("CLAUDE_CODE_ARTIFACT_OPENING_PREFETCH", Inert),
    ("CLAUDE_CODE_ARTIFACT_OPEN_ACTION", Shaping),
    ("CLAUDE_CODE_ARTIFACT_PATH_PIN", Shaping),
    ("CLAUDE_CODE_ARTIFACT_PIN", Shaping),
    ("CLAUDE_CODE_ARTIFACT_PRESENCE", Inert),
    ("CLAUDE_CODE_ARTIFACT_PREVIEW", Shaping),
    ("CLAUDE_CODE_ARTIFACT_PREVIEW_EMULATOR", Shaping),
    ("CLAUDE_CODE_ARTIFACT_PUBLISH_EDITS", Shaping),
    ("CLAUDE_CODE_ARTIFACT_QUICKSTART", Shaping),
    ("CLAUDE_CODE_ARTIFACT_REPL", Shaping),
    ("CLAUDE_CODE_ARTIFACT_ROOM", Shaping),
    ("CLAUDE_CODE_ARTIFACT_SHARE", Shaping),
    ("CLAUDE_CODE_ARTIFACT_SHARE_PROBE_REUSE_MS", Inert),
    ("CLAUDE_CODE_ARTIFACT_START_KIT", Shaping),
    // the artifact service, not the model
    ("CLAUDE_CODE_ARTIFACT_SYNC_BASE_URL", Inert),
    ("CLAUDE_CODE_ARTIFACT_TOOLSET", Shaping),
    ("CLAUDE_CODE_ARTIFACT_TYPES", Shaping),
    ("CLAUDE_CODE_ARTIFACT_TYPE_CATALOG", Shaping),
    ("CLAUDE_CODE_ARTIFACT_TYPE_CLOUD_CREATE", Shaping),
    ("CLAUDE_CODE_ARTIFACT_VERIFY", Shaping),
    ("CLAUDE_CODE_ARTIFACT_VERSIONS", Shaping),
    // the artifact service, not the model
    ("CLAUDE_CODE_ARTIFACT_VIEWER_BASE_URL", Inert),
    ("CLAUDE_CODE_ATTACHMENTS_BY_PATH", Shaping),
    ("CLAUDE_CODE_ATTACHMENTS_IN_USER_DATA", Shaping),
    ("CLAUDE_CODE_ATTRIBUTION_ANNOUNCEMENT", Inert),
    // a line of the system prompt
    ("CLAUDE_CODE_ATTRIBUTION_HEADER", Shaping),
    // whose spend the session is
    ("CLAUDE_CODE_ATTRIBUTION_PROJECT", Credential),
    ("CLAUDE_CODE_ATTRIBUTION_STATUS_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_AUTH_FAIL_EXIT_MS", Inert),
    // directories the session can reach
    ("CLAUDE_CODE_AUTOMOUNT_ROOTS", Shaping),
    ("CLAUDE_CODE_AUTOUPDATER_DISABLED_BY_HOST", Inert),
    ("CLAUDE_CODE_AUTO_BACKGROUND_TIMEOUT_MS", Inert),
    // when the CLI compacts: the shim counts compactions itself
    ("CLAUDE_CODE_AUTO_COMPACT_WINDOW", Inert),
    ("CLAUDE_CODE_AUTO_CONNECT_IDE", Inert),
    ("CLAUDE_CODE_AUTO_MODE_EXTERNAL_PERMISSIONS", Shaping),
    ("CLAUDE_CODE_AUTO_MODE_FULL_CONTEXT", Shaping),
    ("CLAUDE_CODE_AUTO_MODE_MODEL", Shaping),
    ("CLAUDE_CODE_AUTO_MODE_SERVER", Shaping),
    ("CLAUDE_CODE_AUTO_MODE_TIER", Shaping),
    ("CLAUDE_CODE_AWS_CHAIN_RESOLVE_TIMEOUT_MS", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_BASALT_COVE", Shaping),
    ("CLAUDE_CODE_BASE_REF", Shaping),
    ("CLAUDE_CODE_BASE_REFS", Shaping),
    ("CLAUDE_CODE_BASH_EDIT_DIFF", Shaping),
    ("CLAUDE_CODE_BASH_OUTPUT_AUDIENCE_NOTE", Shaping),
    ("CLAUDE_CODE_BASH_SANDBOX_SHOW_INDICATOR", Inert),
    ("CLAUDE_CODE_BENCH_LIVE_COUNTS", Inert),
    ("CLAUDE_CODE_BG_CLASSIFIER_MODEL", Shaping),
    ("CLAUDE_CODE_BG_TASKS_REPORT_RUNNING", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_BISON_CAIRN", Shaping),
    // when the CLI compacts: the shim counts compactions itself
    ("CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_BREEZY_HORIZON", Shaping),
    ("CLAUDE_CODE_BRIDGE_CHILD_ARTIFACT", Inert),
    ("CLAUDE_CODE_BRIDGE_CHILD_AUTO_DEFAULT", Shaping),
    ("CLAUDE_CODE_BRIDGE_CHILD_CLI_ENTRYPOINT", Inert),
    ("CLAUDE_CODE_BRIDGE_CHILD_HELD_TO_AUTO", Shaping),
    ("CLAUDE_CODE_BRIDGE_CHILD_MACHINE_SETTINGS", Shaping),
    ("CLAUDE_CODE_BRIDGE_CHILD_PROJECTS_ENTRYPOINT", Inert),
    ("CLAUDE_CODE_BRIDGE_CHILD_START_DIR", Inert),
    ("CLAUDE_CODE_BRIDGE_MCP_CARRIER", Inert),
    // the bridged session's owner
    ("CLAUDE_CODE_BRIDGE_OWNER_ACCOUNT_UUID", Credential),
    // the bridged session's owner
    ("CLAUDE_CODE_BRIDGE_OWNER_ORG_UUID", Credential),
    ("CLAUDE_CODE_BRIDGE_PROMPT_SHA256", Inert),
    ("CLAUDE_CODE_BRIDGE_SESSION_ID", Inert),
    ("CLAUDE_CODE_BRIDGE_SETTINGS_BINDING", Shaping),
    ("CLAUDE_CODE_BRIDGE_SOURCE_DIR", Inert),
    ("CLAUDE_CODE_BRIEF", Shaping),
    ("CLAUDE_CODE_BRIEF_UPLOAD", Shaping),
    // read indirectly
    ("CLAUDE_CODE_BS_AS_CTRL_BACKSPACE", Inert),
    ("CLAUDE_CODE_BUBBLEWRAP", Shaping),
    ("CLAUDE_CODE_BYOC_ENABLE_DATADOG", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_CALM_MOCHI", Shaping),
    ("CLAUDE_CODE_CCR_AFFINITY_KEY", Inert),
    ("CLAUDE_CODE_CCR_EARLY_HYDRATE_PREFETCH", Inert),
    ("CLAUDE_CODE_CCR_EARLY_PLUGINS_SYNC", Inert),
    ("CLAUDE_CODE_CCR_EARLY_REMOTE_CONNECT", Inert),
    ("CLAUDE_CODE_CCR_EARLY_SKILLS_SYNC", Inert),
    ("CLAUDE_CODE_CCR_EARLY_SYNC_AFTER_SETTINGS_REFUSAL", Inert),
    ("CLAUDE_CODE_CCR_EVENT_FLUSH_POLICY", Inert),
    ("CLAUDE_CODE_CCR_FOLD_FIRST_TURN_RESCAN", Inert),
    ("CLAUDE_CODE_CCR_LONG_POLL", Inert),
    ("CLAUDE_CODE_CCR_ONE_PLUGIN_LOAD_PER_RELOAD", Inert),
    ("CLAUDE_CODE_CCR_OWN_CONNECTION_POOL", Inert),
    ("CLAUDE_CODE_CCR_SKIP_FRESH_MIGRATIONS", Inert),
    ("CLAUDE_CODE_CCR_SURFACE", Inert),
    ("CLAUDE_CODE_CCR_WORKER_SOCKET", Inert),
    ("CLAUDE_CODE_CERT_STORE", Inert),
    ("CLAUDE_CODE_CFC_REFUSED", Shaping),
    ("CLAUDE_CODE_CHILD_NOTES_DIR", Inert),
    ("CLAUDE_CODE_CHILD_SESSION", Inert),
    ("CLAUDE_CODE_CHROME_LATE_MCP_SERVER", Inert),
    ("CLAUDE_CODE_CHROME_MCP_ORG_DENIED", Shaping),
    ("CLAUDE_CODE_CHROME_SIDE_PANEL", Inert),
    ("CLAUDE_CODE_CLASSIFIER_SUMMARY", Shaping),
    // mTLS client identity to the API endpoint
    ("CLAUDE_CODE_CLIENT_CERT", Credential),
    ("CLAUDE_CODE_CLIENT_DATA_URL", Shaping),
    // mTLS client identity to the API endpoint
    ("CLAUDE_CODE_CLIENT_KEY", Credential),
    // mTLS client identity to the API endpoint
    ("CLAUDE_CODE_CLIENT_KEY_PASSPHRASE", Credential),
    // read indirectly
    ("CLAUDE_CODE_CLOUD_SESSION_ID", Inert),
    // when the CLI compacts: the shim counts compactions itself
    ("CLAUDE_CODE_COLD_COMPACT", Inert),
    ("CLAUDE_CODE_CONFIG_LOCK_WAIT_MS", Inert),
    ("CLAUDE_CODE_CONFIG_PROBE", Inert),
    ("CLAUDE_CODE_CONFIG_WATCH_EVENTS", Inert),
    // read indirectly
    ("CLAUDE_CODE_CONNECT_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_CONSENT_POINTERLESS", Shaping),
    ("CLAUDE_CODE_CONTAINER_ID", Inert),
    ("CLAUDE_CODE_COORDINATOR_EXTRA_TOOLS", Shaping),
    // the workers' model
    (
        "CLAUDE_CODE_COORDINATOR_FORCE_WORKER_INHERIT_MODEL",
        Shaping,
    ),
    ("CLAUDE_CODE_COORDINATOR_MODE", Shaping),
    ("CLAUDE_CODE_COORDINATOR_SKILL_GUIDANCE", Shaping),
    ("CLAUDE_CODE_COUNT_GARBAGE_COLLECTIONS", Inert),
    ("CLAUDE_CODE_COWORK_FRAME_ARTIFACTS", Shaping),
    ("CLAUDE_CODE_COWORK_PLUGIN_SKILL", Shaping),
    ("CLAUDE_CODE_COWORK_SHELL_CHECK", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_COZY_TEAPOT", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_CRYPTIC_HORIZON", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_CURRIED_TRINKET", Shaping),
    ("CLAUDE_CODE_CUSTOM_OAUTH_URL", Credential),
    ("CLAUDE_CODE_DAEMON_COLD_START", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_DAPPER_CUPCAKE", Shaping),
    ("CLAUDE_CODE_DATADOG_FLUSH_INTERVAL_MS", Inert),
    ("CLAUDE_CODE_DD_ERROR_TRACKING_FLUSH_INTERVAL_MS", Inert),
    ("CLAUDE_CODE_DEBUG_LOGS_DIR", Inert),
    ("CLAUDE_CODE_DEBUG_LOG_LEVEL", Inert),
    ("CLAUDE_CODE_DEBUG_REPAINTS", Inert),
    ("CLAUDE_CODE_DECSTBM", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_DEEP_TWILIGHT", Shaping),
    ("CLAUDE_CODE_DESIGN_OAUTH_CLIENT_ID", Credential),
    ("CLAUDE_CODE_DESKTOP_APP_VERSION", Inert),
    ("CLAUDE_CODE_DESKTOP_CONNECTOR_NAMES", Inert),
    ("CLAUDE_CODE_DESKTOP_MESSAGE_CARD", Inert),
    ("CLAUDE_CODE_DESKTOP_MODE_FROM_RECORD", Inert),
    ("CLAUDE_CODE_DESKTOP_PLUGIN_INSTALL_FRAMES", Inert),
    ("CLAUDE_CODE_DESKTOP_RESULT_FIRST", Inert),
    ("CLAUDE_CODE_DESKTOP_SKILLS_PLUGIN_DIR", Shaping),
    ("CLAUDE_CODE_DESKTOP_SKILL_SWITCHES", Inert),
    ("CLAUDE_CODE_DESKTOP_WORKFLOW_LIMIT_WAIT", Inert),
    ("CLAUDE_CODE_DEV_RAW_CHANGELOG_URL", Inert),
    ("CLAUDE_CODE_DIAGNOSTICS_FILE", Inert),
    ("CLAUDE_CODE_DIFF_COPY_ROOT", Inert),
    ("CLAUDE_CODE_DISABLE_1M_CONTEXT", Shaping),
    ("CLAUDE_CODE_DISABLE_ADAPTIVE_THINKING", Shaping),
    ("CLAUDE_CODE_DISABLE_ADMIN_ENV_UNION", Shaping),
    ("CLAUDE_CODE_DISABLE_ADVISOR_TOOL", Shaping),
    ("CLAUDE_CODE_DISABLE_AGENT_PROGRESS_SUMMARIES", Inert),
    ("CLAUDE_CODE_DISABLE_AGENT_VIEW", Inert),
    ("CLAUDE_CODE_DISABLE_ALTERNATE_SCREEN", Inert),
    ("CLAUDE_CODE_DISABLE_ARTIFACT", Shaping),
    ("CLAUDE_CODE_DISABLE_ATTACHMENTS", Shaping),
    ("CLAUDE_CODE_DISABLE_ATTRIBUTION_BASELINE_REUSE", Shaping),
    ("CLAUDE_CODE_DISABLE_ATTRIBUTION_CROSS_REPO", Shaping),
    ("CLAUDE_CODE_DISABLE_AUTH_REFRESH_LOCK", Inert),
    ("CLAUDE_CODE_DISABLE_AUTO_MEMORY", Shaping),
    ("CLAUDE_CODE_DISABLE_AWAITING_USER_IDLE", Inert),
    ("CLAUDE_CODE_DISABLE_BACKGROUND_TASKS", Shaping),
    ("CLAUDE_CODE_DISABLE_BEDROCK_CONTENT_TYPE_DEFAULT", Inert),
    ("CLAUDE_CODE_DISABLE_BEDROCK_CONTENT_TYPE_GUARD", Inert),
    ("CLAUDE_CODE_DISABLE_BG_EXIT_HANDOFF", Inert),
    ("CLAUDE_CODE_DISABLE_BG_SHELL_PRESSURE_REAP", Inert),
    ("CLAUDE_CODE_DISABLE_BG_STABLE_PATH", Inert),
    ("CLAUDE_CODE_DISABLE_BUNDLED_SKILLS", Shaping),
    ("CLAUDE_CODE_DISABLE_CFC_PROMPT", Shaping),
    ("CLAUDE_CODE_DISABLE_CLAUDE_API_SKILL", Shaping),
    ("CLAUDE_CODE_DISABLE_CLAUDE_CODE_SKILL", Shaping),
    ("CLAUDE_CODE_DISABLE_CLAUDE_MDS", Shaping),
    ("CLAUDE_CODE_DISABLE_CRON", Shaping),
    ("CLAUDE_CODE_DISABLE_DANGEROUS_RM_TIMEOUT", Inert),
    ("CLAUDE_CODE_DISABLE_DEFERRED_TOOL_RESUME", Shaping),
    ("CLAUDE_CODE_DISABLE_DESKTOP_SHIP", Shaping),
    ("CLAUDE_CODE_DISABLE_EARLY_KEY_GUARD", Inert),
    ("CLAUDE_CODE_DISABLE_EMPTY_CLASSIC_DISPATCH_SKIP", Shaping),
    ("CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS", Shaping),
    ("CLAUDE_CODE_DISABLE_EXPLORE_INHERIT_CAP", Shaping),
    ("CLAUDE_CODE_DISABLE_EXPLORE_PLAN_AGENTS", Shaping),
    ("CLAUDE_CODE_DISABLE_EXPORTED_VARIABLE_PROMPT", Shaping),
    ("CLAUDE_CODE_DISABLE_FAST_MODE", Shaping),
    // feature flags shape prompts and tools
    ("CLAUDE_CODE_DISABLE_FEATURE_FLAGS", Shaping),
    ("CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY", Inert),
    ("CLAUDE_CODE_DISABLE_FILE_CHECKPOINTING", Shaping),
    ("CLAUDE_CODE_DISABLE_FILE_MENTIONS", Shaping),
    ("CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS", Shaping),
    ("CLAUDE_CODE_DISABLE_HELD_MESSAGE_RECOGNITION", Shaping),
    ("CLAUDE_CODE_DISABLE_HOOK_FORWARDING", Shaping),
    ("CLAUDE_CODE_DISABLE_HTTPS_AGENT_KEEPING", Inert),
    ("CLAUDE_CODE_DISABLE_INLINE_SHELL_RM_PROMPT", Shaping),
    ("CLAUDE_CODE_DISABLE_LAUNCHER_SIGN_IN", Inert),
    ("CLAUDE_CODE_DISABLE_LAUNCH_COMPOSER", Inert),
    ("CLAUDE_CODE_DISABLE_LAYOUT_CHECK", Inert),
    ("CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP", Shaping),
    ("CLAUDE_CODE_DISABLE_LONE_SEC_DEFAULT_SHORTCUT", Inert),
    ("CLAUDE_CODE_DISABLE_LOOPED_CROSS_CERT_DROP", Inert),
    ("CLAUDE_CODE_DISABLE_MCP_INDEX_ROOM_COUNT", Shaping),
    ("CLAUDE_CODE_DISABLE_MCP_TASKS", Shaping),
    ("CLAUDE_CODE_DISABLE_MCP_TASK_BACKGROUND", Shaping),
    ("CLAUDE_CODE_DISABLE_MEMORY_BULK_INFLATE", Shaping),
    ("CLAUDE_CODE_DISABLE_MEMORY_MASS_DELETE_HOLD", Shaping),
    ("CLAUDE_CODE_DISABLE_MEMORY_PERIODIC_RESYNC", Shaping),
    ("CLAUDE_CODE_DISABLE_MEMORY_RO_UNSAVED_NOTICE", Inert),
    ("CLAUDE_CODE_DISABLE_MEMORY_STREAM_LIST", Shaping),
    ("CLAUDE_CODE_DISABLE_MODEL_ACCESS_FALLBACK", Shaping),
    ("CLAUDE_CODE_DISABLE_MOUNTED_DRIVE_RM_PROMPT", Shaping),
    ("CLAUDE_CODE_DISABLE_MOUSE", Inert),
    ("CLAUDE_CODE_DISABLE_MOUSE_CLICKS", Inert),
    ("CLAUDE_CODE_DISABLE_MTLS_RELOAD_ON_STALE_CONNECTION", Inert),
    ("CLAUDE_CODE_DISABLE_NESTED_CHAIN_IDLE", Inert),
    ("CLAUDE_CODE_DISABLE_NESTED_SESSION_ID", Inert),
    ("CLAUDE_CODE_DISABLE_NESTED_USER_REPAIR", Shaping),
    // telemetry, updates and error reports
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", Inert),
    ("CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK", Inert),
    ("CLAUDE_CODE_DISABLE_NOTIFICATION_PRESENCE_CHECK", Inert),
    (
        "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL",
        Inert,
    ),
    ("CLAUDE_CODE_DISABLE_ORG_MEMORY", Shaping),
    ("CLAUDE_CODE_DISABLE_OTEL_EVENT_SKIP", Inert),
    ("CLAUDE_CODE_DISABLE_PERMISSION_PROMPT_NOTIFY_HOOKS", Inert),
    ("CLAUDE_CODE_DISABLE_PLUGIN_FORWARDING", Shaping),
    ("CLAUDE_CODE_DISABLE_POLICY_SKILLS", Shaping),
    ("CLAUDE_CODE_DISABLE_POOLED_CONNECTION_IDLE_LIMIT", Inert),
    ("CLAUDE_CODE_DISABLE_POWERSHELL_ALIAS_SHADOW_CHECK", Shaping),
    ("CLAUDE_CODE_DISABLE_POWERSHELL_CMD_RM_DENY", Shaping),
    ("CLAUDE_CODE_DISABLE_POWERSHELL_LIBRARY_LOAD_GUARD", Shaping),
    // when the CLI compacts: the shim counts compactions itself
    ("CLAUDE_CODE_DISABLE_PRECOMPACT_SKIP", Inert),
    ("CLAUDE_CODE_DISABLE_PROACTIVITY", Shaping),
    ("CLAUDE_CODE_DISABLE_PROXY_SCHEME_REPAIR", Inert),
    ("CLAUDE_CODE_DISABLE_QUIET_BACKGROUND_WAIT", Inert),
    ("CLAUDE_CODE_DISABLE_REDIRECT_CHECK", Shaping),
    ("CLAUDE_CODE_DISABLE_REDIRECT_DENY_RECHECK", Shaping),
    ("CLAUDE_CODE_DISABLE_REFUSAL_FALLBACK", Shaping),
    ("CLAUDE_CODE_DISABLE_REFUSAL_RETRY", Shaping),
    ("CLAUDE_CODE_DISABLE_RESPONSE_COMPARISON", Shaping),
    ("CLAUDE_CODE_DISABLE_RESPONSE_COMPRESSION", Inert),
    ("CLAUDE_CODE_DISABLE_RESUME_LOAD_GOODBYE_SKIP", Inert),
    ("CLAUDE_CODE_DISABLE_SELF_NAMED_CERT_DROP", Inert),
    ("CLAUDE_CODE_DISABLE_SHELL_HEAD_START", Shaping),
    ("CLAUDE_CODE_DISABLE_SHIP", Shaping),
    ("CLAUDE_CODE_DISABLE_STARTUP_WORK_GATE", Inert),
    ("CLAUDE_CODE_DISABLE_STOP_OF_HELD_MESSAGES", Shaping),
    ("CLAUDE_CODE_DISABLE_STRUCTURED_OUTPUTS", Shaping),
    ("CLAUDE_CODE_DISABLE_SUBAGENT_HANDBACK", Shaping),
    ("CLAUDE_CODE_DISABLE_SUBSTITUTION_RM_PROMPT", Shaping),
    ("CLAUDE_CODE_DISABLE_TERMINAL_TITLE", Inert),
    ("CLAUDE_CODE_DISABLE_THINKING", Shaping),
    ("CLAUDE_CODE_DISABLE_TRANSCRIPT_READ_AHEAD", Inert),
    ("CLAUDE_CODE_DISABLE_TURN_HANDOFF", Shaping),
    ("CLAUDE_CODE_DISABLE_ULTRAREVIEW_TRUST_CHECK", Inert),
    ("CLAUDE_CODE_DISABLE_ULTRATHINK", Shaping),
    (
        "CLAUDE_CODE_DISABLE_UNKNOWN_MODEL_WINDOW_ENFORCEMENT",
        Shaping,
    ),
    ("CLAUDE_CODE_DISABLE_VIRTUAL_SCROLL", Inert),
    ("CLAUDE_CODE_DISABLE_VITALS_EMITTER", Inert),
    ("CLAUDE_CODE_DISABLE_WEB_FETCH", Shaping),
    ("CLAUDE_CODE_DISABLE_WINDOWS_SHELL_LAUNCHER", Shaping),
    ("CLAUDE_CODE_DISABLE_WORKFLOWS", Shaping),
    ("CLAUDE_CODE_DISABLE_WORKING_SYNC", Shaping),
    ("CLAUDE_CODE_DISABLE_WORKING_SYNC_WATCH", Shaping),
    // the tools' environment
    ("CLAUDE_CODE_DONT_INHERIT_ENV", Shaping),
    ("CLAUDE_CODE_DOWNLOAD_DEADLINE_MS_FOR_TESTING", Inert),
    ("CLAUDE_CODE_DROP_UNAVAILABLE_DEFERRED_TOOL", Shaping),
    ("CLAUDE_CODE_EAGER_FLUSH", Inert),
    ("CLAUDE_CODE_EDITOR_CODELIVERY", Shaping),
    ("CLAUDE_CODE_EFFORT_LEVEL", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_ELEGANT_MEADOW", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_ELEGANT_MIST", Shaping),
    ("CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS", Inert),
    ("CLAUDE_CODE_EMIT_STARTUP_TIMING", Inert),
    ("CLAUDE_CODE_EMIT_TOOL_USE_SUMMARIES", Inert),
    ("CLAUDE_CODE_EMIT_USER_PROMPT_SUBMIT_HOOK_EVENTS", Inert),
    ("CLAUDE_CODE_ENABLE_APPEND_SUBAGENT_PROMPT", Shaping),
    // read indirectly
    ("CLAUDE_CODE_ENABLE_AUTO_MODE", Shaping),
    ("CLAUDE_CODE_ENABLE_AWAY_SUMMARY", Inert),
    ("CLAUDE_CODE_ENABLE_BACKGROUND_PLUGIN_REFRESH", Shaping),
    ("CLAUDE_CODE_ENABLE_CFC", Shaping),
    ("CLAUDE_CODE_ENABLE_DESIGN_SYNC", Shaping),
    ("CLAUDE_CODE_ENABLE_EXPERIMENTAL_ADVISOR_TOOL", Shaping),
    ("CLAUDE_CODE_ENABLE_FEEDBACK_SURVEY_FOR_OTEL", Inert),
    // how tool input streams back
    ("CLAUDE_CODE_ENABLE_FINE_GRAINED_TOOL_STREAMING", Inert),
    // read indirectly
    ("CLAUDE_CODE_ENABLE_FUNCTION_HOOKS", Shaping),
    ("CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY", Shaping),
    ("CLAUDE_CODE_ENABLE_LAUNCH_COMPOSER", Inert),
    ("CLAUDE_CODE_ENABLE_MENU_KIND_LANES", Inert),
    // read indirectly
    ("CLAUDE_CODE_ENABLE_OPUS_4_7_FAST_MODE", Shaping),
    ("CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION", Inert),
    ("CLAUDE_CODE_ENABLE_PROXY_AUTH_HELPER", Credential),
    ("CLAUDE_CODE_ENABLE_REFRESH_MCP_TOOLS", Shaping),
    ("CLAUDE_CODE_ENABLE_REMOTE_RECAP", Shaping),
    ("CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING", Shaping),
    ("CLAUDE_CODE_ENABLE_SHARE_BUNDLE", Inert),
    ("CLAUDE_CODE_ENABLE_TASKS", Shaping),
    ("CLAUDE_CODE_ENABLE_TELEMETRY", Inert),
    ("CLAUDE_CODE_ENABLE_TODO_TOOLS", Shaping),
    ("CLAUDE_CODE_ENABLE_TOKEN_USAGE_ATTACHMENT", Shaping),
    ("CLAUDE_CODE_ENABLE_WRAP_UP", Shaping),
    ("CLAUDE_CODE_ENABLE_XAA", Shaping),
    ("CLAUDE_CODE_ENHANCED_TELEMETRY_BETA", Inert),
    // cli, sdk-ts, sdk-py…: what the session is told it runs in
    ("CLAUDE_CODE_ENTRYPOINT", Shaping),
    // a request header
    ("CLAUDE_CODE_ENTRYPOINT_ON_REQUESTS", Inert),
    ("CLAUDE_CODE_ENVIRONMENT_KIND", Shaping),
    ("CLAUDE_CODE_ENVIRONMENT_RUNNER_VERSION", Inert),
    ("CLAUDE_CODE_EVAL_CONFINED", Shaping),
    ("CLAUDE_CODE_EVAL_INTERVIEW_SESSION", Shaping),
    (
        "CLAUDE_CODE_EVEN_MORE_DANGEROUSLY_SKIP_PERMISSIONS",
        Shaping,
    ),
    // read indirectly
    ("CLAUDE_CODE_EXECPATH", Inert),
    ("CLAUDE_CODE_EXIT_AFTER_FIRST_RENDER", Inert),
    ("CLAUDE_CODE_EXIT_AFTER_STOP_DELAY", Inert),
    ("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS", Shaping),
    ("CLAUDE_CODE_EXPERIMENTAL_CODE_MODE", Shaping),
    ("CLAUDE_CODE_EXPERIMENTAL_CODE_MODE_RESTART", Inert),
    // a per-run identifier
    ("CLAUDE_CODE_EXPERIMENTAL_CODE_MODE_RESTARTED_FROM", Inert),
    ("CLAUDE_CODE_EXPERIMENTAL_OBSERVER_AGENTS", Shaping),
    ("CLAUDE_CODE_EXTRA_BODY", Shaping),
    // sent in each request
    ("CLAUDE_CODE_EXTRA_METADATA", Shaping),
    ("CLAUDE_CODE_FEATURE_FLAGS_KICK_FROM_INIT", Inert),
    ("CLAUDE_CODE_FEATURE_FLAGS_KICK_ON_WARM_CACHE", Inert),
    ("CLAUDE_CODE_FEATURE_FLAGS_REFRESH_INTERVAL_MS", Inert),
    ("CLAUDE_CODE_FEDERATION_CACHE_DIR", Credential),
    ("CLAUDE_CODE_FETCH_PERSONAL_CLOUD_CONFIGURATION", Shaping),
    ("CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS", Shaping),
    ("CLAUDE_CODE_FILE_READ_MAX_PDF_PAGES_PER_MESSAGE", Shaping),
    ("CLAUDE_CODE_FILE_READ_MAX_PDF_PAGES_PER_TURN", Shaping),
    ("CLAUDE_CODE_FIRST_CALL_THINKING_TITLES", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_FIZZY_GROVE", Shaping),
    ("CLAUDE_CODE_FLAG_FETCH_WAIT_MS", Inert),
    ("CLAUDE_CODE_FLEETVIEW_SIMPLE", Inert),
    ("CLAUDE_CODE_FOOTER_INDICATOR", Inert),
    ("CLAUDE_CODE_FORCE_BRIDGE", Inert),
    ("CLAUDE_CODE_FORCE_EVALUATE_MEMORY", Shaping),
    ("CLAUDE_CODE_FORCE_FULLSCREEN_UPSELL", Inert),
    ("CLAUDE_CODE_FORCE_MEMORY_SURVEY", Inert),
    ("CLAUDE_CODE_FORCE_MID_CONVERSATION_SYSTEM", Shaping),
    ("CLAUDE_CODE_FORCE_SESSION_PERSISTENCE", Inert),
    ("CLAUDE_CODE_FORCE_STRIKETHROUGH", Inert),
    ("CLAUDE_CODE_FORCE_SYNC_OUTPUT", Inert),
    ("CLAUDE_CODE_FORCE_TERMINAL_IMAGES", Inert),
    ("CLAUDE_CODE_FORCE_TIP_ID", Inert),
    ("CLAUDE_CODE_FORCE_WINDOWS_CREDMAN", Inert),
    ("CLAUDE_CODE_FORK_SUBAGENT", Shaping),
    ("CLAUDE_CODE_FORWARD_SUBAGENT_TEXT", Shaping),
    ("CLAUDE_CODE_FORWARD_USER_INTENT", Shaping),
    ("CLAUDE_CODE_FRAME_TIMING_LOG", Inert),
    ("CLAUDE_CODE_FRAME_TIMING_SAMPLE_EVERY", Inert),
    ("CLAUDE_CODE_FULL_SIGN_IN_LINK", Inert),
    ("CLAUDE_CODE_GATEWAY_HINT_HEADERS", Shaping),
    ("CLAUDE_CODE_GATEWAY_MODEL_DISCOVERY_TIMEOUT_MS", Inert),
    // read indirectly
    ("CLAUDE_CODE_GATEWAY_TOKEN", Credential),
    ("CLAUDE_CODE_GATEWAY_TOKEN_FILE_DESCRIPTOR", Credential),
    // where the feature flags that shape prompts come from
    ("CLAUDE_CODE_GB_BASE_URL", Shaping),
    ("CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF", Inert),
    ("CLAUDE_CODE_GB_REFRESH_INTERVAL_MS", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_GENTLE_PARASOL", Shaping),
    ("CLAUDE_CODE_GIT_BASH_PATH", Inert),
    ("CLAUDE_CODE_GIT_CHECK_ONLY_IN_REPOSITORY", Shaping),
    ("CLAUDE_CODE_GLOB_HIDDEN", Shaping),
    ("CLAUDE_CODE_GLOB_NO_IGNORE", Shaping),
    ("CLAUDE_CODE_GLOB_TIMEOUT_SECONDS", Inert),
    // when a reminder is added to the conversation
    ("CLAUDE_CODE_GOAL_CHECKIN_MINUTES", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_GORSE_PLOVER", Shaping),
    ("CLAUDE_CODE_GROWTHBOOK_KICK_FROM_INIT", Inert),
    ("CLAUDE_CODE_GROWTHBOOK_KICK_ON_WARM_CACHE", Inert),
    ("CLAUDE_CODE_GZIP_CCR_REQUEST_BODIES", Inert),
    ("CLAUDE_CODE_GZIP_DATADOG_LOGS", Inert),
    ("CLAUDE_CODE_GZIP_REQUEST_BODIES", Inert),
    ("CLAUDE_CODE_GZIP_REQUEST_BODY_BLOCKS", Inert),
    ("CLAUDE_CODE_GZIP_REQUEST_BODY_LEVEL", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_HARBOR_KITE", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_HARBOR_KITE_CLOUD", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_HARBOR_KITE_PACING_OFF", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_HARMONIC_RIDDLE", Shaping),
    ("CLAUDE_CODE_HFI_BEARER_TOKEN", Credential),
    ("CLAUDE_CODE_HIDE_CWD", Inert),
    ("CLAUDE_CODE_HIDE_REPLY_SERVER_NAME", Inert),
    ("CLAUDE_CODE_HIDE_SETTINGS_HINT", Inert),
    ("CLAUDE_CODE_HOLD_REPORT_PARK_AT_INIT", Inert),
    ("CLAUDE_CODE_HOME_SEED_HOLD_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_HOME_SEED_VERDICT_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_HOOKS_SAME_THREAD", Inert),
    ("CLAUDE_CODE_HOOK_HEARTBEAT_INTERVAL_MS", Inert),
    ("CLAUDE_CODE_HOSTED_DESKTOP", Shaping),
    ("CLAUDE_CODE_HOST_ALLOW_RESETS_DENIAL_STREAK", Shaping),
    ("CLAUDE_CODE_HOST_ARTIFACT_TYPE_COMMANDS", Shaping),
    ("CLAUDE_CODE_HOST_AUTH_ASK_AT_START", Inert),
    ("CLAUDE_CODE_HOST_AUTH_ENV_VAR", Credential),
    ("CLAUDE_CODE_HOST_AUTH_REFRESH_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_HOST_CHECKED_FOLDER", Inert),
    ("CLAUDE_CODE_HOST_CREDS_FILE", Credential),
    ("CLAUDE_CODE_HOST_GATEWAY_LINEAGE", Credential),
    ("CLAUDE_CODE_HOST_GUARDS_ARTIFACTS_MCP", Shaping),
    ("CLAUDE_CODE_HOST_OWNED_CONFIG_DIR", Inert),
    ("CLAUDE_CODE_HOST_OWNED_SPAWN_ENV", Shaping),
    ("CLAUDE_CODE_HOST_PLATFORM", Inert),
    ("CLAUDE_CODE_HOST_PROMPT_SUPERSEDES_RECORD", Shaping),
    ("CLAUDE_CODE_HOST_READS_NO_BASH_EDIT_DIFF", Shaping),
    ("CLAUDE_CODE_HOST_SCHEDULED_RUN", Shaping),
    ("CLAUDE_CODE_HOST_SESSION_ID", Inert),
    // named in the system prompt
    ("CLAUDE_CODE_HOST_SHORT_SCRATCHPAD", Shaping),
    ("CLAUDE_CODE_HOST_SHORT_TEMP_DIRS", Inert),
    ("CLAUDE_CODE_HOST_SHOWS_CONNECTION_NOTICE", Inert),
    ("CLAUDE_CODE_HOST_SKILL_CATALOG", Shaping),
    ("CLAUDE_CODE_HOST_STARTED_AHEAD", Inert),
    ("CLAUDE_CODE_HOST_WORKTREE", Shaping),
    ("CLAUDE_CODE_HOST_WORKTREE_FENCE", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_HOVER_REST", Shaping),
    // read indirectly
    ("CLAUDE_CODE_HTTPS_PROXY", Inert),
    // read indirectly
    ("CLAUDE_CODE_HTTP_PROXY", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_HUMBLE_HAMMOCK", Shaping),
    ("CLAUDE_CODE_IDE_HOST_OVERRIDE", Inert),
    ("CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL", Inert),
    ("CLAUDE_CODE_IDE_SKIP_VALID_CHECK", Inert),
    // when the terminal offers to compact
    ("CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS", Inert),
    // when the terminal offers to compact
    ("CLAUDE_CODE_IDLE_THRESHOLD_MINUTES", Inert),
    // when the terminal offers to compact
    ("CLAUDE_CODE_IDLE_TOKEN_THRESHOLD", Inert),
    ("CLAUDE_CODE_IGNORE_PERSISTED_TRUST", Inert),
    // what is streamed to the caller, not what is sent
    ("CLAUDE_CODE_INCLUDE_PARTIAL_MESSAGES", Inert),
    ("CLAUDE_CODE_INCREMENTAL_REQUEST_BODY", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_INDEXED_SALAMANDER", Shaping),
    ("CLAUDE_CODE_INLINE_TOOLS", Shaping),
    // read indirectly
    ("CLAUDE_CODE_INSTALLED_VIA_NPM_WRAPPER", Inert),
    // read indirectly
    ("CLAUDE_CODE_INVOKED_SKILLS", Inert),
    ("CLAUDE_CODE_IS_COWORK", Shaping),
    ("CLAUDE_CODE_JIT_POLICY_AFTER_STARTUP", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_JUNIPER_SUNDIAL", Shaping),
    ("CLAUDE_CODE_KB_COHESION_FIXES", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_LANTERN_PRISM", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_LARCH_CISTERN", Shaping),
    ("CLAUDE_CODE_LAUNCHED_BY_SESSION_IDS", Inert),
    ("CLAUDE_CODE_LAUNCHER_RUNS_API_KEY_HELPER", Credential),
    ("CLAUDE_CODE_LAZY_ENV_GETTERS", Inert),
    ("CLAUDE_CODE_LAZY_WORKTREE", Inert),
    ("CLAUDE_CODE_LEGACY_BUNDLE", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_LINKED_SPINDLE", Shaping),
    ("CLAUDE_CODE_LOOP_KEEPALIVE", Inert),
    ("CLAUDE_CODE_LOOP_PERSISTENT", Shaping),
    ("CLAUDE_CODE_MAIN_REPLY_HOLD_MS", Inert),
    ("CLAUDE_CODE_MANAGED_CONFIG_PREFETCH", Inert),
    // which managed settings apply
    ("CLAUDE_CODE_MANAGED_SETTINGS_PATH", Shaping),
    // what the agent tools allow
    ("CLAUDE_CODE_MAX_CONCURRENT_SUBAGENTS", Shaping),
    ("CLAUDE_CODE_MAX_CONTEXT_TOKENS", Shaping),
    ("CLAUDE_CODE_MAX_EFFORT_REMINDER", Shaping),
    ("CLAUDE_CODE_MAX_MCP_DESCRIPTION_LENGTH", Shaping),
    ("CLAUDE_CODE_MAX_OUTPUT_TOKENS", Shaping),
    ("CLAUDE_CODE_MAX_RETRIES", Inert),
    // read indirectly
    ("CLAUDE_CODE_MAX_SUBAGENTS_PER_SESSION", Shaping),
    ("CLAUDE_CODE_MAX_SUBAGENT_SPAWN_DEPTH", Shaping),
    // scheduling, not content
    ("CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY", Inert),
    ("CLAUDE_CODE_MAX_TURNS", Shaping),
    ("CLAUDE_CODE_MAX_WEB_SEARCHES_PER_SESSION", Shaping),
    ("CLAUDE_CODE_MCP_ALLOWLIST_ENV", Shaping),
    ("CLAUDE_CODE_MCP_ALWAYS_LOAD_JOIN_BEFORE_INPUT", Inert),
    ("CLAUDE_CODE_MCP_APPS_HOST", Shaping),
    ("CLAUDE_CODE_MCP_APPS_NO_TOOL_ROUTE", Shaping),
    ("CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS", Inert),
    ("CLAUDE_CODE_MCP_CONNECTOR_PREWAIT_MS", Inert),
    ("CLAUDE_CODE_MCP_MEMORY_CGROUP", Inert),
    ("CLAUDE_CODE_MCP_NO_REDIAL_AFTER_POLICY_REFUSAL", Inert),
    ("CLAUDE_CODE_MCP_PREWAIT_SERVERS", Inert),
    ("CLAUDE_CODE_MCP_PREWAIT_SERVERS_MS", Inert),
    ("CLAUDE_CODE_MCP_PREWAIT_SERVERS_MS_BY_NAME", Inert),
    ("CLAUDE_CODE_MCP_REGISTRY_FETCH_AT_STARTUP", Inert),
    // the `mcp serve` listener's token, not the model account
    ("CLAUDE_CODE_MCP_SERVE_AUTH_TOKEN", Inert),
    ("CLAUDE_CODE_MCP_SERVE_ENABLED_PLUGINS", Inert),
    ("CLAUDE_CODE_MCP_SERVE_GARBAGE_COLLECTIONS", Inert),
    ("CLAUDE_CODE_MCP_SERVE_INTERFACE_MIN_VERSION", Inert),
    ("CLAUDE_CODE_MCP_SERVE_MACHINE_PLUGINS", Inert),
    ("CLAUDE_CODE_MCP_SERVE_MEMORY_WALKS_DEADLINE_MS", Inert),
    ("CLAUDE_CODE_MCP_SERVE_SETTINGS", Inert),
    ("CLAUDE_CODE_MCP_SERVE_TOOL_OUTPUT", Inert),
    ("CLAUDE_CODE_MCP_SERVE_TUNNEL_BINARY_FRAMES", Inert),
    ("CLAUDE_CODE_MCP_SERVE_WORKSPACE_ROOT", Inert),
    ("CLAUDE_CODE_MCP_SKIP_UNCHANGED_RELIST", Inert),
    ("CLAUDE_CODE_MCP_STARTUP_WAIT_MS", Inert),
    ("CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT", Inert),
    // whether memory is in the first request
    ("CLAUDE_CODE_MEMORY_CONTEXT_NO_WAIT", Shaping),
    ("CLAUDE_CODE_MEMORY_PUSH_DELETE_MODE", Shaping),
    ("CLAUDE_CODE_MEMORY_SUBAGENT_APPEND", Shaping),
    // cache control blocks in the request
    ("CLAUDE_CODE_MESSAGES_PROMPT_CACHE_TTL", Shaping),
    ("CLAUDE_CODE_MESSAGING_SOCKET", Inert),
    ("CLAUDE_CODE_MESSAGING_TOKEN", Inert),
    ("CLAUDE_CODE_MOCK_REMOTE_SETTINGS", Inert),
    ("CLAUDE_CODE_MOCK_TRIAL", Inert),
    ("CLAUDE_CODE_MODEL_CAPABILITIES", Shaping),
    ("CLAUDE_CODE_MODEL_CATALOG", Shaping),
    ("CLAUDE_CODE_MODEL_CATALOG_URL", Shaping),
    ("CLAUDE_CODE_MODEL_NOBODY_CHOSE", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_NANKEEN_KESTREL", Shaping),
    ("CLAUDE_CODE_NATIVE_APP_BUNDLE", Inert),
    ("CLAUDE_CODE_NATIVE_CURSOR", Inert),
    ("CLAUDE_CODE_NEW_INIT", Shaping),
    ("CLAUDE_CODE_NEW_RENDERER", Inert),
    ("CLAUDE_CODE_NONBLOCKING_STDOUT", Inert),
    ("CLAUDE_CODE_NONSTREAMING_TIMEOUT_RETRIES", Inert),
    // cache control blocks in the request
    ("CLAUDE_CODE_NORMALIZE_PREFIX_CACHE", Shaping),
    ("CLAUDE_CODE_NORMALIZE_PREFIX_CACHE_VERIFY", Inert),
    ("CLAUDE_CODE_NOTIFICATIONS_HOST", Inert),
    ("CLAUDE_CODE_NO_FLICKER", Inert),
    ("CLAUDE_CODE_NO_MODEL_FALLBACK", Shaping),
    ("CLAUDE_CODE_OAUTH_401_WAIT_MS", Inert),
    ("CLAUDE_CODE_OAUTH_CLIENT_ID", Credential),
    ("CLAUDE_CODE_OAUTH_REFRESH_TOKEN", Credential),
    ("CLAUDE_CODE_OAUTH_SCOPES", Credential),
    ("CLAUDE_CODE_OAUTH_TOKEN", Credential),
    ("CLAUDE_CODE_OAUTH_TOKEN_FILE_DESCRIPTOR", Credential),
    ("CLAUDE_CODE_OFF_PERSONS_MACHINE", Shaping),
    // read indirectly
    ("CLAUDE_CODE_OPUS_4_6_FAST_MODE_OVERRIDE", Shaping),
    ("CLAUDE_CODE_ORGANIZATION_UUID", Credential),
    ("CLAUDE_CODE_OTEL_CONTENT_MAX_LENGTH", Inert),
    ("CLAUDE_CODE_OTEL_DIAG_STDERR", Inert),
    ("CLAUDE_CODE_OTEL_FLUSH_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_OTEL_HEADERS_HELPER_DEBOUNCE_MS", Inert),
    ("CLAUDE_CODE_OTEL_SHUTDOWN_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_OVERLOADED_RETRY_BASE_DELAY_MS", Inert),
    ("CLAUDE_CODE_OVERLOADED_RETRY_MAX_DELAY_MS", Inert),
    ("CLAUDE_CODE_OVERLOADED_RETRY_MAX_WAIT_MS", Inert),
    // the date the system prompt states
    ("CLAUDE_CODE_OVERRIDE_DATE", Shaping),
    ("CLAUDE_CODE_PACKAGE_MANAGER_AUTO_UPDATE", Inert),
    ("CLAUDE_CODE_PARKED_PERMISSION_WAIT_MS", Inert),
    ("CLAUDE_CODE_PARKED_RUN_BEFORE_CLEAR", Inert),
    ("CLAUDE_CODE_PARKED_STOP_RETIRES", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_PARSED_WILLOW", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_PEPPY_STARLIGHT", Shaping),
    ("CLAUDE_CODE_PERFETTO_TRACE", Inert),
    ("CLAUDE_CODE_PERFETTO_WRITE_INTERVAL_S", Inert),
    ("CLAUDE_CODE_PERFORCE_MODE", Shaping),
    ("CLAUDE_CODE_PERSONAL_CONFIG_FIX", Shaping),
    ("CLAUDE_CODE_PERSONAL_HOOKS_OFF", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_PEWTER_OWL", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_PEWTER_OWL_TOOL", Shaping),
    ("CLAUDE_CODE_PLAIN_DELTA_DIRECT_WRITE", Inert),
    ("CLAUDE_CODE_PLAIN_DELTA_FAST_PATH", Inert),
    ("CLAUDE_CODE_PLAN_MODE_REQUIRED", Shaping),
    ("CLAUDE_CODE_PLAN_V2_AGENT_COUNT", Shaping),
    ("CLAUDE_CODE_PLAN_V2_EXPLORE_AGENT_COUNT", Shaping),
    ("CLAUDE_CODE_PLUGIN_ATTRIBUTION", Shaping),
    ("CLAUDE_CODE_PLUGIN_BINARY_ASSETS", Inert),
    ("CLAUDE_CODE_PLUGIN_CACHE_DIR", Inert),
    ("CLAUDE_CODE_PLUGIN_DIRS", Shaping),
    ("CLAUDE_CODE_PLUGIN_DIR_WATCH", Inert),
    ("CLAUDE_CODE_PLUGIN_GIT_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_PLUGIN_KEEP_MARKETPLACE_ON_FAILURE", Inert),
    ("CLAUDE_CODE_PLUGIN_MCPB_DIR", Inert),
    ("CLAUDE_CODE_PLUGIN_PREFER_HTTPS", Inert),
    (
        "CLAUDE_CODE_PLUGIN_REMOTE_MCP_REACHABLE_HOSTS_HINT",
        Shaping,
    ),
    ("CLAUDE_CODE_PLUGIN_SEED_DIR", Inert),
    ("CLAUDE_CODE_PLUGIN_USE_ZIP_CACHE", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_POLISHED_DEWDROP", Shaping),
    ("CLAUDE_CODE_POLL_EVENTS", Inert),
    ("CLAUDE_CODE_POLL_EVENT_DECLARATIONS", Inert),
    ("CLAUDE_CODE_POST_TURN_MEMORY", Shaping),
    ("CLAUDE_CODE_POST_TURN_MEMORY_CONFIG", Shaping),
    ("CLAUDE_CODE_POST_TURN_MEMORY_SYNC", Shaping),
    ("CLAUDE_CODE_POWERSHELL_RESPECT_EXECUTION_POLICY", Shaping),
    ("CLAUDE_CODE_POWERUP_ONBOARDING", Inert),
    ("CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS", Inert),
    ("CLAUDE_CODE_PROACTIVE", Shaping),
    // what the tools' processes run under
    ("CLAUDE_CODE_PROCESS_WRAPPER", Shaping),
    // read indirectly
    ("CLAUDE_CODE_PROFILE_QUERY", Inert),
    ("CLAUDE_CODE_PROFILE_STARTUP", Inert),
    // a per-run identifier
    ("CLAUDE_CODE_PROGRAM_USE_CASE_ID", Inert),
    // a per-run identifier
    ("CLAUDE_CODE_PROGRAM_USE_CASE_STAMPED", Inert),
    ("CLAUDE_CODE_PROJECTS_FEATURE_FLAGS", Shaping),
    ("CLAUDE_CODE_PROJECTS_SESSION", Shaping),
    // where the session's transcript is kept
    ("CLAUDE_CODE_PROJECT_DIR_NAME", Shaping),
    // cache control blocks in the request
    ("CLAUDE_CODE_PROMPT_CACHE_TTL", Shaping),
    ("CLAUDE_CODE_PROPAGATE_TRACEPARENT", Inert),
    // the host supplies the provider and its auth
    ("CLAUDE_CODE_PROVIDER_MANAGED_BY_HOST", Credential),
    ("CLAUDE_CODE_PROXY_AUTH_HELPER_TTL_MS", Credential),
    ("CLAUDE_CODE_PROXY_RESOLVES_HOSTS", Inert),
    ("CLAUDE_CODE_PWSH_PARSE_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_QUESTION_EXTENDED", Shaping),
    ("CLAUDE_CODE_QUESTION_OPTIONAL_DESCRIPTIONS", Shaping),
    ("CLAUDE_CODE_QUESTION_PREVIEW_FORMAT", Shaping),
    ("CLAUDE_CODE_QUEUED_NOTIFICATIONS_BY_POLL", Inert),
    ("CLAUDE_CODE_RATE_LIMIT_TIER", Credential),
    ("CLAUDE_CODE_REFUSAL_FALLBACK_CATCH_ALL", Shaping),
    ("CLAUDE_CODE_RELAUNCH_BYPASS_SWITCH", Shaping),
    ("CLAUDE_CODE_RELAUNCH_HOME_TRUST", Inert),
    ("CLAUDE_CODE_RELAUNCH_PROACTIVITY_BASELINE", Shaping),
    ("CLAUDE_CODE_RELAUNCH_PROACTIVITY_DECIDED", Shaping),
    ("CLAUDE_CODE_RELAUNCH_PROACTIVITY_EVER_ON", Shaping),
    ("CLAUDE_CODE_RELAUNCH_PROACTIVITY_LEVEL", Shaping),
    ("CLAUDE_CODE_RELAUNCH_RESUME_HINT_FLAGS", Inert),
    ("CLAUDE_CODE_RELAUNCH_SANDBOX_HOLD", Inert),
    ("CLAUDE_CODE_RELAUNCH_SEAT_LAUNCH", Inert),
    ("CLAUDE_CODE_RELAUNCH_TERMINAL_SIZE", Inert),
    ("CLAUDE_CODE_REMOTE", Shaping),
    ("CLAUDE_CODE_REMOTE_ENVIRONMENT_TYPE", Shaping),
    ("CLAUDE_CODE_REMOTE_HERMETIC_MODE", Shaping),
    ("CLAUDE_CODE_REMOTE_MCP_CONFIG", Shaping),
    ("CLAUDE_CODE_REMOTE_MEMORY_DIR", Shaping),
    ("CLAUDE_CODE_REMOTE_RAW_EVENTS_FILE", Inert),
    ("CLAUDE_CODE_REMOTE_SDK_URL", Inert),
    ("CLAUDE_CODE_REMOTE_SEND_KEEPALIVES", Inert),
    ("CLAUDE_CODE_REMOTE_SESSION_ID", Inert),
    ("CLAUDE_CODE_REMOTE_SESSION_ORIGIN", Inert),
    // read indirectly
    ("CLAUDE_CODE_REMOTE_SESSION_UUID", Inert),
    // which settings apply
    ("CLAUDE_CODE_REMOTE_SETTINGS_PATH", Shaping),
    ("CLAUDE_CODE_REMOTE_SETTINGS_POLL_MS", Inert),
    ("CLAUDE_CODE_REMOTE_STALL_CHECK_INTERVAL_MS", Inert),
    ("CLAUDE_CODE_REMOTE_TOOLS_DESKTOP_APP_HOST", Inert),
    ("CLAUDE_CODE_REMOTE_TOOLS_FORWARD", Shaping),
    ("CLAUDE_CODE_REMOTE_TOOLS_HOST_ALLOWS_UNATTENDED", Inert),
    ("CLAUDE_CODE_REMOTE_TOOLS_HOST_IDLE_RELEASE_MINUTES", Inert),
    ("CLAUDE_CODE_REMOTE_TOOLS_PIN_STORED_LOGIN", Inert),
    ("CLAUDE_CODE_REMOVE_PROMPT_STRINGS", Shaping),
    ("CLAUDE_CODE_REPL", Shaping),
    ("CLAUDE_CODE_REPLY_GATE_POLICY", Shaping),
    ("CLAUDE_CODE_REPORT_FINDINGS", Shaping),
    ("CLAUDE_CODE_REPORT_REPO_PROVENANCE", Inert),
    ("CLAUDE_CODE_REPO_CHECKOUTS", Shaping),
    ("CLAUDE_CODE_REQUIRED_PLUGINS_HOLD", Inert),
    ("CLAUDE_CODE_RESTRICTED", Shaping),
    ("CLAUDE_CODE_RESTRICT_PERSONAL_CONFIG", Shaping),
    ("CLAUDE_CODE_RESULT_NONCE", Inert),
    ("CLAUDE_CODE_RESUME_CACHE_WARM", Inert),
    // a per-run identifier
    ("CLAUDE_CODE_RESUME_FROM_SESSION", Inert),
    ("CLAUDE_CODE_RESUME_HINT_COMMAND", Inert),
    ("CLAUDE_CODE_RESUME_INTERRUPTED_TURN", Shaping),
    // whether a resume continues the interrupted turn
    ("CLAUDE_CODE_RESUME_INTERRUPTED_TURN_MAX_AGE_MS", Shaping),
    // sent when a session resumes
    ("CLAUDE_CODE_RESUME_PROMPT", Shaping),
    ("CLAUDE_CODE_RESUME_REASON", Inert),
    ("CLAUDE_CODE_RESUME_SESSIONSTART_HOOKS_WAIT_MS", Inert),
    ("CLAUDE_CODE_RESUME_SHOWS_CUT_OFF_CALLS", Shaping),
    ("CLAUDE_CODE_RESUME_SOURCE_ALIVE", Inert),
    // when the terminal offers to compact
    ("CLAUDE_CODE_RESUME_THRESHOLD_MINUTES", Inert),
    // when the terminal offers to compact
    ("CLAUDE_CODE_RESUME_TOKEN_THRESHOLD", Inert),
    ("CLAUDE_CODE_RESUME_TOLERATES_CONTEXT_APPENDS", Shaping),
    ("CLAUDE_CODE_RESUME_TOLERATES_CONTEXT_SEEDS", Shaping),
    ("CLAUDE_CODE_RETRY_WATCHDOG", Inert),
    ("CLAUDE_CODE_RETRY_WATCHDOG_MAX_USAGE_LIMIT_WAIT_MS", Inert),
    ("CLAUDE_CODE_RETRY_WATCHDOG_MAX_WAIT_MS", Inert),
    ("CLAUDE_CODE_RETRY_WATCHDOG_SCOPE", Inert),
    ("CLAUDE_CODE_RETRY_WATCHDOG_USAGE_LIMIT_RECHECK_MS", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_RIPPLING_TULIP", Shaping),
    // the model endpoint, as a socket
    ("CLAUDE_CODE_RUNNER_MODEL_SOCKET", Credential),
    ("CLAUDE_CODE_RUNNER_START_NOTES", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_RUSTLING_PIXEL", Shaping),
    ("CLAUDE_CODE_SAFE_MODE", Shaping),
    ("CLAUDE_CODE_SANDBOXED", Shaping),
    ("CLAUDE_CODE_SANDBOX_LEAVE_DENIES_TO_SRT_WIN", Shaping),
    ("CLAUDE_CODE_SANDBOX_LEAVE_PARENT_FOLDERS_ALONE", Shaping),
    // named in the system prompt
    ("CLAUDE_CODE_SCRATCHPAD_DIR", Shaping),
    ("CLAUDE_CODE_SCRIPT_CAPS", Shaping),
    ("CLAUDE_CODE_SCROLL_SPEED", Inert),
    ("CLAUDE_CODE_SDK_HAS_HOST_AUTH_REFRESH", Inert),
    ("CLAUDE_CODE_SDK_HAS_OAUTH_REFRESH", Inert),
    ("CLAUDE_CODE_SDK_HAS_SESSIONS_OAUTH_REFRESH", Inert),
    ("CLAUDE_CODE_SDK_MCP_TOOL_IDLE_TIMEOUT", Inert),
    ("CLAUDE_CODE_SDK_READS_SESSION_STATE", Inert),
    ("CLAUDE_CODE_SDK_READS_STARTUP_MARKS", Inert),
    ("CLAUDE_CODE_SENDS_VIA_SESSION_SERVICE", Inert),
    ("CLAUDE_CODE_SEND_FEEDBACK", Inert),
    ("CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_SESSIONS_OAUTH_TOKEN", Credential),
    ("CLAUDE_CODE_SESSION_ACCESS_TOKEN", Credential),
    ("CLAUDE_CODE_SESSION_ATTENDED", Shaping),
    ("CLAUDE_CODE_SESSION_BEGAN_AS_COPY", Inert),
    ("CLAUDE_CODE_SESSION_CREATED_AT_MS", Inert),
    // a per-run identifier
    ("CLAUDE_CODE_SESSION_ID", Inert),
    ("CLAUDE_CODE_SESSION_KIND", Inert),
    ("CLAUDE_CODE_SESSION_LOG", Inert),
    ("CLAUDE_CODE_SESSION_NAME", Inert),
    ("CLAUDE_CODE_SESSION_ORIGIN", Inert),
    (
        "CLAUDE_CODE_SESSION_START_ANNOUNCEMENTS_BEFORE_PROMPT",
        Inert,
    ),
    ("CLAUDE_CODE_SETTLE_TOUCHED_FILES", Shaping),
    ("CLAUDE_CODE_SHELL", Shaping),
    ("CLAUDE_CODE_SHELL_PREFIX", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_SHINY_FOUNTAIN", Shaping),
    ("CLAUDE_CODE_SHOWN_PLUGINS_DIR", Inert),
    ("CLAUDE_CODE_SHOW_HIDDEN_CHARACTERS", Inert),
    ("CLAUDE_CODE_SILENT_TURN_REMINDER", Shaping),
    // when a reminder is added to the conversation
    ("CLAUDE_CODE_SILENT_TURN_REMINDER_SECONDS", Shaping),
    ("CLAUDE_CODE_SILENT_TURN_REMINDER_TEXT", Shaping),
    ("CLAUDE_CODE_SILENT_TURN_REMINDER_TURNS", Shaping),
    ("CLAUDE_CODE_SIMPLE", Shaping),
    ("CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT", Shaping),
    ("CLAUDE_CODE_SIMULATE_PROXY_USAGE", Inert),
    ("CLAUDE_CODE_SKILL_ATTRIBUTION", Shaping),
    ("CLAUDE_CODE_SKILL_PROPOSALS", Shaping),
    ("CLAUDE_CODE_SKIP_ANTHROPIC_AWS_AUTH", Credential),
    ("CLAUDE_CODE_SKIP_ANTHROPIC_GOOGLE_CLOUD_AUTH", Credential),
    ("CLAUDE_CODE_SKIP_AWS_CRED_CACHE", Credential),
    ("CLAUDE_CODE_SKIP_BEDROCK_AUTH", Credential),
    ("CLAUDE_CODE_SKIP_FAST_MODE_NETWORK_ERRORS", Shaping),
    ("CLAUDE_CODE_SKIP_FAST_MODE_ORG_CHECK", Shaping),
    ("CLAUDE_CODE_SKIP_FOUNDRY_AUTH", Credential),
    ("CLAUDE_CODE_SKIP_HFI_VERSION_CHECK", Inert),
    ("CLAUDE_CODE_SKIP_MANTLE_AUTH", Credential),
    ("CLAUDE_CODE_SKIP_MCP_DEBUG_LOG_FILES", Inert),
    ("CLAUDE_CODE_SKIP_MODEL_ACCESS_MEMORY", Shaping),
    // plugins' MCP tools
    ("CLAUDE_CODE_SKIP_PLUGIN_LOCAL_MCP_SERVERS", Shaping),
    ("CLAUDE_CODE_SKIP_PLUGIN_MCP_BUNDLES", Shaping),
    // plugins' MCP tools
    ("CLAUDE_CODE_SKIP_PLUGIN_MCP_SERVERS", Shaping),
    // plugins' MCP tools
    ("CLAUDE_CODE_SKIP_PLUGIN_MCP_SERVERS_EXCEPT", Shaping),
    ("CLAUDE_CODE_SKIP_PROJECT_BACKFILL", Inert),
    ("CLAUDE_CODE_SKIP_PROMPT_HISTORY", Inert),
    ("CLAUDE_CODE_SKIP_REPO_UPLOAD", Inert),
    ("CLAUDE_CODE_SKIP_VERTEX_AUTH", Credential),
    // when the CLI compacts: the shim counts compactions itself
    ("CLAUDE_CODE_SLEEP_COMPACT", Inert),
    // when the CLI compacts: the shim counts compactions itself
    ("CLAUDE_CODE_SLEEP_COMPACT_AFTER_MS", Inert),
    ("CLAUDE_CODE_SLOW_OPERATION_THRESHOLD_MS", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_SNAPPY_PELICAN", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_SORTED_OTTER", Shaping),
    ("CLAUDE_CODE_SPARE_DEFER_ALL_MCP", Shaping),
    ("CLAUDE_CODE_SPAWNED_BY_SERVER", Inert),
    ("CLAUDE_CODE_SPAWN_TIMESTAMP_MS", Inert),
    // whose spend the session is
    ("CLAUDE_CODE_SPEND_PROJECT", Credential),
    ("CLAUDE_CODE_SSE_PORT", Inert),
    ("CLAUDE_CODE_STALL_TIMEOUT_MS_FOR_TESTING", Inert),
    ("CLAUDE_CODE_STARTER_MAY_HOLD_CONNECTOR_FILE", Inert),
    ("CLAUDE_CODE_STARTUP_FAILURE_RESULTS", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_STELLAR_DRIFT", Shaping),
    ("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", Shaping),
    ("CLAUDE_CODE_STOP_ON_UNUSABLE_PROFILE", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_STREAMED_BUMBLEBEE", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_STREAMED_BUMBLEBEE_TEXT", Shaping),
    ("CLAUDE_CODE_STREAM_EVENT_HOLD_MS", Inert),
    ("CLAUDE_CODE_STREAM_EVENT_MAX_LINE_BYTES", Inert),
    ("CLAUDE_CODE_STREAM_EVENT_NO_SUBSCRIBER_HOLD_MS", Inert),
    ("CLAUDE_CODE_STRICT_INLINE_SHELL_RM_PROMPT", Shaping),
    ("CLAUDE_CODE_SUBAGENT_CACHE_EVICT", Inert),
    ("CLAUDE_CODE_SUBAGENT_CONFIG_WARNING", Inert),
    ("CLAUDE_CODE_SUBAGENT_EFFORT", Shaping),
    ("CLAUDE_CODE_SUBAGENT_HISTORY", Shaping),
    ("CLAUDE_CODE_SUBAGENT_MODEL", Shaping),
    ("CLAUDE_CODE_SUBAGENT_MODEL_FORCE", Shaping),
    // cache control blocks in the request
    ("CLAUDE_CODE_SUBAGENT_PROMPT_CACHE_TTL", Shaping),
    ("CLAUDE_CODE_SUBAGENT_PROMPT_SNAPSHOT", Shaping),
    // the tools' environment
    ("CLAUDE_CODE_SUBPROCESS_ENV_SCRUB", Shaping),
    ("CLAUDE_CODE_SUBSCRIPTION_TYPE", Credential),
    ("CLAUDE_CODE_SUPERVISED", Shaping),
    ("CLAUDE_CODE_SUPPRESS_SESSION_ATTRIBUTION", Shaping),
    ("CLAUDE_CODE_SYNC_PLUGINS", Inert),
    ("CLAUDE_CODE_SYNC_PLUGINS_BUFFERED_DOWNLOAD", Inert),
    ("CLAUDE_CODE_SYNC_PLUGINS_DOWNLOAD_CONCURRENCY", Inert),
    ("CLAUDE_CODE_SYNC_PLUGINS_DOWNLOAD_STALL_MS", Inert),
    ("CLAUDE_CODE_SYNC_PLUGINS_INSTALL_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_SYNC_PLUGINS_MCP_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_SYNC_PLUGIN_INSTALL", Inert),
    ("CLAUDE_CODE_SYNC_PLUGIN_INSTALL_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_SYNC_REUSE_WITHIN_MS", Inert),
    ("CLAUDE_CODE_SYNC_SESSION_REFS", Inert),
    ("CLAUDE_CODE_SYNC_SKILLS", Inert),
    ("CLAUDE_CODE_SYNC_SKILLS_INSTALL_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_SYNC_SKILLS_WAIT_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_SYNTAX_HIGHLIGHT", Inert),
    ("CLAUDE_CODE_SYSTEM_PROMPT_FEATURE_FLAG", Shaping),
    ("CLAUDE_CODE_SYSTEM_PROMPT_GB_FEATURE", Shaping),
    ("CLAUDE_CODE_TAGS", Inert),
    ("CLAUDE_CODE_TAG_ISMETA_MESSAGES", Shaping),
    // which task list the session shares
    ("CLAUDE_CODE_TASK_LIST_ID", Shaping),
    // read indirectly
    ("CLAUDE_CODE_TEAMMATE_COMMAND", Inert),
    ("CLAUDE_CODE_TEAM_TEARDOWN_PARK_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_TEE_SDK_STDOUT", Inert),
    ("CLAUDE_CODE_TELEPORT_MOVE", Shaping),
    ("CLAUDE_CODE_TERMINAL_MCP_TOOLS", Shaping),
    ("CLAUDE_CODE_TERMINAL_RECORDING", Inert),
    ("CLAUDE_CODE_TEST_ALLOW_REAL_NETWORK", Inert),
    ("CLAUDE_CODE_TEST_FIXTURES_ROOT", Inert),
    ("CLAUDE_CODE_TEST_FORCE_DENY", Inert),
    ("CLAUDE_CODE_TEST_NO_GIT_BASH", Inert),
    ("CLAUDE_CODE_TEST_NO_PWSH", Inert),
    ("CLAUDE_CODE_TETHER_LIVE", Inert),
    ("CLAUDE_CODE_THINKING_DISPLAY_UPDATES", Inert),
    ("CLAUDE_CODE_THINKING_RESUMPTION", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_THISTLE_GREBE", Shaping),
    ("CLAUDE_CODE_THREAD_CPU_ONE_IN", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_THRIFTY_SONIC", Shaping),
    ("CLAUDE_CODE_TMPDIR", Inert),
    ("CLAUDE_CODE_TMUX_PREFIX", Inert),
    ("CLAUDE_CODE_TMUX_PREFIX_CONFLICTS", Inert),
    ("CLAUDE_CODE_TMUX_SESSION", Inert),
    ("CLAUDE_CODE_TMUX_TRUECOLOR", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_TOASTY_THIMBLE", Shaping),
    ("CLAUDE_CODE_TODO_REMINDER_MODE", Shaping),
    ("CLAUDE_CODE_TOOL_MEMORY_CGROUP_EXCLUDE", Inert),
    ("CLAUDE_CODE_TOOL_MEMORY_LIMIT", Inert),
    ("CLAUDE_CODE_TOOL_PICTURE_SERVERS", Shaping),
    ("CLAUDE_CODE_TOTAL_TOKENS_REMINDER", Shaping),
    ("CLAUDE_CODE_TOTAL_TOKENS_REMINDER_AFTER_USER_TURN", Shaping),
    ("CLAUDE_CODE_TOTAL_TOKENS_REMINDER_BUDGET", Shaping),
    ("CLAUDE_CODE_TRANSCRIPT_LOCAL_GC", Inert),
    // what a resume reads back
    ("CLAUDE_CODE_TRANSCRIPT_SLIM_TOOL_RESULTS", Shaping),
    // what a resume reads back
    ("CLAUDE_CODE_TRANSCRIPT_TAIL_LOAD", Shaping),
    ("CLAUDE_CODE_TRIGGER_ID", Inert),
    ("CLAUDE_CODE_TUI_ASKED", Inert),
    ("CLAUDE_CODE_TUI_JUST_SWITCHED", Inert),
    ("CLAUDE_CODE_TUI_TRIAL", Inert),
    ("CLAUDE_CODE_TURN_UPDATES", Inert),
    ("CLAUDE_CODE_TWO_STAGE_CLASSIFIER", Shaping),
    ("CLAUDE_CODE_ULTRAREVIEW_LAUNCH_RECORD", Inert),
    ("CLAUDE_CODE_ULTRAREVIEW_PREFLIGHT_FIXTURE", Inert),
    ("CLAUDE_CODE_ULTRAREVIEW_PR_AS_MERGED", Shaping),
    ("CLAUDE_CODE_ULTRAREVIEW_QUOTA_FIXTURE", Inert),
    ("CLAUDE_CODE_ULTRAREVIEW_REVIEW_MD_FILE", Shaping),
    ("CLAUDE_CODE_UNWATCHED_REPLY_HOLD_MS", Inert),
    ("CLAUDE_CODE_UPFRONT_TOOLS", Shaping),
    ("CLAUDE_CODE_USER_DELEGATED_SESSION", Shaping),
    (
        "CLAUDE_CODE_USER_DELEGATED_SESSION_ALLOWED_CHECK_MODELS",
        Shaping,
    ),
    (
        "CLAUDE_CODE_USER_DELEGATED_SESSION_ANY_CHECK_MODEL",
        Shaping,
    ),
    ("CLAUDE_CODE_USER_DELEGATED_SESSION_DIRECT_API", Shaping),
    (
        "CLAUDE_CODE_USER_DELEGATED_SESSION_ROUTINE_SERVER_CHECK_PROVIDERS",
        Shaping,
    ),
    (
        "CLAUDE_CODE_USER_DELEGATED_SESSION_SERVER_CHECK_PROVIDERS",
        Shaping,
    ),
    ("CLAUDE_CODE_USER_DIALOG_TIMEOUT_MS", Inert),
    ("CLAUDE_CODE_USER_EMAIL", Credential),
    ("CLAUDE_CODE_USE_ANTHROPIC_AWS", Credential),
    ("CLAUDE_CODE_USE_ANTHROPIC_GOOGLE_CLOUD", Credential),
    ("CLAUDE_CODE_USE_BEDROCK", Credential),
    // read indirectly
    ("CLAUDE_CODE_USE_CCR_V2", Inert),
    ("CLAUDE_CODE_USE_COWORK_PLUGINS", Shaping),
    ("CLAUDE_CODE_USE_FOUNDRY", Credential),
    ("CLAUDE_CODE_USE_GATEWAY", Credential),
    ("CLAUDE_CODE_USE_MANTLE", Credential),
    ("CLAUDE_CODE_USE_NATIVE_FILE_SEARCH", Shaping),
    ("CLAUDE_CODE_USE_POWERSHELL_TOOL", Shaping),
    ("CLAUDE_CODE_USE_VERTEX", Credential),
    ("CLAUDE_CODE_VOICE_FORWARD_INTERIMS_TYPED", Inert),
    ("CLAUDE_CODE_WARN_DISK_FREE_GIB", Inert),
    ("CLAUDE_CODE_WARN_MEMORY_FREE_GIB", Inert),
    ("CLAUDE_CODE_WEBFETCH_CACHE_TTL_MS", Inert),
    ("CLAUDE_CODE_WEBFETCH_DEADLINE_MS", Inert),
    ("CLAUDE_CODE_WEBFETCH_MCP_TOOL", Shaping),
    ("CLAUDE_CODE_WEBFETCH_USE_CCR_PROXY", Inert),
    ("CLAUDE_CODE_WEBSEARCH_CITATIONS", Shaping),
    ("CLAUDE_CODE_WEBSEARCH_USE_CCR_PROXY", Inert),
    ("CLAUDE_CODE_WEBSOCKET_AUTH_FILE_DESCRIPTOR", Credential),
    ("CLAUDE_CODE_WEB_FETCH_AGENT", Shaping),
    ("CLAUDE_CODE_WEB_SEARCH_FAST_ARG", Shaping),
    ("CLAUDE_CODE_WEB_SEARCH_REFILLS_PER_HOUR", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_WHIMSICAL_ELEPHANT", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_WILLOW_TERN", Shaping),
    // a code-named feature gate
    ("CLAUDE_CODE_WISE_COMET", Shaping),
    ("CLAUDE_CODE_WITHHOLD_PRODUCT_EVENTS", Inert),
    // a code-named feature gate
    ("CLAUDE_CODE_WITTY_DEWDROP", Shaping),
    ("CLAUDE_CODE_WORKER_CHECKIN_SCHEDULE", Inert),
    ("CLAUDE_CODE_WORKER_EPOCH", Inert),
    ("CLAUDE_CODE_WORKFLOWS", Shaping),
    // what the agent tools allow
    ("CLAUDE_CODE_WORKFLOW_MAX_CONCURRENT_AGENTS", Shaping),
    ("CLAUDE_CODE_WORKFLOW_PREFIX_STAGGER_MS", Inert),
    ("CLAUDE_CODE_WORKFLOW_SIZE_WARNING_AGENTS", Inert),
    ("CLAUDE_CODE_WORKFLOW_SIZE_WARNING_TOKENS", Inert),
    ("CLAUDE_CODE_WORKFLOW_SUBAGENT_MODEL", Shaping),
    ("CLAUDE_CODE_WORKSPACE_HOST_PATHS", Inert),
    ("CLAUDE_CODE_YOU_SHOULD_KNOW_AUTO_SEND", Shaping),
    ("CLAUDE_CODE_YOU_SHOULD_KNOW_DEBUG", Inert),
    // part of the scope already (identity.rs)
    ("CLAUDE_CONFIG_DIR", Inert),
    ("CLAUDE_COWORK_MEMORY_EXTRA_GUIDELINES", Shaping),
    ("CLAUDE_COWORK_MEMORY_GUIDELINES", Shaping),
    ("CLAUDE_COWORK_MEMORY_INDEX_CONTENT", Shaping),
    ("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE", Shaping),
    ("CLAUDE_DEBUG", Inert),
    ("CLAUDE_DISABLE_ADOPT", Inert),
    ("CLAUDE_ENABLE_BYTE_WATCHDOG", Inert),
    ("CLAUDE_ENABLE_BYTE_WATCHDOG_BEDROCK", Inert),
    ("CLAUDE_ENABLE_STREAM_WATCHDOG", Inert),
    // sourced before each Bash command
    ("CLAUDE_ENV_FILE", Shaping),
    ("CLAUDE_FORCE_DISPLAY_SURVEY", Inert),
    ("CLAUDE_GATEWAY_ALLOW_LOOPBACK", Inert),
    ("CLAUDE_GATEWAY_DRAIN_TIMEOUT_MS", Inert),
    ("CLAUDE_GATEWAY_IDP_CONNECT_BY_HOSTNAME", Credential),
    ("CLAUDE_GATEWAY_LOG_FORMAT", Inert),
    ("CLAUDE_GATEWAY_LOG_LEVEL", Inert),
    ("CLAUDE_GATEWAY_PROXY_IS_EGRESS_BOUNDARY", Inert),
    ("CLAUDE_IMPORT_CONVERSATIONS", Shaping),
    ("CLAUDE_INTERNAL_ASSISTANT_TEAM_NAME", Shaping),
    ("CLAUDE_INTERNAL_FC_OVERRIDES", Shaping),
    // which task list the session shares
    ("CLAUDE_INTERNAL_SESSION_TASK_LIST_ID", Shaping),
    ("CLAUDE_JOB_DIR", Inert),
    ("CLAUDE_LOCAL_OAUTH_API_BASE", Credential),
    ("CLAUDE_LOCAL_OAUTH_APPS_BASE", Credential),
    ("CLAUDE_LOCAL_OAUTH_CONSOLE_BASE", Credential),
    ("CLAUDE_MEMORY_STORES", Shaping),
    ("CLAUDE_MOCK_HEADERLESS_429", Inert),
    ("CLAUDE_PROJECT_UUID", Inert),
    ("CLAUDE_PTY_HEARTBEAT_MS", Inert),
    ("CLAUDE_PTY_HOST_EXEC", Inert),
    ("CLAUDE_PTY_HOST_NO_STABLE_PATH", Inert),
    ("CLAUDE_PTY_ORPHAN_CHECK_MS", Inert),
    ("CLAUDE_PTY_RECORD", Inert),
    // directories the session can reach
    ("CLAUDE_RELAUNCH_SESSION_ADD_DIRS", Shaping),
    ("CLAUDE_REMOTE_CONTROL_SESSION_NAME_PREFIX", Inert),
    ("CLAUDE_REMOTE_WORKFLOW_ARGS", Shaping),
    ("CLAUDE_REMOTE_WORKFLOW_SCRIPT", Shaping),
    ("CLAUDE_RUNNER_ACTIVITY_FD", Inert),
    ("CLAUDE_RUNNER_ALIVE_EVERY_MS", Inert),
    ("CLAUDE_RUNNER_CLIENT_PLATFORM", Inert),
    ("CLAUDE_RUNNER_DISABLE_AWAITING_ACTION_OVERRIDE", Inert),
    ("CLAUDE_RUNNER_DISABLE_RENEWAL_WARNING", Inert),
    ("CLAUDE_RUNNER_DISABLE_START_HEARTBEATS", Inert),
    ("CLAUDE_RUNNER_DISABLE_TURN_BEGAN_BEFORE_INIT", Inert),
    ("CLAUDE_RUNNER_FETCH_DEPTH", Inert),
    ("CLAUDE_RUNNER_FETCH_SERVER_PROGRESS_CAP_MS", Inert),
    ("CLAUDE_RUNNER_OFFERS_NEW_MACHINE", Inert),
    ("CLAUDE_RUNNER_SKIP_GIT_VERIFY", Inert),
    ("CLAUDE_RUNNER_START_FOLDER", Inert),
    ("CLAUDE_RUNNER_UPDATE_BIN", Inert),
    ("CLAUDE_RUNNER_USE_GIT_PROXY", Inert),
    // where the login is stored
    ("CLAUDE_SECURESTORAGE_CONFIG_DIR", Credential),
    ("CLAUDE_SERVE_DRAIN_TIMEOUT_MS", Inert),
    ("CLAUDE_SESSION_INGRESS_TOKEN_FILE", Credential),
    ("CLAUDE_SLOW_FIRST_BYTE_MS", Inert),
    ("CLAUDE_SNIP", Shaping),
    ("CLAUDE_SSH_DAEMON_CHILD", Inert),
    ("CLAUDE_SSH_LOCAL_BINARY", Inert),
    ("CLAUDE_SSH_RUN_DIR", Inert),
    ("CLAUDE_SSH_VERSION", Inert),
    ("CLAUDE_STAGE_FILE_ROOT", Inert),
    ("CLAUDE_STREAM_FIRST_BYTE_TIMEOUT_MS", Inert),
    ("CLAUDE_STREAM_IDLE_TIMEOUT_MS", Inert),
    ("CLAUDE_TEST_NO_OPEN", Inert),
    ("CLAUDE_TMPDIR", Inert),
    ("CLAUDE_TRUSTED_DEVICE_TOKEN", Credential),
    ("CLAUDE_WORKFLOW_NAME_ONLY", Shaping),
    ("CLOUDSDK_ACTIVE_CONFIG_NAME", Credential),
    ("CLOUDSDK_AUTH_ACCESS_TOKEN", Credential),
    // read indirectly
    ("CLOUDSDK_COMPUTE_REGION", Credential),
    // read indirectly
    ("CLOUDSDK_COMPUTE_ZONE", Credential),
    ("CLOUDSDK_CONFIG", Credential),
    // read indirectly
    ("CLOUDSDK_CORE_ACCOUNT", Credential),
    ("CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE", Inert),
    // read indirectly
    ("CLOUDSDK_CORE_PROJECT", Credential),
    ("CLOUDSDK_ROOT_DIR", Inert),
    ("CLOUD_ML_REGION", Credential),
    ("CLOUD_RUN_JOB", Inert),
    ("CODER", Inert),
    ("CODER_WORKSPACE_NAME", Inert),
    ("CODESPACES", Inert),
    ("COLORFGBG", Inert),
    ("COLORTERM", Inert),
    ("COMPUTERNAME", Inert),
    ("COMPUTER_USE_SWIFT_NODE_PATH", Inert),
    ("COMSPEC", Inert),
    ("CONTAINER_SANDBOX_MOUNT_POINT", Inert),
    ("COREPACK_ENABLE_AUTO_PIN", Inert),
    ("COURSIER_CREDENTIALS", Inert),
    ("CURL_CA_BUNDLE", Inert),
    ("CURSOR_TRACE_ID", Inert),
    ("ComSpec", Inert),
    ("CommonProgramFiles", Inert),
    ("CommonProgramW6432", Inert),
    ("ConEmuANSI", Inert),
    ("ConEmuPID", Inert),
    ("ConEmuTask", Inert),
    ("DATABASEURL", Inert),
    ("DATABASE_URL", Inert),
    ("DAYTONA_WS_ID", Inert),
    ("DEBUG", Inert),
    ("DEBUG_AUTH", Inert),
    ("DEBUG_CLAUDE_AGENT_SDK", Inert),
    ("DEBUG_SDK", Inert),
    ("DEMO_VERSION", Inert),
    ("DENO_CERT", Inert),
    ("DENO_DEPLOYMENT_ID", Inert),
    ("DETECT_GCP_RETRIES", Inert),
    ("DEVPOD", Inert),
    ("DEVPOD_WORKSPACE_UID", Inert),
    ("DISABLE_AUTOUPDATER", Inert),
    // when the CLI compacts: the shim counts compactions itself
    ("DISABLE_AUTO_COMPACT", Inert),
    ("DISABLE_BRIEF_MODE_STOP_HOOK", Shaping),
    ("DISABLE_BUG_COMMAND", Inert),
    // when the CLI compacts: the shim counts compactions itself
    ("DISABLE_COMPACT", Inert),
    ("DISABLE_COST_WARNINGS", Inert),
    ("DISABLE_DOCTOR_COMMAND", Inert),
    ("DISABLE_ERROR_REPORTING", Inert),
    ("DISABLE_EXTRA_USAGE_COMMAND", Inert),
    ("DISABLE_FEEDBACK_COMMAND", Inert),
    // feature flags shape prompts and tools
    ("DISABLE_GROWTHBOOK", Shaping),
    ("DISABLE_INSTALLATION_CHECKS", Inert),
    ("DISABLE_INSTALL_GITHUB_APP_COMMAND", Inert),
    ("DISABLE_INTERLEAVED_THINKING", Shaping),
    ("DISABLE_LOGIN_COMMAND", Inert),
    ("DISABLE_LOGOUT_COMMAND", Inert),
    // cache control blocks in the request
    ("DISABLE_PROMPT_CACHING", Shaping),
    // cache control blocks in the request
    ("DISABLE_PROMPT_CACHING_FABLE", Shaping),
    // cache control blocks in the request
    ("DISABLE_PROMPT_CACHING_HAIKU", Shaping),
    // cache control blocks in the request
    ("DISABLE_PROMPT_CACHING_MYTHOS", Shaping),
    // cache control blocks in the request
    ("DISABLE_PROMPT_CACHING_OPUS", Shaping),
    // cache control blocks in the request
    ("DISABLE_PROMPT_CACHING_SONNET", Shaping),
    ("DISABLE_TELEMETRY", Inert),
    ("DISABLE_UPDATES", Inert),
    ("DISABLE_UPGRADE_COMMAND", Inert),
    ("DISPLAY", Inert),
    ("DO_NOT_TRACK", Inert),
    ("DPKG_ADMINDIR", Inert),
    ("DPKG_MAINTSCRIPT_PACKAGE", Inert),
    ("DPKG_ROOT", Inert),
    ("DS_CHROMIUM_PATH", Inert),
    ("DYNO", Inert),
    ("EDITOR", Inert),
    ("EMBEDDED_SEARCH_TOOLS", Shaping),
    ("ENABLE_BETA_TRACING_DETAILED", Inert),
    ("ENABLE_CLAUDEAI_MCP_SERVERS", Shaping),
    ("ENABLE_ENHANCED_TELEMETRY_BETA", Inert),
    ("ENABLE_LOCKLESS_UPDATES", Inert),
    ("ENABLE_LSP_TOOL", Shaping),
    ("ENABLE_MCP_LARGE_OUTPUT_FILES", Shaping),
    ("ENABLE_PID_BASED_VERSION_LOCKING", Inert),
    // cache control blocks in the request
    ("ENABLE_PROMPT_CACHING_1H", Shaping),
    // cache control blocks in the request
    ("ENABLE_PROMPT_CACHING_1H_BEDROCK", Shaping),
    ("ENABLE_SESSION_BACKGROUNDING", Inert),
    ("ENABLE_SESSION_PERSISTENCE", Inert),
    ("ENABLE_TOOL_SEARCH", Shaping),
    ("ENV", Inert),
    ("ENVIRONMENT_SERVICE_KEY", Credential),
    ("FALLBACK_FOR_ALL_PRIMARY_MODELS", Shaping),
    ("FLY_APP_NAME", Inert),
    ("FLY_MACHINE_ID", Inert),
    ("FORCE_AUTOUPDATE_PLUGINS", Inert),
    ("FORCE_CODE_TERMINAL", Inert),
    ("FORCE_COLOR", Inert),
    ("FORCE_HYPERLINK", Inert),
    // cache control blocks in the request
    ("FORCE_PROMPT_CACHING_5M", Shaping),
    ("FORCE_VCR", Inert),
    ("FUNCTION_NAME", Inert),
    ("FUNCTION_TARGET", Inert),
    ("GAE_MODULE_NAME", Inert),
    ("GAE_SERVICE", Inert),
    // where Google credentials come from
    ("GCE_METADATA_HOST", Credential),
    // where Google credentials come from
    ("GCE_METADATA_IP", Credential),
    ("GCLOUD_PROJECT", Credential),
    ("GCM_INTERACTIVE", Inert),
    ("GH_CONFIG_DIR", Inert),
    // a third-party service's token, not the model account
    ("GH_ENTERPRISE_TOKEN", Inert),
    ("GH_HOST", Inert),
    ("GH_REPO", Inert),
    // a third-party service's token, not the model account
    ("GH_TOKEN", Inert),
    ("GITHUB_ACTIONS", Inert),
    ("GITHUB_ACTION_INPUTS", Inert),
    ("GITHUB_ACTION_PATH", Inert),
    ("GITHUB_ACTOR", Inert),
    ("GITHUB_ACTOR_ID", Inert),
    // a third-party service's token, not the model account
    ("GITHUB_ENTERPRISE_TOKEN", Inert),
    ("GITHUB_ENV", Inert),
    ("GITHUB_EVENT_NAME", Inert),
    ("GITHUB_EVENT_PATH", Inert),
    ("GITHUB_REPOSITORY", Inert),
    ("GITHUB_REPOSITORY_ID", Inert),
    ("GITHUB_REPOSITORY_OWNER", Inert),
    ("GITHUB_REPOSITORY_OWNER_ID", Inert),
    // a third-party service's token, not the model account
    ("GITHUB_TOKEN", Inert),
    ("GITHUB_WORKSPACE", Inert),
    ("GITLAB_CI", Inert),
    ("GITPOD_WORKSPACE_ID", Inert),
    ("GIT_ASKPASS", Inert),
    ("GIT_CONFIG_COUNT", Inert),
    ("GIT_CONFIG_GLOBAL", Inert),
    ("GIT_CONFIG_NOSYSTEM", Inert),
    ("GIT_CONFIG_PARAMETERS", Inert),
    ("GIT_CONFIG_SYSTEM", Inert),
    ("GIT_DIR", Inert),
    ("GIT_SSH_COMMAND", Inert),
    ("GIT_SSH_VARIANT", Inert),
    ("GIT_SSL_CAINFO", Inert),
    ("GIT_SSL_CAPATH", Inert),
    ("GIT_SSL_CERT", Inert),
    ("GIT_SSL_KEY", Inert),
    ("GIT_SSL_NO_VERIFY", Inert),
    ("GIT_TERMINAL_PROMPT", Inert),
    ("GNOME_TERMINAL_SERVICE", Inert),
    ("GNUPGHOME", Inert),
    ("GOAUTH", Inert),
    ("GOMAXPROCS", Inert),
    ("GOOGLE_APPLICATION_CREDENTIALS", Credential),
    ("GOOGLE_CLOUD_PROJECT", Credential),
    ("GOOGLE_CLOUD_QUOTA_PROJECT", Credential),
    ("GOOGLE_CLOUD_WORKSTATIONS", Inert),
    ("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES", Credential),
    ("GRACEFUL_FS_PLATFORM", Inert),
    ("GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", Inert),
    ("GRPC_EXPERIMENTAL_ENABLE_OUTLIER_DETECTION", Inert),
    ("GRPC_NODE_TRACE", Inert),
    ("GRPC_NODE_USE_ALTERNATIVE_RESOLVER", Inert),
    ("GRPC_NODE_VERBOSITY", Inert),
    ("GRPC_SSL_CIPHER_SUITES", Inert),
    ("GRPC_TRACE", Inert),
    ("GRPC_VERBOSITY", Inert),
    ("HEX_CACERTS_PATH", Inert),
    ("HISTFILE", Inert),
    // part of the scope already, through the config dir
    ("HOME", Inert),
    ("HOMEDRIVE", Inert),
    ("HOMEPATH", Inert),
    ("HOMESHARE", Inert),
    ("HOSTALIASES", Inert),
    ("HTTPLIB2_CA_CERTS", Inert),
    ("HTTPS_PROXY", Inert),
    ("HTTP_PROXY", Inert),
    ("HUB_CONFIG", Inert),
    ("INK_SCREEN_READER", Inert),
    ("INTELLIJ_TERMINAL_COMMAND_BLOCKS", Inert),
    ("INTELLIJ_TERMINAL_COMMAND_BLOCKS_REWORKED", Inert),
    ("IS_DEMO", Inert),
    ("IS_SANDBOX", Inert),
    ("ITERM_SESSION_ID", Inert),
    ("JAVA_HOME", Inert),
    ("JAVA_TOOL_OPTIONS", Inert),
    ("KITTY_WINDOW_ID", Inert),
    ("KONSOLE_VERSION", Inert),
    ("KRB5CCNAME", Inert),
    ("KRB5_CLIENT_KTNAME", Inert),
    ("KRB5_CONFIG", Inert),
    ("KRB5_KTNAME", Inert),
    ("KUBECONFIG", Inert),
    ("KUBERNETES_SERVICE_HOST", Inert),
    ("K_CONFIGURATION", Inert),
    ("K_SERVICE", Inert),
    ("LANG", Inert),
    ("LC_ALL", Inert),
    ("LC_TERMINAL", Inert),
    ("LC_TIME", Inert),
    ("LEIN_HOME", Inert),
    ("LOCALAPPDATA", Inert),
    ("LOCALDOMAIN", Inert),
    ("LOCAL_BRIDGE", Inert),
    ("MARIADBDATABASE", Inert),
    ("MARIADBHOST", Inert),
    ("MARIADBPASSWORD", Inert),
    ("MARIADBPORT", Inert),
    ("MARIADBURL", Inert),
    ("MARIADBUSER", Inert),
    ("MARIADB_DATABASE", Inert),
    ("MARIADB_HOST", Inert),
    ("MARIADB_PASSWORD", Inert),
    ("MARIADB_PORT", Inert),
    ("MARIADB_URL", Inert),
    ("MARIADB_USER", Inert),
    ("MAX_MCP_OUTPUT_TOKENS", Shaping),
    ("MAX_STRUCTURED_OUTPUT_RETRIES", Inert),
    ("MAX_THINKING_TOKENS", Shaping),
    // an MCP server's OAuth client, not the model account
    ("MCP_CLIENT_SECRET", Inert),
    ("MCP_CONNECTION_NONBLOCKING", Inert),
    ("MCP_CONNECT_TIMEOUT_MS", Inert),
    ("MCP_DISCOVERY_CACHE", Inert),
    ("MCP_DISCOVERY_CACHE_MAX_STALE_S", Inert),
    ("MCP_DISCOVERY_CACHE_STRIKES", Inert),
    ("MCP_DISCOVERY_CACHE_TTL_S", Inert),
    ("MCP_OAUTH_CALLBACK_PORT", Inert),
    // an MCP server's OAuth client, not the model account
    ("MCP_OAUTH_CLIENT_METADATA_URL", Inert),
    ("MCP_PROTOCOL_NEGOTIATION", Inert),
    ("MCP_REMOTE_SERVER_CONNECTION_BATCH_SIZE", Inert),
    ("MCP_SDK_GENERATION", Inert),
    ("MCP_SERVER_CONNECTION_BATCH_SIZE", Inert),
    ("MCP_TIMEOUT", Inert),
    ("MCP_TOOL_TIMEOUT", Inert),
    ("MCP_TRUNCATION_PROMPT_OVERRIDE", Shaping),
    // an MCP server's OAuth client, not the model account
    ("MCP_XAA_IDP_CLIENT_SECRET", Inert),
    ("METADATA_SERVER_DETECTION", Inert),
    ("MIMALLOC_PURGE_DELAY", Inert),
    // Azure identity (Foundry auth)
    ("MSAL_FORCE_REGION", Credential),
    ("MSYSTEM", Inert),
    ("MYSQLDATABASE", Inert),
    ("MYSQLHOST", Inert),
    ("MYSQLPASSWORD", Inert),
    ("MYSQLPORT", Inert),
    ("MYSQLURL", Inert),
    ("MYSQLUSER", Inert),
    ("MYSQL_DATABASE", Inert),
    ("MYSQL_HOST", Inert),
    ("MYSQL_PASSWORD", Inert),
    ("MYSQL_PORT", Inert),
    ("MYSQL_URL", Inert),
    ("MYSQL_USER", Inert),
    ("NETLIFY", Inert),
    ("NIX_SSL_CERT_FILE", Inert),
    ("NODE_CHANNEL_FD", Inert),
    ("NODE_CLUSTER_SCHED_POLICY", Inert),
    ("NODE_DEBUG", Inert),
    ("NODE_DISABLE_COLORS", Inert),
    ("NODE_ENV", Inert),
    ("NODE_EXTRA_CA_CERTS", Inert),
    ("NODE_INSPECTOR_IPC", Inert),
    ("NODE_NO_READLINE", Inert),
    ("NODE_OPTIONS", Inert),
    ("NODE_PATH", Inert),
    ("NODE_PORT", Inert),
    ("NODE_REPL_EXTERNAL_MODULE", Inert),
    ("NODE_REPL_HISTORY", Inert),
    ("NODE_REPL_HISTORY_SIZE", Inert),
    ("NODE_REPL_MODE", Inert),
    ("NODE_TEST_CONTEXT", Inert),
    ("NODE_TEST_WORKER_ID", Inert),
    ("NODE_TLS_REJECT_UNAUTHORIZED", Inert),
    ("NODE_UNIQUE_ID", Inert),
    ("NODE_USE_ENV_PROXY", Inert),
    ("NODE_USE_SYSTEM_CA", Inert),
    ("NO_COLOR", Inert),
    ("NO_PROXY", Inert),
    ("NUMBER_OF_PROCESSORS", Inert),
    ("NoDefaultCurrentDirectoryInExePath", Inert),
    ("OLDPWD", Inert),
    ("OS", Inert),
    ("OSTYPE", Inert),
    ("OTEL_ATTRIBUTE_COUNT_LIMIT", Inert),
    ("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", Inert),
    ("OTEL_BLRP_EXPORT_TIMEOUT", Inert),
    ("OTEL_BLRP_MAX_EXPORT_BATCH_SIZE", Inert),
    ("OTEL_BLRP_MAX_QUEUE_SIZE", Inert),
    ("OTEL_BLRP_SCHEDULE_DELAY", Inert),
    ("OTEL_BSP_EXPORT_TIMEOUT", Inert),
    ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", Inert),
    ("OTEL_BSP_MAX_QUEUE_SIZE", Inert),
    ("OTEL_BSP_SCHEDULE_DELAY", Inert),
    // read indirectly
    ("OTEL_EXPORTER_OTLP_COMPRESSION", Inert),
    ("OTEL_EXPORTER_OTLP_ENDPOINT", Inert),
    ("OTEL_EXPORTER_OTLP_HEADERS", Inert),
    ("OTEL_EXPORTER_OTLP_INSECURE", Inert),
    // read indirectly
    ("OTEL_EXPORTER_OTLP_LOGS_COMPRESSION", Inert),
    ("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", Inert),
    ("OTEL_EXPORTER_OTLP_LOGS_HEADERS", Inert),
    ("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", Inert),
    ("OTEL_EXPORTER_OTLP_LOGS_TIMEOUT", Inert),
    // read indirectly
    ("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", Inert),
    ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", Inert),
    ("OTEL_EXPORTER_OTLP_METRICS_HEADERS", Inert),
    ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", Inert),
    ("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", Inert),
    ("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", Inert),
    ("OTEL_EXPORTER_OTLP_PROTOCOL", Inert),
    ("OTEL_EXPORTER_OTLP_TIMEOUT", Inert),
    // read indirectly
    ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", Inert),
    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", Inert),
    ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", Inert),
    ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", Inert),
    ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", Inert),
    ("OTEL_EXPORTER_PROMETHEUS_HOST", Inert),
    ("OTEL_EXPORTER_PROMETHEUS_PORT", Inert),
    ("OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT", Inert),
    ("OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT", Inert),
    ("OTEL_LOGS_EXPORTER", Inert),
    ("OTEL_LOGS_EXPORT_INTERVAL", Inert),
    ("OTEL_LOG_ASSISTANT_RESPONSES", Inert),
    ("OTEL_LOG_MANAGED_SETTINGS", Inert),
    ("OTEL_LOG_RAW_API_BODIES", Inert),
    ("OTEL_LOG_TOOL_CONTENT", Inert),
    ("OTEL_LOG_TOOL_DETAILS", Inert),
    ("OTEL_LOG_USER_PROMPTS", Inert),
    ("OTEL_METRICS_EXPORTER", Inert),
    ("OTEL_METRICS_INCLUDE_ACCOUNT_UUID", Inert),
    ("OTEL_METRICS_INCLUDE_ENTRYPOINT", Inert),
    ("OTEL_METRICS_INCLUDE_REPOSITORY", Inert),
    ("OTEL_METRICS_INCLUDE_RESOURCE_ATTRIBUTES", Inert),
    ("OTEL_METRICS_INCLUDE_SESSION_ID", Inert),
    ("OTEL_METRICS_INCLUDE_VERSION", Inert),
    ("OTEL_METRIC_EXPORT_INTERVAL", Inert),
    ("OTEL_RESOURCE_ATTRIBUTES", Inert),
    ("OTEL_RESOURCE_INCLUDE_HOST", Inert),
    ("OTEL_SERVICE_NAME", Inert),
    ("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", Inert),
    ("OTEL_SPAN_ATTRIBUTE_PER_EVENT_COUNT_LIMIT", Inert),
    ("OTEL_SPAN_ATTRIBUTE_PER_LINK_COUNT_LIMIT", Inert),
    ("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", Inert),
    ("OTEL_SPAN_EVENT_COUNT_LIMIT", Inert),
    ("OTEL_SPAN_LINK_COUNT_LIMIT", Inert),
    ("OTEL_TRACES_EXPORTER", Inert),
    ("OTEL_TRACES_EXPORT_INTERVAL", Inert),
    ("OTEL_TRACES_SAMPLER", Inert),
    ("OTEL_TRACES_SAMPLER_ARG", Inert),
    ("OneDrive", Inert),
    ("OneDriveCommercial", Inert),
    ("OneDriveConsumer", Inert),
    ("P4PORT", Inert),
    ("PASSWORD", Inert),
    ("PATH", Inert),
    ("PATHEXT", Inert),
    ("PGDATABASE", Inert),
    ("PGHOST", Inert),
    ("PGPASSWORD", Inert),
    ("PGPORT", Inert),
    ("PGSSLMODE", Inert),
    ("PGURL", Inert),
    ("PGUSER", Inert),
    ("PG_DATABASE", Inert),
    ("PG_HOST", Inert),
    ("PG_PASSWORD", Inert),
    ("PG_PORT", Inert),
    ("PG_SSLMODE", Inert),
    ("PG_URL", Inert),
    ("PG_USER", Inert),
    ("PIP_CERT", Inert),
    ("PLAYWRIGHT_BROWSERS_PATH", Inert),
    ("PORT", Inert),
    ("POSTGRES_URL", Inert),
    ("PREFIX", Inert),
    ("PROCESSOR_ARCHITECTURE", Inert),
    ("PROCESSOR_IDENTIFIER", Inert),
    ("PROCESSOR_LEVEL", Inert),
    ("PROCESSOR_REVISION", Inert),
    ("PROGRAMDATA", Inert),
    ("PROGRAMFILES", Inert),
    ("PROJECT_DOMAIN", Inert),
    ("PUBLIC", Inert),
    ("PWD", Inert),
    ("ProgramData", Inert),
    ("ProgramFiles", Inert),
    ("ProgramW6432", Inert),
    ("RAILWAY_ENVIRONMENT_NAME", Inert),
    ("RAILWAY_SERVICE_NAME", Inert),
    // Azure identity region (Foundry auth)
    ("REGION_NAME", Credential),
    ("RENDER", Inert),
    ("REPL_ID", Inert),
    ("REPL_SLUG", Inert),
    ("REQUESTS_CA_BUNDLE", Inert),
    ("RES_OPTIONS", Inert),
    ("RUNNER_ENVIRONMENT", Inert),
    ("RUNNER_OS", Inert),
    ("RUNNER_RELEASE_IDLE_SESSION_MIN", Inert),
    ("SAFEUSER", Inert),
    ("SANDBOX_OFFICE_PDF_DIR", Inert),
    ("SANDBOX_OFFICE_PDF_SEND", Inert),
    ("SANDBOX_RUNTIME", Inert),
    ("SDK_NATIVE_BIN", Inert),
    // the API reached through this proxy
    ("SELF_HOSTED_RUNNER_AGENT_PROXY_URL", Credential),
    ("SELF_HOSTED_RUNNER_BASE_DIR", Inert),
    ("SELF_HOSTED_RUNNER_BG_RESULT_GRACE_MS", Inert),
    ("SELF_HOSTED_RUNNER_CHECKOUT_HOOK_TIMEOUT_MS", Inert),
    ("SELF_HOSTED_RUNNER_CLIENT_LABEL", Inert),
    ("SELF_HOSTED_RUNNER_CONFIGURE_GIT", Inert),
    ("SELF_HOSTED_RUNNER_CONFINE_REPO_SETTINGS", Inert),
    ("SELF_HOSTED_RUNNER_DEBUG_DIR", Inert),
    ("SELF_HOSTED_RUNNER_DEBUG_TOKEN_DIR", Inert),
    ("SELF_HOSTED_RUNNER_DEFER_SHUTDOWN_MAX_MS", Inert),
    ("SELF_HOSTED_RUNNER_DIFF_FINDS_NESTED_REPOSITORY", Inert),
    ("SELF_HOSTED_RUNNER_DRAIN_GRACE_MS", Inert),
    ("SELF_HOSTED_RUNNER_DRAIN_MARKER_FILE", Inert),
    ("SELF_HOSTED_RUNNER_DRAIN_WAIT_BG_TASKS_MS", Inert),
    ("SELF_HOSTED_RUNNER_DRAIN_WAIT_MS", Inert),
    ("SELF_HOSTED_RUNNER_ENVIRONMENT_SECRET", Inert),
    ("SELF_HOSTED_RUNNER_EXEC_PATH", Inert),
    ("SELF_HOSTED_RUNNER_HEALTH_PORT", Inert),
    ("SELF_HOSTED_RUNNER_HOLD_IDLE_FILE", Inert),
    ("SELF_HOSTED_RUNNER_HOOKS_DIR", Inert),
    ("SELF_HOSTED_RUNNER_HOST_CONFIG_DIR", Inert),
    ("SELF_HOSTED_RUNNER_HOST_CONFIG_SNAPSHOT", Inert),
    ("SELF_HOSTED_RUNNER_IDLE_SHUTDOWN_MS", Inert),
    ("SELF_HOSTED_RUNNER_LOCK_TO_ACCOUNT", Inert),
    ("SELF_HOSTED_RUNNER_LOG_FILE", Inert),
    ("SELF_HOSTED_RUNNER_MAX_HOLD_MS", Inert),
    ("SELF_HOSTED_RUNNER_MAX_LIFETIME_GRACE_MS", Inert),
    ("SELF_HOSTED_RUNNER_MAX_LIFETIME_MS", Inert),
    ("SELF_HOSTED_RUNNER_NESTED_MODEL_ACCESS", Inert),
    ("SELF_HOSTED_RUNNER_NESTED_MODEL_ALLOW", Inert),
    ("SELF_HOSTED_RUNNER_NESTED_MODEL_CALL_BUDGET", Inert),
    ("SELF_HOSTED_RUNNER_POOL_SECRET", Inert),
    ("SELF_HOSTED_RUNNER_POST_SESSION_HOOK_TIMEOUT_MS", Inert),
    ("SELF_HOSTED_RUNNER_POST_TURN_SETTLE_MS", Inert),
    ("SELF_HOSTED_RUNNER_PUSH_OUTCOME_ON_RELEASE", Inert),
    ("SELF_HOSTED_RUNNER_RELEASE_IDLE_SESSION_MIN", Inert),
    ("SELF_HOSTED_RUNNER_REMOVE_SESSION_STATE", Inert),
    ("SELF_HOSTED_RUNNER_REPOSITORY_FOLDER", Inert),
    ("SELF_HOSTED_RUNNER_RETIRE_AT", Inert),
    ("SELF_HOSTED_RUNNER_SERVER_AUTO_MODE_LISTS", Inert),
    ("SELF_HOSTED_RUNNER_SESSION_IDLE_MIN", Inert),
    ("SELF_HOSTED_RUNNER_SESSION_IDLE_MS", Inert),
    ("SELF_HOSTED_RUNNER_SESSION_IDLE_SEC", Inert),
    ("SELF_HOSTED_RUNNER_SESSION_STOP_GRACE_MS", Inert),
    ("SELF_HOSTED_RUNNER_SIGKILL_GRACE_MS", Inert),
    ("SELF_HOSTED_RUNNER_SIGKILL_TIMEOUT_MS", Inert),
    ("SELF_HOSTED_RUNNER_SKIP_AGENT_PROXY_CHECK", Inert),
    ("SELF_HOSTED_RUNNER_STARTUP_TIMEOUT_MS", Inert),
    ("SELF_HOSTED_RUNNER_START_DIR", Inert),
    ("SELF_HOSTED_RUNNER_TRUST_WORKSPACE", Inert),
    ("SELF_HOSTED_RUNNER_USE_ANTHROPIC_GH", Inert),
    ("SESSIONNAME", Inert),
    ("SESSION_INGRESS_URL", Inert),
    ("SHELL", Inert),
    ("SLASH_COMMAND_TOOL_CHAR_BUDGET", Shaping),
    ("SPACE_CREATOR_USER_ID", Inert),
    ("SQLITEURL", Inert),
    ("SQLITE_URL", Inert),
    ("SRT_DEBUG", Inert),
    ("SSH_AUTH_SOCK", Inert),
    ("SSH_CLIENT", Inert),
    ("SSH_CONNECTION", Inert),
    ("SSH_TTY", Inert),
    ("SSL_CERT_DIR", Inert),
    ("SSL_CERT_FILE", Inert),
    ("STY", Inert),
    ("SUDO_GID", Inert),
    ("SUDO_UID", Inert),
    ("SUDO_USER", Inert),
    ("SWE_BENCH_INSTANCE_ID", Inert),
    ("SWE_BENCH_RUN_ID", Inert),
    ("SWE_BENCH_TASK_ID", Inert),
    ("SYSTEMROOT", Inert),
    // a system reminder
    ("SYSTEM_REMINDER_MEMORY_CONTEXT", Shaping),
    ("SystemDrive", Inert),
    ("SystemRoot", Inert),
    // read indirectly
    ("TASK_MAX_OUTPUT_LENGTH", Shaping),
    ("TEAMCITY_VERSION", Inert),
    ("TEMP", Inert),
    ("TERM", Inert),
    ("TERMINAL", Inert),
    ("TERMINAL_EMULATOR", Inert),
    ("TERMINATOR_UUID", Inert),
    ("TERMUX_VERSION", Inert),
    ("TERM_PROGRAM", Inert),
    ("TERM_PROGRAM_VERSION", Inert),
    ("TEST_ENABLE_SESSION_PERSISTENCE", Inert),
    ("TEST_GRACEFUL_FS_GLOBAL_PATCH", Inert),
    ("TILIX_ID", Inert),
    ("TLS_DATABASE_URL", Inert),
    ("TLS_MARIADB_DATABASE_URL", Inert),
    ("TLS_MYSQL_DATABASE_URL", Inert),
    ("TLS_POSTGRES_DATABASE_URL", Inert),
    ("TMP", Inert),
    ("TMPDIR", Inert),
    ("TMUX", Inert),
    ("TMUX_PANE", Inert),
    ("TRACEPARENT", Inert),
    ("TRACESTATE", Inert),
    ("TSC_NONPOLLING_WATCHER", Inert),
    ("TSC_WATCHDIRECTORY", Inert),
    ("TSC_WATCHFILE", Inert),
    ("TZ", Inert),
    ("ULTRAPLAN_PROMPT_FILE", Shaping),
    ("USER", Inert),
    ("USERDOMAIN", Inert),
    ("USERNAME", Inert),
    ("USERPROFILE", Inert),
    // internal users get other prompts and tools
    ("USER_TYPE", Shaping),
    ("USE_API_CONTEXT_MANAGEMENT", Shaping),
    // which rg binary, same results
    ("USE_BUILTIN_RIPGREP", Inert),
    ("USE_LOCAL_OAUTH", Credential),
    ("USE_STAGING_OAUTH", Credential),
    ("UV_THREADPOOL_SIZE", Inert),
    ("VCR_RECORD", Inert),
    ("VERBOSE_SSR", Inert),
    ("VERCEL", Inert),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_3_5_HAIKU", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_3_5_SONNET", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_3_7_SONNET", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_4_0_OPUS", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_4_0_SONNET", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_4_1_OPUS", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_4_5_OPUS", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_4_5_SONNET", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_4_6_OPUS", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_4_6_SONNET", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_4_7_OPUS", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_4_8_OPUS", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_5_5_OPUS", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_5_5_SONNET", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_5_OPUS", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_5_SONNET", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_FABLE_5", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_FABLE_5_1", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_FABLE_5_2", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_HAIKU_4_5", Credential),
    // which Vertex region serves that model; read indirectly
    ("VERTEX_REGION_CLAUDE_HAIKU_5_5", Credential),
    ("VISUAL", Inert),
    ("VITALS_EMITTER_BIN", Inert),
    ("VOICE_STREAM_BASE_URL", Inert),
    ("VSCODE_GIT_ASKPASS_MAIN", Inert),
    ("VSCODE_INSPECTOR_OPTIONS", Inert),
    ("VTE_VERSION", Inert),
    ("VisualStudioVersion", Inert),
    ("WASM_CWD", Inert),
    ("WASM_ENV_STR", Inert),
    ("WASM_ROOT_DIR", Inert),
    ("WASM_USE_ASYNC_INIT", Inert),
    ("WAYLAND_DISPLAY", Inert),
    ("WEBSITE_SITE_NAME", Inert),
    ("WEBSITE_SKU", Inert),
    ("WEZTERM_PANE", Inert),
    ("WSL_DISTRO_NAME", Inert),
    ("WSL_INTEROP", Inert),
    ("WT_SESSION", Inert),
    ("XDG_CACHE_HOME", Inert),
    ("XDG_CONFIG_HOME", Inert),
    ("XDG_DATA_HOME", Inert),
    ("XDG_RUNTIME_DIR", Inert),
    ("XDG_STATE_HOME", Inert),
    ("XTERM_VERSION", Inert),
    ("ZDOTDIR", Inert),
    ("ZED_TERM", Inert),
    ("ZELLIJ", Inert),
    ("_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL", Credential),
    ("_X_AMZN_TRACE_ID", Inert),
    ("__CFBundleIdentifier", Inert),
    ("__MINIMATCH_TESTING_PLATFORM__", Inert),
    ("all_proxy", Inert),
    ("gcloud_project", Credential),
    ("google_application_credentials", Credential),
    ("google_cloud_project", Credential),
    ("grpc_proxy", Inert),
    ("http_proxy", Inert),
    ("https_proxy", Inert),
    ("no_grpc_proxy", Inert),
    ("no_proxy", Inert),
    ("windir", Inert),
];

/// Every environment variable name the CLI bundle `bundle` (a platform
/// binary with the JavaScript inside, or a `cli.js`) reads, by the access
/// patterns the module doc lists. Deterministic: the same bytes give the same
/// names.
pub fn names_read_by(bundle: &[u8]) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    // Helpers a module exports (by their exported names), and the modules
    // that import something: a second pass finds the imported helpers' calls.
    let mut exported: Vec<&[u8]> = Vec::new();
    let mut importers: Vec<&[u8]> = Vec::new();
    for text in segments(bundle) {
        exported.extend(
            Segment {
                text,
                out: &mut out,
            }
            .scan(),
        );
        if find(text, b"import{", 0).is_some() {
            importers.push(text);
        }
    }
    exported.sort_unstable();
    exported.dedup();
    if !exported.is_empty() {
        for text in importers {
            let mut segment = Segment {
                text,
                out: &mut out,
            };
            let helpers = segment.imported(&exported);
            segment.helper_calls(&helpers);
        }
    }
    out
}

/// The runs of text between control bytes, 16 bytes or longer: a bundled
/// module's source is one run; machine code and bytecode break into short
/// runs, so no pattern spans them.
fn segments(bundle: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    let mut i = 0;
    std::iter::from_fn(move || {
        while i <= bundle.len() {
            let end = i;
            i += 1;
            if end == bundle.len() || BREAKS[usize::from(bundle[end])] {
                let run = &bundle[start..end];
                start = end + 1;
                if run.len() >= 16 {
                    return Some(run);
                }
            }
        }
        None
    })
}

/// The control bytes (all but tab, line feed and carriage return).
const BREAKS: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = !matches!(b, 0x09 | 0x0a | 0x0d);
        b += 1;
    }
    t[0x7f] = true;
    t
};

/// One run of JavaScript text, scanned for every pattern.
struct Segment<'a, 'o> {
    text: &'a [u8],
    out: &'o mut std::collections::BTreeSet<String>,
}

/// The kinds of the typed registry's readers (`X=H.bool()` and so on).
const REGISTRY_KINDS: &[&[u8]] = &[
    b".str(",
    b".rawStr(",
    b".bool(",
    b".triBool(",
    b".int(",
    b".names(",
    b".enum(",
];
/// The array methods whose callback may read `process.env[x]` for each item.
const ARRAY_METHODS: &[&[u8]] = &[
    b".some(",
    b".every(",
    b".filter(",
    b".map(",
    b".forEach(",
    b".find(",
    b".flatMap(",
];
/// Bytes after which a bare `env.X` starts an expression.
const BEFORE_EXPR: &[u8] = b" \t\n\r(,;!=&|?:{[}+-*/<>%^~";

impl<'a> Segment<'a, '_> {
    /// Adds the names this module reads; returns the exported names of the
    /// helpers it exports.
    fn scan(&mut self) -> Vec<&'a [u8]> {
        let t = self.text;
        let mut exported = Vec::new();
        if find(t, b"env", 0).is_some() {
            self.direct();
            self.bare_env();
            self.destructured();
            self.aliases();
            self.selectors();
            self.otel();
            self.plugins();
            if find(t, b"process.env", 0).is_some() {
                let helpers = self.helpers();
                self.helper_calls(&helpers);
                self.loops(&helpers);
                for (local, name) in bindings(t, b"export{") {
                    if helpers.contains(&local) {
                        exported.push(name);
                    }
                }
            }
        }
        if find(t, b":()=>", 0).is_some() {
            self.registry();
        }
        exported
    }

    /// The local names of the helpers (`exported`) this module imports.
    fn imported(&self, exported: &[&[u8]]) -> Vec<&'a [u8]> {
        bindings(self.text, b"import{")
            .filter(|(name, _)| exported.binary_search(name).is_ok())
            .map(|(_, local)| local)
            .collect()
    }

    fn add(&mut self, name: &[u8]) {
        if is_name(name) {
            self.out.insert(String::from_utf8_lossy(name).into_owned());
        }
    }

    /// `process.env.X`, `process.env?.X`, `process.env["X"]`,
    /// `process.env?.["X"]`, and `process.env[K]` with `var K="X"` in the module.
    fn direct(&mut self) {
        let t = self.text;
        for at in find_all(t, b"process.env") {
            // Code around it, not a word of a native string table, which
            // runs its strings together (`…pathprocess.env.BUN_ENVprocess.…`).
            if at == 0 || is_ident(t[at - 1]) {
                continue;
            }
            let i = at + b"process.env".len();
            let rest = &t[i..];
            if let Some(r) = strip(rest, b"?.[").or_else(|| strip(rest, b"[")) {
                if let Some((lit, tail)) = quoted(r) {
                    if tail.first() == Some(&b']') {
                        self.add(lit);
                    }
                } else if let Some((id, tail)) = ident(r) {
                    if tail.first() == Some(&b']') {
                        self.constant(id);
                    }
                }
            } else if let Some(r) = strip(rest, b"?.").or_else(|| strip(rest, b".")) {
                let (name, _) = ident(r).unwrap_or((b"", r));
                self.add(name);
            }
        }
    }

    /// `Bun.env.X` and a bare `env.X` (a local `env = process.env`), X in
    /// capitals.
    fn bare_env(&mut self) {
        let t = self.text;
        for at in find_all(t, b"env.") {
            let bun = at >= 4 && &t[at - 4..at] == b"Bun.";
            let bare = at > 0 && BEFORE_EXPR.contains(&t[at - 1]);
            if bun || bare {
                if let Some((name, _)) = ident(&t[at + 4..]) {
                    if capitals(name) {
                        self.add(name);
                    }
                }
            }
        }
    }

    /// `{X,Y:y,Z=1}=process.env` (and `Bun.env`).
    fn destructured(&mut self) {
        let t = self.text;
        for source in [&b"process.env"[..], b"Bun.env"] {
            for at in find_all(t, source) {
                let after = t.get(at + source.len()).copied().unwrap_or(b';');
                if is_ident(after) || matches!(after, b'.' | b'[' | b'?') {
                    continue;
                }
                let before = trim_end(&t[..at]);
                let Some(before) = before.strip_suffix(b"=") else {
                    continue;
                };
                let before = trim_end(before);
                let Some(inner_end) = before.len().checked_sub(1) else {
                    continue;
                };
                if before[inner_end] != b'}' {
                    continue;
                }
                let lo = inner_end.saturating_sub(1000);
                let Some(open) = before[lo..inner_end].iter().rposition(|&b| b == b'{') else {
                    continue;
                };
                let inner = &before[lo + open + 1..inner_end];
                if inner.contains(&b'}') {
                    continue;
                }
                for part in inner.split(|&b| b == b',') {
                    let part = trim_start(part);
                    if let Some((key, tail)) = ident(part) {
                        let tail = trim_start(tail);
                        if tail.is_empty() || tail[0] == b':' || tail[0] == b'=' {
                            self.add(key);
                        }
                    }
                }
            }
        }
    }

    /// The typed registry of recent releases: a module's
    /// `Wr(a,{X:()=>b,…})` whose bindings are mostly `b=H.bool()`,
    /// `H.str()`, `H.int(…)`… (property names, which minifying keeps).
    fn registry(&mut self) {
        let t = self.text;
        let mut typed: Vec<&[u8]> = Vec::new();
        for kind in REGISTRY_KINDS {
            for at in find_all(t, kind) {
                let object = ident_before(t, at);
                let eq = at - object.len();
                if object.is_empty() || eq == 0 || t[eq - 1] != b'=' {
                    continue;
                }
                let binding = ident_before(t, eq - 1);
                let start = eq - 1 - binding.len();
                if !binding.is_empty() && (start == 0 || !is_ident_or_dot(t[start - 1])) {
                    typed.push(binding);
                }
            }
        }
        if typed.is_empty() {
            return;
        }
        typed.sort_unstable();
        for at in find_all(t, b",{") {
            let target = ident_before(t, at);
            let call = at - target.len();
            if target.is_empty() || call == 0 || t[call - 1] != b'(' {
                continue;
            }
            let mut rest = &t[at + 2..];
            let mut keys = Vec::new();
            let mut hits = 0;
            while let Some((key, r)) = ident(rest) {
                let Some(r) = strip(r, b":()=>") else { break };
                let Some((value, r)) = ident(r) else { break };
                keys.push(key);
                hits += usize::from(typed.binary_search(&value).is_ok());
                match r.first() {
                    Some(b',') => rest = &r[1..],
                    Some(b'}') if r.get(1) == Some(&b')') => {
                        if hits * 2 > keys.len() {
                            keys.iter().for_each(|k| self.add(k));
                        }
                        break;
                    }
                    _ => break,
                }
            }
        }
    }

    /// The functions of this module that read the variable their first
    /// parameter names: `function f(e){…process.env[e]…}`, `f=(e)=>…`,
    /// and those that pass it on to one of them.
    fn helpers(&self) -> Vec<&'a [u8]> {
        let t = self.text;
        let mut defs: Vec<(&[u8], &[u8], &[u8])> = Vec::new();
        for at in find_all(t, b"function ") {
            let r = &t[at + b"function ".len()..];
            let Some((name, r)) = ident(r) else { continue };
            let Some(r) = strip(r, b"(") else { continue };
            let Some((param, r)) = ident(r) else { continue };
            if matches!(r.first(), Some(b',' | b')')) {
                defs.push((name, param, body(r, 300)));
            }
        }
        for at in find_all(t, b"=>") {
            let mut end = at;
            let parens = end > 0 && t[end - 1] == b')';
            if parens {
                end -= 1;
            }
            let param = ident_before(t, end);
            let mut start = end - param.len();
            if param.is_empty() {
                continue;
            }
            if parens {
                if start == 0 || t[start - 1] != b'(' {
                    continue;
                }
                start -= 1;
            }
            if start == 0 || t[start - 1] != b'=' {
                continue;
            }
            let name = ident_before(t, start - 1);
            let name_at = start - 1 - name.len();
            if name.is_empty() || (name_at > 0 && is_ident_or_dot(t[name_at - 1])) {
                continue;
            }
            defs.push((name, param, body(&t[at + 2..], 200)));
        }
        let mut helpers: Vec<&[u8]> = Vec::new();
        loop {
            let before = helpers.len();
            for &(name, param, body) in &defs {
                if !helpers.contains(&name) && reads_var(body, param, &helpers) {
                    helpers.push(name);
                }
            }
            if helpers.len() == before {
                return helpers;
            }
        }
    }

    /// `f("X")` and `f(K)` (`var K="X"`) for each helper `f`.
    fn helper_calls(&mut self, helpers: &[&[u8]]) {
        let t = self.text;
        for helper in helpers {
            let mut call = helper.to_vec();
            call.push(b'(');
            for at in find_all(t, &call) {
                if at > 0 && is_ident_or_dot(t[at - 1]) {
                    continue;
                }
                let r = &t[at + call.len()..];
                if let Some((lit, tail)) = quoted(r) {
                    if matches!(tail.first(), Some(b',' | b')')) {
                        self.add(lit);
                    }
                } else if let Some((id, tail)) = ident(r) {
                    if matches!(tail.first(), Some(b',' | b')')) {
                        self.constant(id);
                    }
                }
            }
        }
    }

    /// Literal lists whose items are read one by one:
    /// `for(let k of["X","Y"])…process.env[k]`, `["X","Y"].some((k)=>process.env[k])`,
    /// and the same over a list named in this module (`L=["X"]`, `L=new Set(["X"])`).
    fn loops(&mut self, helpers: &[&[u8]]) {
        let t = self.text;
        let mut lists: Vec<&[u8]> = Vec::new();
        for decl in [&b"for(let "[..], b"for(const ", b"for(var "] {
            for at in find_all(t, decl) {
                let mut r = &t[at + decl.len()..];
                let mut vars = Vec::new();
                if let Some(inner) = strip(r, b"[") {
                    let Some(close) = inner.iter().position(|&b| b == b']') else {
                        continue;
                    };
                    vars.extend(inner[..close].split(|&b| b == b',').map(trim_start));
                    r = &inner[close + 1..];
                } else if let Some((v, tail)) = ident(r) {
                    vars.push(v);
                    r = tail;
                }
                let Some(r) = strip(trim_start(r), b"of") else {
                    continue;
                };
                let r = trim_start(r);
                let (inline, named, tail) = match r.first() {
                    Some(b'[') => match bracketed(r) {
                        Some(n) => (&r[..n], &b""[..], &r[n..]),
                        None => continue,
                    },
                    _ => match ident(r) {
                        Some((id, tail)) => (&b""[..], id, tail),
                        None => continue,
                    },
                };
                let Some(tail) = strip(tail, b")") else {
                    continue;
                };
                let body = &tail[..tail.len().min(200)];
                if vars
                    .iter()
                    .any(|v| !v.is_empty() && reads_var(body, v, helpers))
                {
                    lists.push(if named.is_empty() {
                        inline
                    } else {
                        self.named_list(named)
                    });
                }
            }
        }
        for method in ARRAY_METHODS {
            for at in find_all(t, method) {
                let r = &t[at + method.len()..];
                let r = strip(r, b"(").unwrap_or(r);
                let Some((v, r)) = ident(r) else { continue };
                let r = strip(r, b")").unwrap_or(r);
                let Some(r) = strip(r, b"=>") else { continue };
                if !reads_var(&r[..r.len().min(120)], v, helpers) {
                    continue;
                }
                if at > 0 && t[at - 1] == b']' {
                    if let Some(open) = bracket_start(t, at - 1) {
                        lists.push(&t[open..at]);
                    }
                } else {
                    let id = ident_before(t, at);
                    let id_at = at - id.len();
                    if !id.is_empty() && (id_at == 0 || t[id_at - 1] != b'.') {
                        lists.push(self.named_list(id));
                    }
                }
            }
        }
        for list in lists {
            for lit in literals(list) {
                self.add(lit);
            }
        }
    }

    /// The text of the list `id` is declared as in this module
    /// (`var id=[…]`, `…,id=new Set([…])`; a one-letter name only after
    /// `var`), or nothing when it is declared so more than once.
    fn named_list(&self, id: &[u8]) -> &'a [u8] {
        let t = self.text;
        let mut found = None;
        for at in declarations(t, id, false) {
            let r = &t[at + id.len() + 1..];
            let r = strip(r, b"new Set(").unwrap_or(r);
            if let Some(n) = bracketed(r) {
                if found.is_some() {
                    return b"";
                }
                found = Some(&r[..n]);
            }
        }
        found.unwrap_or(b"")
    }

    /// The name `id` holds when this module declares it as a capitals
    /// literal, `var K="X"` or `…,K="X",…`, and as no other.
    fn constant(&mut self, id: &[u8]) {
        let t = self.text;
        let mut found: Option<&[u8]> = None;
        for at in declarations(t, id, true) {
            let Some((lit, tail)) = quoted(&t[at + id.len() + 1..]) else {
                continue;
            };
            if !capitals(lit) || !matches!(tail.first(), Some(b',' | b';')) {
                continue;
            }
            if found.is_some_and(|f| f != lit) {
                return;
            }
            found = Some(lit);
        }
        if let Some(lit) = found {
            self.add(lit);
        }
    }

    /// A name given to the environment, `e=process.env` (a default
    /// parameter's too: `function f(e=process.env){…e.X…}`), then `e.X` or
    /// `e["X"]` in the next 400 bytes, X in capitals.
    fn aliases(&mut self) {
        let t = self.text;
        for source in [&b"=process.env"[..], b"=Bun.env"] {
            for at in find_all(t, source) {
                let after = t.get(at + source.len()).copied().unwrap_or(b';');
                if is_ident(after) || matches!(after, b'.' | b'[' | b'?') {
                    continue;
                }
                let alias = ident_before(t, at);
                let alias_at = at - alias.len();
                if alias.is_empty() || (alias_at > 0 && is_ident_or_dot(t[alias_at - 1])) {
                    continue;
                }
                let from = at + source.len();
                let scope = &t[from..(from + 400).min(t.len())];
                let mut names = Vec::new();
                for use_at in find_all(scope, alias) {
                    if use_at > 0 && is_ident_or_dot(scope[use_at - 1]) {
                        continue;
                    }
                    let u = &t[from + use_at + alias.len()..];
                    let u = strip(u, b"?.").unwrap_or(u);
                    if let Some(u) = strip(u, b".") {
                        names.extend(ident(u).map(|(n, _)| n).filter(|n| capitals(n)));
                    } else if let Some(u) = strip(u, b"[") {
                        if let Some((lit, tail)) = quoted(u) {
                            if tail.first() == Some(&b']') && capitals(lit) {
                                names.push(lit);
                            }
                        }
                    }
                }
                names.into_iter().for_each(|n| self.add(n));
            }
        }
    }

    /// The built-in plugins' reads: `env.get("X")`, and the names their
    /// manifests declare, `env:{reads:["X",…]}`.
    fn plugins(&mut self) {
        let t = self.text;
        for at in find_all(t, b"env.get(") {
            if let Some((lit, tail)) = quoted(&t[at + b"env.get(".len()..]) {
                if tail.first() == Some(&b')') {
                    self.add(lit);
                }
            }
        }
        for at in find_all(t, b"env:{reads:") {
            let r = &t[at + b"env:{reads:".len()..];
            if let Some(n) = bracketed(r) {
                literals(&r[..n]).for_each(|lit| self.add(lit));
            }
        }
    }

    /// The AWS SDK's configuration loaders:
    /// `environmentVariableSelector:(e)=>e.X` / `e["X"]` / `e[K]`.
    fn selectors(&mut self) {
        let t = self.text;
        for at in find_all(t, b"environmentVariableSelector:") {
            let r = &t[at + b"environmentVariableSelector:".len()..];
            let r = strip(r, b"(").unwrap_or(r);
            let Some((p, r)) = ident(r) else { continue };
            let r = strip(r, b")").unwrap_or(r);
            let Some(r) = strip(r, b"=>") else { continue };
            let mut body = &r[..r.len().min(200)];
            if let Some(end) = find(body, b"configFileSelector", 0) {
                body = &body[..end];
            }
            let mut reads: Vec<(&[u8], bool)> = Vec::new();
            for use_at in find_all(body, p) {
                if use_at > 0 && is_ident_or_dot(body[use_at - 1]) {
                    continue;
                }
                let u = &body[use_at + p.len()..];
                if let Some(u) = strip(u, b".") {
                    if let Some((name, _)) = ident(u) {
                        if capitals(name) {
                            reads.push((name, false));
                        }
                    }
                } else if let Some(u) = strip(u, b"[") {
                    if let Some((lit, tail)) = quoted(u) {
                        if tail.first() == Some(&b']') {
                            reads.push((lit, false));
                        }
                    } else if let Some((id, tail)) = ident(u) {
                        if tail.first() == Some(&b']') {
                            reads.push((id, true));
                        }
                    }
                }
            }
            for (name, via_constant) in reads {
                if via_constant {
                    self.constant(name);
                } else {
                    self.add(name);
                }
            }
        }
    }

    /// OpenTelemetry's `getStringFromEnv("X")` and its siblings.
    fn otel(&mut self) {
        let t = self.text;
        for at in find_all(t, b"FromEnv") {
            let before = &t[..at];
            let known = [
                &b"getString"[..],
                b"getNumber",
                b"getBoolean",
                b"getStringList",
            ];
            if !known.iter().any(|k| before.ends_with(k)) {
                continue;
            }
            let r = &t[at + b"FromEnv".len()..];
            let r = strip(r, b")").unwrap_or(r);
            let Some(r) = strip(r, b"(") else { continue };
            if let Some((lit, _)) = quoted(r) {
                self.add(lit);
            }
        }
    }
}

/// Where `id=` starts a declaration in `t`: after `var `, or after a comma
/// (for a one-letter `id`, only when `short_after_comma`: a list's
/// one-letter name is too often a local's).
fn declarations<'t>(
    t: &'t [u8],
    id: &'t [u8],
    short_after_comma: bool,
) -> impl Iterator<Item = usize> + 't {
    let mut pattern = id.to_vec();
    pattern.push(b'=');
    let hits: Vec<usize> = find_all(t, &pattern).collect();
    hits.into_iter().filter(move |&at| {
        let after = t.get(at + id.len() + 1).copied();
        let var = at >= 4 && &t[at - 4..at] == b"var ";
        let comma = (id.len() > 1 || short_after_comma) && at >= 1 && t[at - 1] == b',';
        !id.is_empty() && (var || comma) && !matches!(after, Some(b'=' | b'>'))
    })
}

/// The pairs of `export{a,b as c}` (local, exported) or `import{a,b as c}`
/// (imported, local): `(a, a)`, `(b, c)`.
fn bindings<'t>(t: &'t [u8], keyword: &'t [u8]) -> impl Iterator<Item = (&'t [u8], &'t [u8])> {
    find_all(t, keyword).flat_map(move |at| {
        let list = &t[at + keyword.len()..];
        let end = list
            .iter()
            .take(20_000)
            .position(|&b| b == b'}')
            .unwrap_or(0);
        list[..end].split(|&b| b == b',').filter_map(|item| {
            let item = trim_end(trim_start(item));
            let (first, rest) = ident(item)?;
            let second = match strip(rest, b" as ") {
                Some(r) => ident(r)?.0,
                None => first,
            };
            Some((first, second))
        })
    })
}

/// Whether `body` reads `process.env[var]` or passes `var` to a helper.
fn reads_var(body: &[u8], var: &[u8], helpers: &[&[u8]]) -> bool {
    for prefix in [&b"process.env["[..], b"process.env?.["] {
        let mut p = prefix.to_vec();
        p.extend_from_slice(var);
        p.push(b']');
        if find(body, &p, 0).is_some() {
            return true;
        }
    }
    helpers.iter().any(|h| {
        let mut p = h.to_vec();
        p.push(b'(');
        p.extend_from_slice(var);
        let found = find_all(body, &p).any(|at| {
            (at == 0 || !is_ident_or_dot(body[at - 1]))
                && matches!(body.get(at + p.len()), Some(b',' | b')'))
        });
        found
    })
}

/// A function body's first `max` bytes, cut where the next function starts.
fn body(r: &[u8], max: usize) -> &[u8] {
    let r = &r[..r.len().min(max)];
    match find(r, b"function ", 0) {
        Some(end) => &r[..end],
        None => r,
    }
}

/// The string literals of a list's text that are whole names.
fn literals(list: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < list.len() {
            if matches!(list[i], b'"' | b'\'' | b'`') {
                if let Some((lit, tail)) = quoted(&list[i..]) {
                    i = list.len() - tail.len();
                    if is_name(lit) {
                        return Some(lit);
                    }
                    continue;
                }
            }
            i += 1;
        }
        None
    })
}

/// The length of the bracketed text `r` starts with (`[` … its `]`),
/// strings skipped; none past 20,000 bytes.
fn bracketed(r: &[u8]) -> Option<usize> {
    if r.first() != Some(&b'[') {
        return None;
    }
    let mut depth = 0usize;
    let mut i = 0;
    while i < r.len().min(20_000) {
        match r[i] {
            b'"' | b'\'' | b'`' => {
                let close = r[i + 1..].iter().position(|&b| b == r[i])?;
                i += close + 1;
            }
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Where the `[` is that the `]` at `close` ends (no strings with brackets
/// inside, as in lists of names); none past 20,000 bytes.
fn bracket_start(t: &[u8], close: usize) -> Option<usize> {
    let mut depth = 0usize;
    let lo = close.saturating_sub(20_000);
    for i in (lo..=close).rev() {
        match t[i] {
            b']' => depth += 1,
            b'[' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// A quoted literal at the start of `r` (`"…"`, `'…'` or `` `…` `` with no
/// escapes) and what follows it.
fn quoted(r: &[u8]) -> Option<(&[u8], &[u8])> {
    let q = *r.first()?;
    if !matches!(q, b'"' | b'\'' | b'`') {
        return None;
    }
    let len = r[1..]
        .iter()
        .take(200)
        .position(|&b| b == q || b == b'\\')?;
    (r[1 + len] == q).then(|| (&r[1..1 + len], &r[2 + len..]))
}

/// The identifier at the start of `r`, and what follows it.
fn ident(r: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = r.iter().take_while(|&&b| is_ident(b)).count();
    (len > 0 && !r[0].is_ascii_digit()).then(|| r.split_at(len))
}

/// The identifier that ends at `end`.
fn ident_before(t: &[u8], end: usize) -> &[u8] {
    let len = t[..end].iter().rev().take_while(|&&b| is_ident(b)).count();
    &t[end - len..end]
}

fn strip<'r>(r: &'r [u8], prefix: &[u8]) -> Option<&'r [u8]> {
    r.strip_prefix(prefix)
}

fn trim_start(r: &[u8]) -> &[u8] {
    let n = r.iter().take_while(|b| b.is_ascii_whitespace()).count();
    &r[n..]
}

fn trim_end(r: &[u8]) -> &[u8] {
    let n = r
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_whitespace())
        .count();
    &r[..r.len() - n]
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

fn is_ident_or_dot(b: u8) -> bool {
    is_ident(b) || b == b'.'
}

/// An environment variable's name as the CLI spells them: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_name(s: &[u8]) -> bool {
    matches!(s.first(), Some(b) if b.is_ascii_alphabetic() || *b == b'_')
        && s.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A name in capitals, digits and underscores.
fn capitals(s: &[u8]) -> bool {
    s.iter()
        .all(|&b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// The first `needle` in `hay` at or after `from`.
fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let mut i = from;
    while i + needle.len() <= hay.len() {
        let at = i + hay[i..hay.len() - rest.len()]
            .iter()
            .position(|&b| b == first)?;
        if &hay[at + 1..at + needle.len()] == rest {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

/// Every `needle` in `hay`, left to right (overlaps included).
fn find_all<'h>(hay: &'h [u8], needle: &'h [u8]) -> impl Iterator<Item = usize> + 'h {
    let mut from = 0;
    std::iter::from_fn(move || {
        let at = find(hay, needle, from)?;
        from = at + 1;
        Some(at)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &[u8]) -> Vec<String> {
        names_read_by(text).into_iter().collect()
    }

    #[test]
    fn the_list_is_sorted_without_duplicates() {
        for pair in VARS.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{} before {}", pair[0].0, pair[1].0);
        }
        for (name, _) in VARS {
            assert!(
                is_name(name.as_bytes()),
                "{name:?} is not a variable's name"
            );
        }
    }

    #[test]
    fn spot_checks() {
        assert_eq!(class_of("ANTHROPIC_API_KEY"), Some(Credential));
        assert_eq!(class_of("ANTHROPIC_BASE_URL"), Some(Credential));
        assert_eq!(class_of("CLAUDE_CODE_USE_BEDROCK"), Some(Credential));
        assert_eq!(class_of("ANTHROPIC_MODEL"), Some(Shaping));
        assert_eq!(class_of("CLAUDE_CODE_DISABLE_AUTO_MEMORY"), Some(Shaping));
        assert_eq!(class_of("MAX_THINKING_TOKENS"), Some(Shaping));
        assert_eq!(class_of("DISABLE_TELEMETRY"), Some(Inert));
        assert_eq!(class_of("HTTP_PROXY"), Some(Inert));
        assert_eq!(class_of("HOME"), Some(Inert));
        assert_eq!(class_of("CLAUDE_SHIM_NOT_READ_BY_CLAUDE"), None);
        assert_eq!(class_of(""), None);
    }

    #[test]
    fn direct_reads() {
        let js = b";a=process.env.AAA_X;b=process.env?.BBB;c=process.env[\"CCC\"];\
            d=process.env['DDD'];e=globalThis.process.env?.[`EEE`];f=process.env[g];";
        assert_eq!(names(js), ["AAA_X", "BBB", "CCC", "DDD", "EEE"]);
    }

    #[test]
    fn an_index_declared_once_as_a_literal() {
        let js = b"var K=\"KKK\",L=1;function f(){return process.env[K]}";
        assert_eq!(names(js), ["KKK"]);
        let twice = b"var Q=\"ONE\";function g(){var Q=\"TWO\";return process.env[Q]}";
        assert!(names(twice).is_empty());
    }

    #[test]
    fn the_typed_registry() {
        let js = b"var a={};Wr(a,{ANTHROPIC_API_KEY:()=>b,MAX_X:()=>c});\
            var b=H.str(),c=H.int({min:1});var m={};Wr(m,{DEFAULT_MODE:()=>q});function q(){}";
        assert_eq!(names(js), ["ANTHROPIC_API_KEY", "MAX_X"]);
    }

    #[test]
    fn bun_env_bare_env_aliases_and_destructuring() {
        let js = b";if(Bun.env.FORCE_COLOR)x=env.NO_COLOR;y=opts.env.NOT_THIS;\
            function f(e=process.env){return e.BASH_MAX_TIMEOUT_MS}\
            var{WASM_CWD=1,CHOKIDAR_USEPOLLING:u}=process.env;";
        assert_eq!(
            names(js),
            [
                "BASH_MAX_TIMEOUT_MS",
                "CHOKIDAR_USEPOLLING",
                "FORCE_COLOR",
                "NO_COLOR",
                "WASM_CWD"
            ]
        );
    }

    #[test]
    fn helpers_called_with_a_literal() {
        let js = b"function g(e){return process.env[e]?.trim()}var S=(e)=>g(e);\
            S(\"ANTHROPIC_SCOPE\");g(\"KUBECONFIG\");x.g(\"NOT_A_READ\");h(\"NOT_EITHER\");";
        assert_eq!(names(js), ["ANTHROPIC_SCOPE", "KUBECONFIG"]);
    }

    #[test]
    fn helpers_another_module_imports() {
        let js = b"var UT=(e)=>{return globalThis.process.env?.[e]};export{UT as r};\0\
            import{r as q}from\"./chunk.js\";q(\"ANTHROPIC_WORK_ID\");r(\"NOT_IMPORTED\");";
        assert_eq!(names(js), ["ANTHROPIC_WORK_ID"]);
    }

    #[test]
    fn lists_read_item_by_item() {
        let js = b"for(let k of[\"GIT_SSL_CERT\",\"GIT_SSL_KEY\"])if(process.env[k])n++;\
            [\"A_ONE\"].some((k)=>process.env[k]);var L=[\"B_TWO\",\"not-a-name\"];\
            L.map((k)=>process.env[k]);var M=[\"NOT_READ\"];M.map((k)=>k+1);";
        assert_eq!(names(js), ["A_ONE", "B_TWO", "GIT_SSL_CERT", "GIT_SSL_KEY"]);
    }

    #[test]
    fn plugins_opentelemetry_and_the_aws_sdk() {
        let js =
            b"await o.env.get(\"GITLAB_CI\");x={env:{reads:[\"CLAUDE_JOB_DIR\",\"USER_TYPE\"]}};\
            (0,Rp.getNumberFromEnv)(\"OTEL_BSP_MAX_QUEUE_SIZE\");var ur=\"AWS_MAX_ATTEMPTS\";\
            y={environmentVariableSelector:(e)=>e[ur],configFileSelector:(e)=>e[\"NOT_ENV\"]};\
            z={environmentVariableSelector:(n)=>n.AWS_REGION};";
        assert_eq!(
            names(js),
            [
                "AWS_MAX_ATTEMPTS",
                "AWS_REGION",
                "CLAUDE_JOB_DIR",
                "GITLAB_CI",
                "OTEL_BSP_MAX_QUEUE_SIZE",
                "USER_TYPE"
            ]
        );
    }

    #[test]
    fn no_name_across_machine_code_or_a_string_table() {
        let bytes = b"\x00\x08process.env.BUN_ENVprocess.browser\x00 run together: \
            pathprocess.env.NODE_ENVInternal\x01\x02env.I\x83\xc4";
        assert!(names(bytes).is_empty());
        assert!(names(b"").is_empty());
    }
}
