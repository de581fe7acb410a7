//! The configuration: one TOML file (every table `deny_unknown_fields`), command
//! line flags laid over it, and the validated [`Settings`] the server runs with.
//! Every error names where it is: `FILE:LINE:COL: message`, or the flag.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bulwark_auth::ChaosIdentity;
use bulwark_guard::{Acl, RrlConfig};
use bulwark_proto::Name;
use serde::Deserialize;
use toml::Spanned;

use crate::cli::{LogFormat, ServeArgs};
use crate::defences::{
    self, AclSection, CookieSettings, CookiesSection, Locate, RrlSection, TcpLimits, ZoneAcls,
};

/// DNS flag day 2020: a payload that avoids fragmentation on common paths.
pub const DEFAULT_MAX_UDP_PAYLOAD: u16 = bulwark_auth::DEFAULT_MAX_UDP_PAYLOAD;
/// RFC 6891 §6.2.5: values below 512 are treated as 512.
const MIN_UDP_PAYLOAD: u16 = 512;
/// Responses each UDP worker remembers by default: room for the busy names of
/// most zones at about 100 octets of slot each before any is filled.
pub const DEFAULT_RESPONSE_CACHE: usize = 16384;
/// A bound so a typo cannot ask for gigabytes per worker.
const MAX_RESPONSE_CACHE: usize = 1 << 22;
pub const DEFAULT_TCP_IDLE_TIMEOUT_SECS: u64 = 10;
pub const DEFAULT_TCP_MAX_CONNECTIONS: usize = 1000;
pub const DEFAULT_LISTEN: [&str; 2] = ["127.0.0.1:53", "[::1]:53"];
pub const DEFAULT_LOG_LEVEL: &str = "info";

/// The file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    #[serde(default)]
    pub server: ServerSection,
    #[serde(default)]
    pub control: ControlSection,
    #[serde(default)]
    pub log: LogSection,
    #[serde(default, rename = "zone")]
    pub zones: Vec<ZoneSection>,
    /// Addresses with their own ACL, served beside `[server] listen`.
    #[serde(default, rename = "listener")]
    pub listeners: Vec<ListenerSection>,
    /// Named ACLs, referred to by `[server] acl` and `[[zone]] acl`.
    #[serde(default)]
    pub acl: BTreeMap<String, AclSection>,
    #[serde(default)]
    pub rrl: RrlSection,
    #[serde(default)]
    pub cookies: CookiesSection,
    #[serde(default)]
    pub statistics: crate::stats::StatisticsSection,
    #[serde(default)]
    pub prometheus: crate::metrics_http::PrometheusSection,
    #[serde(default)]
    pub dnstap: crate::tap::DnstapSection,
    /// Named signing policies, referred to by `[[zone]] dnssec_policy`.
    #[serde(default)]
    pub dnssec_policy: BTreeMap<String, crate::policy::PolicySection>,
    /// The HSM for policies with `keystore = "pkcs11"`.
    pub pkcs11: Option<crate::keystore::Pkcs11Section>,
    /// TSIG keys, referred to by remotes and ACLs.
    #[serde(default)]
    pub tsig_key: BTreeMap<String, crate::replication::settings::TsigKeySection>,
    /// Other servers: primaries to pull from, secondaries to notify.
    #[serde(default)]
    pub remote: BTreeMap<String, crate::replication::settings::RemoteSection>,
    /// Settings of the zones a consumed catalog brings.
    #[serde(default)]
    pub template: BTreeMap<String, crate::replication::settings::TemplateSection>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    pub listen: Option<Vec<Spanned<String>>>,
    pub threads: Option<Spanned<usize>>,
    pub max_udp_payload: Option<Spanned<u16>>,
    /// Responses each UDP worker remembers; 0 turns the cache off.
    pub response_cache: Option<Spanned<usize>>,
    pub tcp_idle_timeout: Option<Spanned<u64>>,
    pub tcp_max_connections: Option<Spanned<usize>>,
    pub tcp_max_connections_per_client: Option<usize>,
    pub tcp_max_queries_per_connection: Option<u32>,
    pub tcp_message_timeout: Option<u64>,
    /// The ACL every listener applies before parsing a query.
    pub acl: Option<Spanned<String>>,
    /// RFC 5001 NSID, as text or as hex.
    pub nsid: Option<Spanned<String>>,
    pub nsid_hex: Option<Spanned<String>>,
    /// CH TXT `id.server.` (RFC 4892).
    pub identity: Option<String>,
    /// CH TXT `hostname.bind.`.
    pub hostname: Option<String>,
    /// CH TXT `version.bind.`.
    pub version: Option<String>,
    /// Started as root: the user (and group) to switch to once bound.
    pub user: Option<Spanned<String>>,
    pub group: Option<Spanned<String>>,
    /// Where signed zones' keys live (default `keys` beside the config file).
    pub key_directory: Option<String>,
    /// The database of journals, secondary zones and timers (default
    /// `bulwark.db` beside the config file).
    pub storage: Option<String>,
}

/// `[[listener]]`: one address and the ACL its queries go through.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListenerSection {
    pub address: Spanned<String>,
    pub acl: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlSection {
    pub socket: Option<String>,
    /// Permissions of the socket file, octal (`"0600"`).
    pub mode: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSection {
    pub format: Option<LogFormat>,
    pub level: Option<Spanned<String>>,
    /// Levels per module, e.g. `bulwark_net = "debug"`, laid over `level`.
    pub modules: Option<BTreeMap<String, Spanned<String>>>,
    /// One log line per query (debugging; dnstap is the fast way).
    pub queries: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneSection {
    pub origin: Spanned<String>,
    /// The master file: required for a primary, optional for a secondary
    /// (its copy is written there), absent for a generated catalog.
    pub file: Option<Spanned<String>>,
    /// Who may query this zone.
    pub acl: Option<Spanned<String>>,
    /// Sign the zone with this `[dnssec_policy.NAME]` (`default` needs no table).
    pub dnssec_policy: Option<Spanned<String>>,
    /// This zone's key directory, instead of `[server] key_directory`.
    pub key_directory: Option<String>,
    /// The parent zone's servers, asked for the DS during a KSK rollover.
    pub parent: Option<Vec<Spanned<String>>>,
    /// Primaries to pull the zone from: makes it a secondary.
    pub primaries: Option<Vec<Spanned<String>>>,
    /// Remotes told of each new version (NOTIFY).
    pub notify: Option<Vec<Spanned<String>>>,
    pub notify_ns: Option<bool>,
    pub allow_transfer: Option<Vec<Spanned<String>>>,
    pub allow_notify: Option<Vec<Spanned<String>>>,
    pub allow_update: Option<Vec<Spanned<String>>>,
    pub serial_policy: Option<Spanned<String>>,
    pub journal_max_size: Option<Spanned<u64>>,
    pub zonefile_sync: Option<Spanned<toml::Value>>,
    /// `generate` (bulwark writes this catalog zone) or `consume` (its
    /// members become secondary zones), RFC 9432.
    pub catalog_role: Option<Spanned<String>>,
    /// For `catalog_role = "consume"`: the `[template.NAME]` of member zones.
    pub catalog_template: Option<Spanned<String>>,
    /// List this zone in the generated catalog zone named here.
    pub catalog: Option<Spanned<String>>,
    /// RFC 9432 §4.4.2: the member's group property.
    pub catalog_group: Option<Spanned<String>>,
}

impl ZoneSection {
    fn replication_fields(&self) -> crate::replication::settings::ReplicationFields {
        crate::replication::settings::ReplicationFields {
            primaries: self.primaries.clone(),
            notify: self.notify.clone(),
            notify_ns: self.notify_ns,
            allow_transfer: self.allow_transfer.clone(),
            allow_notify: self.allow_notify.clone(),
            allow_update: self.allow_update.clone(),
            serial_policy: self.serial_policy.clone(),
            journal_max_size: self.journal_max_size.clone(),
            zonefile_sync: self.zonefile_sync.clone(),
        }
    }
}

/// A zone to serve.
#[derive(Debug, Clone)]
pub struct ZoneSpec {
    pub origin: Name,
    /// The master file; `None` for a secondary kept only in the store, or a
    /// generated catalog.
    pub path: Option<PathBuf>,
    /// Set when bulwark signs the zone itself.
    pub signing: Option<ZoneSigning>,
    pub replication: crate::replication::settings::ZoneReplication,
}

impl ZoneSpec {
    /// A primary zone read from `path`, with no replication: the flags' and
    /// the demo's kind.
    pub fn from_file(origin: Name, path: PathBuf) -> ZoneSpec {
        ZoneSpec {
            origin,
            path: Some(path),
            signing: None,
            replication: crate::replication::settings::ZoneReplication::default(),
        }
    }

    /// The file for messages, or what stands in for it.
    pub fn file_label(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None if self.replication.is_secondary() => "(secondary, in the store)".to_string(),
            None => "(generated)".to_string(),
        }
    }
}

/// How bulwark signs a zone: its policy and where its keys are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneSigning {
    pub policy: Arc<crate::policy::DnssecPolicy>,
    pub key_directory: PathBuf,
    /// Asked whether they serve a new KSK's DS (empty: `bulwark keys ds-seen`).
    pub parents: Vec<SocketAddr>,
    /// The `[pkcs11]` token, for keys kept in it.
    pub pkcs11: Option<Arc<crate::keystore::Pkcs11Settings>>,
}

/// What the server runs with, validated.
#[derive(Debug, Clone)]
pub struct Settings {
    pub config_file: Option<PathBuf>,
    pub listen: Vec<SocketAddr>,
    /// Whether `listen` came from the user (else the defaults).
    pub listen_given: bool,
    pub threads: usize,
    pub max_udp_payload: u16,
    /// Slots of each UDP worker's response cache (0: off).
    pub response_cache: usize,
    pub tcp_idle_timeout: Duration,
    pub tcp_max_connections: usize,
    pub chaos: ChaosIdentity,
    pub control_socket: Option<PathBuf>,
    pub log_format: LogFormat,
    pub log_level: String,
    pub zones: Vec<ZoneSpec>,
    /// Applied on every listener before a query is parsed; `None` allows all.
    pub listener_acl: Option<Arc<Acl>>,
    /// `[[listener]]` addresses with their own ACL, overriding `listener_acl`.
    pub listener_acls: Vec<(SocketAddr, Arc<Acl>)>,
    pub zone_acls: ZoneAcls,
    pub rrl: RrlConfig,
    pub cookies: CookieSettings,
    pub nsid: Option<Vec<u8>>,
    pub tcp_limits: TcpLimits,
    /// Permissions of the control socket file.
    pub control_mode: u32,
    pub statistics: crate::stats::StatsSettings,
    pub prometheus: Option<crate::metrics_http::PrometheusSettings>,
    pub dnstap: Option<crate::tap::DnstapSettings>,
    pub run_as: Option<crate::privileges::RunAs>,
    pub query_log: bool,
    /// Every TSIG key, for checking signed requests.
    pub keyring: Arc<bulwark_xfr::tsig::KeyRing>,
    /// The database file; `None` runs without one (no journal, no
    /// persistence of secondary zones, no dynamic updates).
    pub storage: Option<PathBuf>,
}

/// Every problem found, one per line, each saying where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .problems.join("\n"))]
pub struct ConfigError {
    pub problems: Vec<String>,
}

impl ConfigError {
    fn one(p: String) -> ConfigError {
        ConfigError { problems: vec![p] }
    }
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count().saturating_add(1);
    let line_start = before.rfind('\n').map_or(0, |i| i.saturating_add(1));
    let col = before
        .get(line_start..)
        .map_or(0, |s| s.chars().count())
        .saturating_add(1);
    (line, col)
}

/// Where things are in one file, for messages.
struct Source<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    fn at(&self, span: Range<usize>, message: impl std::fmt::Display) -> String {
        let (line, col) = line_col(self.text, span.start);
        format!("{}:{line}:{col}: {message}", self.file.display())
    }

    /// A setting's value if given and `valid`, else `default`; a given value
    /// that is not valid adds `problem` at its place.
    fn setting<T: Copy>(
        &self,
        value: Option<&Spanned<T>>,
        default: T,
        valid: impl Fn(T) -> bool,
        problem: impl std::fmt::Display,
        problems: &mut Vec<String>,
    ) -> T {
        match value {
            Some(v) if !valid(*v.get_ref()) => {
                problems.push(self.at(v.span(), problem));
                default
            }
            Some(v) => *v.get_ref(),
            None => default,
        }
    }
}

impl Locate for Source<'_> {
    fn at(&self, span: Range<usize>, message: String) -> String {
        Source::at(self, span, message)
    }
}

/// Parses the TOML text of `file`.
pub fn parse_file(file: &Path, text: &str) -> Result<ConfigFile, ConfigError> {
    toml::from_str::<ConfigFile>(text).map_err(|e| {
        let message = e.message().trim_end().to_string();
        match e.span() {
            Some(span) => ConfigError::one(Source { file, text }.at(span, message)),
            None => ConfigError::one(format!("{}: {message}", file.display())),
        }
    })
}

/// Only the `[pkcs11]` table of the configuration file `path`, for the
/// commands that use the token without serving.
pub fn load_pkcs11(path: &Path) -> Result<Option<crate::keystore::Pkcs11Settings>, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::one(format!("{}: cannot read: {e}", path.display())))?;
    let parsed = parse_file(path, &text)?;
    let source = Source {
        file: path,
        text: &text,
    };
    let base_dir = path.parent().unwrap_or(Path::new(""));
    let mut problems = Vec::new();
    let settings = crate::keystore::Pkcs11Settings::resolve(
        parsed.pkcs11.as_ref(),
        base_dir,
        &path.display().to_string(),
        &source,
        &mut problems,
    );
    if !problems.is_empty() {
        return Err(ConfigError { problems });
    }
    if settings.is_none() {
        return Err(ConfigError::one(format!(
            "{}: no [pkcs11] table",
            path.display()
        )));
    }
    Ok(settings)
}

/// Reads `args.config` (if any), lays the flags over it and validates the result.
pub fn load(args: &ServeArgs) -> Result<Settings, ConfigError> {
    let (file, text, parsed) = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| ConfigError::one(format!("{}: cannot read: {e}", path.display())))?;
            let parsed = parse_file(path, &text)?;
            (Some(path.clone()), text, parsed)
        }
        None => (None, String::new(), ConfigFile::default()),
    };
    let no_file = PathBuf::from("<command line>");
    let source = Source {
        file: file.as_deref().unwrap_or(&no_file),
        text: &text,
    };
    let base_dir = file
        .as_deref()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    resolve(parsed, args, &source, file.clone(), &base_dir)
}

fn resolve(
    f: ConfigFile,
    args: &ServeArgs,
    src: &Source<'_>,
    config_file: Option<PathBuf>,
    base_dir: &Path,
) -> Result<Settings, ConfigError> {
    let mut problems = Vec::new();

    // Listen addresses: the flags replace the file's list.
    let mut listen = Vec::new();
    let mut listen_given = true;
    if !args.listen.is_empty() {
        listen.extend(args.listen.iter().copied());
    } else if let Some(items) = &f.server.listen {
        for item in items {
            match item.get_ref().parse::<SocketAddr>() {
                Ok(a) => listen.push(a),
                Err(_) => problems.push(src.at(
                    item.span(),
                    format!(
                        "listen: `{}` is not an address with a port, like 127.0.0.1:53 or [::1]:53",
                        item.get_ref()
                    ),
                )),
            }
        }
        if items.is_empty() && f.listeners.is_empty() {
            problems.push(format!("{}: listen: the list is empty", src.file.display()));
        }
    } else {
        listen_given = false;
        listen.extend(
            DEFAULT_LISTEN
                .iter()
                .filter_map(|a| a.parse::<SocketAddr>().ok()),
        );
    }
    let mut seen_addrs = HashMap::new();
    for a in &listen {
        if seen_addrs.insert(*a, ()).is_some() {
            problems.push(format!("listen: {a} is given twice"));
        }
    }

    let threads = match (args.threads, &f.server.threads) {
        (Some(n), _) => n,
        (None, Some(n)) => *n.get_ref(),
        (None, None) => 0,
    };
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    };

    let max_udp_payload = src.setting(
        f.server.max_udp_payload.as_ref(),
        DEFAULT_MAX_UDP_PAYLOAD,
        |v| v >= MIN_UDP_PAYLOAD,
        format!("max_udp_payload: must be at least {MIN_UDP_PAYLOAD}"),
        &mut problems,
    );
    let response_cache = src.setting(
        f.server.response_cache.as_ref(),
        DEFAULT_RESPONSE_CACHE,
        |v| v <= MAX_RESPONSE_CACHE,
        format!("response_cache: at most {MAX_RESPONSE_CACHE} responses per worker"),
        &mut problems,
    );
    let tcp_idle_timeout = src.setting(
        f.server.tcp_idle_timeout.as_ref(),
        DEFAULT_TCP_IDLE_TIMEOUT_SECS,
        |v| v > 0,
        "tcp_idle_timeout: must be at least 1 second",
        &mut problems,
    );
    let tcp_max_connections = src.setting(
        f.server.tcp_max_connections.as_ref(),
        DEFAULT_TCP_MAX_CONNECTIONS,
        |v| v > 0,
        "tcp_max_connections: must be at least 1",
        &mut problems,
    );

    let log_format = args.log_format.or(f.log.format).unwrap_or_default();
    let log_level = match (&args.log_level, &f.log.level) {
        (Some(l), _) => {
            if let Err(e) = tracing_subscriber::EnvFilter::try_new(l) {
                problems.push(format!("--log-level: `{l}`: {e}"));
            }
            l.clone()
        }
        (None, Some(l)) => {
            if let Err(e) = tracing_subscriber::EnvFilter::try_new(l.get_ref()) {
                problems.push(src.at(l.span(), format!("level: `{}`: {e}", l.get_ref())));
            }
            l.get_ref().clone()
        }
        (None, None) => DEFAULT_LOG_LEVEL.to_string(),
    };

    let log_level =
        crate::logging::with_modules(log_level, f.log.modules.as_ref(), src, &mut problems);
    let control_mode =
        crate::control_mode::resolve_mode(f.control.mode.as_ref(), src, &mut problems);
    let statistics = crate::stats::StatsSettings::resolve(&f.statistics, src, &mut problems);
    let prometheus =
        crate::metrics_http::PrometheusSettings::resolve(&f.prometheus, src, &mut problems);
    let dnstap = crate::tap::DnstapSettings::resolve(
        &f.dnstap,
        args.dnstap.as_deref(),
        base_dir,
        src,
        &mut problems,
    );
    let run_as = crate::privileges::RunAs::resolve(
        f.server.user.as_ref(),
        f.server.group.as_ref(),
        src,
        &mut problems,
    );

    let control_socket = args
        .control_socket
        .clone()
        .or_else(|| f.control.socket.as_ref().map(|s| base_dir.join(s)));

    let tcp_limits = tcp_limits(&f.server);
    let acls = defences::build_acls(&f.acl, src, &mut problems);
    let listener_acl = f
        .server
        .acl
        .as_ref()
        .and_then(|r| defences::find_acl(r, &acls, src, &mut problems));
    // `[[listener]]` addresses join `listen` (replacing the defaults); the
    // `--listen` flags replace both.
    let mut listener_acls = Vec::new();
    if args.listen.is_empty() {
        for l in &f.listeners {
            let Ok(a) = l.address.get_ref().parse::<SocketAddr>() else {
                problems.push(src.at(
                    l.address.span(),
                    format!(
                        "address: `{}` is not an address with a port, like 127.0.0.1:53 or [::1]:53",
                        l.address.get_ref()
                    ),
                ));
                continue;
            };
            if !listen_given {
                listen.clear();
                listen_given = true;
            }
            if listen.contains(&a) {
                problems.push(src.at(l.address.span(), format!("address: {a} is given twice")));
                continue;
            }
            listen.push(a);
            if let Some(acl) = l
                .acl
                .as_ref()
                .and_then(|r| defences::find_acl(r, &acls, src, &mut problems))
            {
                listener_acls.push((a, acl));
            }
        }
    }
    let registry = crate::replication::settings::build_registry(
        &f.tsig_key,
        &f.remote,
        &f.acl,
        &acls,
        base_dir,
        src,
        &mut problems,
    );
    let rrl = defences::build_rrl(&f.rrl, src, &mut problems);
    let cookies = defences::build_cookies(&f.cookies, src, &mut problems);
    let nsid = defences::build_nsid(
        f.server.nsid.as_ref(),
        f.server.nsid_hex.as_ref(),
        src,
        &mut problems,
    );
    let mut zone_acls = ZoneAcls::default();
    let policies = crate::policy::build_policies(&f.dnssec_policy, src, &mut problems);
    let key_directory = base_dir.join(f.server.key_directory.as_deref().unwrap_or("keys"));
    let pkcs11 = crate::keystore::Pkcs11Settings::resolve(
        f.pkcs11.as_ref(),
        base_dir,
        &src.file.display().to_string(),
        src,
        &mut problems,
    )
    .map(Arc::new);

    let templates = crate::replication::zone_config::build_templates(
        src.file,
        &f.template,
        &registry,
        &policies,
        &key_directory,
        pkcs11.as_ref(),
        base_dir,
        src,
        &mut problems,
    );
    // Generated catalogs must exist for the zones that name them.
    crate::replication::zone_config::check_catalog_members(&f.zones, src, &mut problems);

    // Zones: the file's, then the flags'.
    let mut zones: Vec<ZoneSpec> = Vec::new();
    let mut origins: HashMap<Name, String> = HashMap::new();
    for z in &f.zones {
        let where_ = src.at(z.origin.span(), "");
        let where_ = where_.trim_end_matches(": ").to_string();
        match parse_origin(z.origin.get_ref()) {
            Ok(origin) => {
                if let Some(first) = origins.get(&origin) {
                    problems.push(src.at(
                        z.origin.span(),
                        format!("zone {origin} is already defined at {first}"),
                    ));
                } else {
                    origins.insert(origin.clone(), where_);
                    let path = z.file.as_ref().map(|f| base_dir.join(f.get_ref()));
                    if let Some(f) = z.file.as_ref().filter(|f| f.get_ref().is_empty()) {
                        problems.push(src.at(f.span(), "file: the path is empty"));
                    }
                    if let Some(acl) = z
                        .acl
                        .as_ref()
                        .and_then(|r| defences::find_acl(r, &acls, src, &mut problems))
                    {
                        zone_acls.0.insert(origin.clone(), acl);
                    }
                    let signing = z.dnssec_policy.as_ref().and_then(|name| {
                        let policy = match policies.get(name.get_ref()) {
                            Some(p) => Arc::clone(p),
                            None if name.get_ref() == "default" => {
                                Arc::new(crate::policy::DnssecPolicy::default())
                            }
                            None => {
                                problems.push(src.at(
                                    name.span(),
                                    format!(
                                        "dnssec_policy: no [dnssec_policy.{}] is defined",
                                        name.get_ref()
                                    ),
                                ));
                                return None;
                            }
                        };
                        let mut parents = Vec::new();
                        for p in z.parent.iter().flatten() {
                            match p.get_ref().parse::<SocketAddr>() {
                                Ok(a) => parents.push(a),
                                Err(_) => problems.push(src.at(
                                    p.span(),
                                    format!(
                                        "parent: `{}` is not an address with a port, like 192.0.2.1:53",
                                        p.get_ref()
                                    ),
                                )),
                            }
                        }
                        if policy.keystore == crate::keystore::Keystore::Pkcs11
                            && pkcs11.is_none()
                            && f.pkcs11.is_none()
                        {
                            problems.push(src.at(
                                name.span(),
                                format!(
                                    "dnssec_policy: [dnssec_policy.{}] keeps keys in pkcs11, but there is no [pkcs11] table",
                                    name.get_ref()
                                ),
                            ));
                        }
                        Some(ZoneSigning {
                            pkcs11: pkcs11.clone(),
                            policy,
                            parents,
                            key_directory: z
                                .key_directory
                                .as_ref()
                                .map_or_else(|| key_directory.clone(), |d| base_dir.join(d)),
                        })
                    });
                    let mut replication = crate::replication::settings::build_zone_replication(
                        &z.replication_fields(),
                        &registry,
                        src,
                        &mut problems,
                    );
                    replication.catalog = crate::replication::zone_config::catalog_role(
                        z,
                        &templates,
                        src,
                        &mut problems,
                    );
                    crate::replication::zone_config::check_zone_role(
                        z,
                        &origin,
                        &path,
                        &replication,
                        src,
                        &mut problems,
                    );
                    zones.push(ZoneSpec {
                        origin,
                        path,
                        signing,
                        replication,
                    });
                }
            }
            Err(e) => problems.push(src.at(
                z.origin.span(),
                format!("origin: `{}`: {e}", z.origin.get_ref()),
            )),
        }
    }
    for z in &args.zone {
        let Some((origin, path)) = z.split_once('=') else {
            problems.push(format!("--zone {z}: expected ORIGIN=PATH"));
            continue;
        };
        match parse_origin(origin) {
            Ok(origin) => {
                if let Some(first) = origins.get(&origin) {
                    problems.push(format!(
                        "--zone {z}: zone {origin} is already defined at {first}"
                    ));
                } else if path.is_empty() {
                    problems.push(format!("--zone {z}: the path is empty"));
                } else {
                    origins.insert(origin.clone(), format!("--zone {z}"));
                    zones.push(ZoneSpec::from_file(origin, PathBuf::from(path)));
                }
            }
            Err(e) => problems.push(format!("--zone {z}: origin: {e}")),
        }
    }

    if !problems.is_empty() {
        return Err(ConfigError { problems });
    }
    // The database is opened when asked for, or when a zone replicates: a
    // server that only answers from files writes nothing beside them.
    let replicates = zones.iter().any(|z| {
        let r = &z.replication;
        r.is_secondary()
            || !r.allow_update.is_empty()
            || !r.allow_transfer.is_empty()
            || !r.notify.is_empty()
            || !matches!(r.catalog, crate::replication::settings::CatalogRole::None)
    });
    let storage = args.storage.clone().or_else(|| match &f.server.storage {
        Some(s) => Some(base_dir.join(s)),
        None => (replicates && config_file.is_some()).then(|| base_dir.join("bulwark.db")),
    });
    Ok(Settings {
        config_file,
        listen,
        listen_given,
        threads,
        max_udp_payload,
        response_cache,
        tcp_idle_timeout: Duration::from_secs(tcp_idle_timeout),
        tcp_max_connections,
        chaos: ChaosIdentity {
            id_server: f.server.identity,
            hostname: f.server.hostname,
            version: f.server.version,
        },
        control_socket,
        log_format,
        log_level,
        zones,
        listener_acl,
        listener_acls,
        zone_acls,
        rrl,
        cookies,
        nsid,
        tcp_limits,
        control_mode,
        statistics,
        prometheus,
        dnstap,
        run_as,
        query_log: f.log.queries.unwrap_or(false),
        keyring: Arc::new(registry.keyring()),
        storage,
    })
}

/// `tcp_max_connections_per_client`, `tcp_max_queries_per_connection` and
/// `tcp_message_timeout` over their defaults.
fn tcp_limits(s: &ServerSection) -> TcpLimits {
    let mut limits = TcpLimits::default();
    // 0 means no per-client cap, as in bulwark-net.
    if let Some(v) = s.tcp_max_connections_per_client {
        limits.max_connections_per_client = v;
    }
    if let Some(v) = s.tcp_max_queries_per_connection {
        limits.max_queries_per_connection = v;
    }
    // 0 leaves only the idle timeout.
    if let Some(v) = s.tcp_message_timeout {
        limits.message_timeout = Duration::from_secs(v);
    }
    limits
}

/// A zone origin: a domain name, taken as absolute whether or not it ends in a dot.
pub fn parse_origin(text: &str) -> Result<Name, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the name is empty".to_string());
    }
    text.parse::<Name>()
        .map(|n| n.to_lowercase())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
    use super::*;
    use bulwark_guard::Access;

    fn settings(text: &str) -> Result<Settings, ConfigError> {
        let file = Path::new("/etc/bulwark/bulwark.toml");
        let parsed = parse_file(file, text)?;
        let src = Source { file, text };
        resolve(
            parsed,
            &ServeArgs::default(),
            &src,
            Some(file.to_path_buf()),
            Path::new("/etc/bulwark"),
        )
    }

    #[test]
    fn line_col_counts_from_one_in_characters() {
        assert_eq!(line_col("ab\ncdé f", 0), (1, 1));
        assert_eq!(line_col("ab\ncdé f", 3), (2, 1));
        assert_eq!(line_col("ab\ncdé f", 8), (2, 5));
    }

    #[test]
    fn unknown_key_names_file_line_and_column() {
        let err = settings("[server]\nthreads = 2\nlisten_on = []\n").unwrap_err();
        assert_eq!(err.problems.len(), 1);
        assert!(
            err.problems[0].starts_with("/etc/bulwark/bulwark.toml:3:1: "),
            "{err}"
        );
        assert!(err.problems[0].contains("listen_on"), "{err}");
    }

    #[test]
    fn empty_file_gives_the_defaults() {
        let s = settings("").unwrap();
        assert_eq!(s.max_udp_payload, 1232);
        assert_eq!(s.tcp_idle_timeout, Duration::from_secs(10));
        assert_eq!(s.tcp_max_connections, 1000);
        assert_eq!(s.listen.len(), 2);
        assert!(!s.listen_given);
        assert!(s.control_socket.is_none());
        assert_eq!(s.chaos, ChaosIdentity::default());
    }

    #[test]
    fn zone_paths_are_relative_to_the_config_file() {
        let s = settings("[[zone]]\norigin = \"Example.COM\"\nfile = \"zones/example.com.zone\"\n")
            .unwrap();
        assert_eq!(s.zones.len(), 1);
        assert_eq!(s.zones[0].origin.to_string(), "example.com.");
        assert_eq!(
            s.zones[0].path,
            Some(PathBuf::from("/etc/bulwark/zones/example.com.zone"))
        );
    }

    #[test]
    fn duplicate_zone_names_both_places() {
        let text = "[[zone]]\norigin = \"a.test.\"\nfile = \"a\"\n[[zone]]\norigin = \"A.test\"\nfile = \"b\"\n";
        let err = settings(text).unwrap_err();
        assert_eq!(err.problems.len(), 1, "{err}");
        assert!(
            err.problems[0].starts_with("/etc/bulwark/bulwark.toml:5:10: "),
            "{err}"
        );
        assert!(err.problems[0].contains("bulwark.toml:2:10"), "{err}");
    }

    #[test]
    fn bad_address_and_bad_origin_are_each_reported_where_they_are() {
        let text =
            "[server]\nlisten = [\"127.0.0.1\"]\n[[zone]]\norigin = \"a..b\"\nfile = \"x\"\n";
        let err = settings(text).unwrap_err();
        assert_eq!(err.problems.len(), 2, "{err}");
        assert!(
            err.problems[0].starts_with("/etc/bulwark/bulwark.toml:2:11: listen"),
            "{err}"
        );
        assert!(
            err.problems[1].starts_with("/etc/bulwark/bulwark.toml:4:10: origin"),
            "{err}"
        );
    }

    #[test]
    fn response_cache_size_is_bounded_and_zero_turns_it_off() {
        assert_eq!(
            settings("[server]\n").unwrap().response_cache,
            DEFAULT_RESPONSE_CACHE
        );
        assert_eq!(
            settings("[server]\nresponse_cache = 0\n")
                .unwrap()
                .response_cache,
            0
        );
        let err = settings("[server]\nresponse_cache = 100000000\n").unwrap_err();
        assert!(err.problems[0].contains(":2:18: response_cache"), "{err}");
    }

    #[test]
    fn small_udp_payload_is_rejected() {
        let err = settings("[server]\nmax_udp_payload = 100\n").unwrap_err();
        assert!(err.problems[0].contains(":2:19: max_udp_payload"), "{err}");
    }

    #[test]
    fn flags_replace_listen_and_add_zones() {
        let file = Path::new("b.toml");
        let text =
            "[server]\nlisten = [\"127.0.0.1:53\"]\n[[zone]]\norigin = \"a.test.\"\nfile = \"a\"\n";
        let args = ServeArgs {
            listen: vec!["[::1]:5353".parse().unwrap()],
            zone: vec!["b.test=/z/b".to_string()],
            threads: Some(3),
            ..ServeArgs::default()
        };
        let s = resolve(
            parse_file(file, text).unwrap(),
            &args,
            &Source { file, text },
            None,
            Path::new(""),
        )
        .unwrap();
        assert_eq!(s.listen, vec!["[::1]:5353".parse::<SocketAddr>().unwrap()]);
        assert_eq!(s.zones.len(), 2);
        assert_eq!(s.zones[1].path, Some(PathBuf::from("/z/b")));
        assert_eq!(s.threads, 3);
    }

    #[test]
    fn chaos_identity_is_off_unless_set() {
        let s = settings("[server]\nidentity = \"ns1\"\n").unwrap();
        assert_eq!(s.chaos.id_server.as_deref(), Some("ns1"));
        assert_eq!(s.chaos.version, None);
    }

    #[test]
    fn defences_default_to_rrl_on_with_loopback_exempt_and_cookies_on() {
        let s = settings("").unwrap();
        assert_eq!(s.rrl.responses_per_second, 20);
        assert_eq!(s.rrl.slip, 2);
        assert!(s
            .rrl
            .exempt
            .iter()
            .any(|n| n.contains("127.0.0.1".parse().unwrap())));
        assert!(s.cookies.enabled);
        assert_eq!(s.cookies.require_for_udp_above, None);
        assert!(s.listener_acl.is_none());
        assert!(s.zone_acls.is_empty());
        assert_eq!(s.nsid, None);
    }

    #[test]
    fn named_acl_denies_first_then_allows_only_its_list() {
        let text = "[server]\nacl = \"inside\"\n[acl.inside]\nallow = [\"192.0.2.0/24\"]\ndeny = [\"192.0.2.7\"]\naction = \"drop\"\n";
        let s = settings(text).unwrap();
        let acl = s.listener_acl.unwrap();
        assert_eq!(acl.check("192.0.2.1".parse().unwrap()), Access::Allow);
        assert_eq!(acl.check("192.0.2.7".parse().unwrap()), Access::Drop);
        assert_eq!(acl.check("198.51.100.1".parse().unwrap()), Access::Drop);
    }

    #[test]
    fn acl_with_only_deny_allows_everyone_else_and_refuses_by_default() {
        let text = "[acl.block]\ndeny = [\"2001:db8::/32\"]\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\nacl = \"block\"\n";
        let s = settings(text).unwrap();
        let apex: Name = "a.test.".parse().unwrap();
        use bulwark_auth::ZoneAccess;
        assert_eq!(
            s.zone_acls.access(&apex, "2001:db8::1".parse().unwrap()),
            Access::Refuse
        );
        assert_eq!(
            s.zone_acls.access(&apex, "2001:db9::1".parse().unwrap()),
            Access::Allow
        );
    }

    #[test]
    fn bad_network_and_unknown_acl_name_say_where() {
        let text = "[server]\nacl = \"nope\"\n[acl.a]\nallow = [\"10.0.0.0/33\"]\n";
        let err = settings(text).unwrap_err();
        assert_eq!(err.problems.len(), 2, "{err}");
        assert!(
            err.problems[0].starts_with("/etc/bulwark/bulwark.toml:4:10: allow"),
            "{err}"
        );
        assert!(
            err.problems[1].starts_with("/etc/bulwark/bulwark.toml:2:7: acl: no [acl.nope]"),
            "{err}"
        );
        assert!(err.problems[1].contains("defined: a"), "{err}");
    }

    #[test]
    fn rrl_and_cookies_sections_are_read() {
        let text = "[rrl]\nresponses_per_second = 0\nslip = 1\nexempt = []\n[cookies]\nsecret = \"000102030405060708090a0b0c0d0e0f\"\nrequire_for_udp_above = 512\n";
        let s = settings(text).unwrap();
        assert_eq!(s.rrl.responses_per_second, 0);
        assert_eq!(s.rrl.slip, 1);
        assert!(s.rrl.exempt.is_empty());
        assert_eq!(s.cookies.secret.unwrap()[15], 15);
        assert_eq!(s.cookies.require_for_udp_above, Some(512));
    }

    #[test]
    fn short_cookie_secret_and_both_nsid_forms_are_errors() {
        let text = "[server]\nnsid = \"a\"\nnsid_hex = \"61\"\n[cookies]\nsecret = \"abcd\"\n";
        let err = settings(text).unwrap_err();
        assert_eq!(err.problems.len(), 2, "{err}");
        assert!(
            err.problems.iter().any(|p| p.contains(":3:12: nsid_hex")),
            "{err}"
        );
        assert!(
            err.problems.iter().any(|p| p.contains(":5:10: secret")),
            "{err}"
        );
    }

    #[test]
    fn nsid_hex_gives_raw_octets() {
        let s = settings("[server]\nnsid_hex = \"00ff\"\n").unwrap();
        assert_eq!(s.nsid, Some(vec![0, 255]));
    }

    #[test]
    fn listener_tables_add_addresses_with_their_own_acl() {
        let text = "[server]\nlisten = [\"127.0.0.1:53\"]\nacl = \"all\"\n[acl.all]\ndeny = []\n[acl.lan]\nallow = [\"10.0.0.0/8\"]\n[[listener]]\naddress = \"10.0.0.1:53\"\nacl = \"lan\"\n[[listener]]\naddress = \"10.0.0.2:53\"\n";
        let s = settings(text).unwrap();
        assert_eq!(s.listen.len(), 3);
        assert_eq!(s.listener_acls.len(), 1);
        assert_eq!(
            s.listener_acls[0].0,
            "10.0.0.1:53".parse::<SocketAddr>().unwrap()
        );
        assert_eq!(
            s.listener_acls[0].1.check("192.0.2.1".parse().unwrap()),
            Access::Refuse
        );
        assert!(s.listener_acl.is_some());
    }

    #[test]
    fn listener_tables_alone_replace_the_default_addresses() {
        let s = settings("[[listener]]\naddress = \"[::1]:5353\"\n").unwrap();
        assert_eq!(s.listen, vec!["[::1]:5353".parse::<SocketAddr>().unwrap()]);
        assert!(s.listen_given);
    }

    #[test]
    fn pkcs11_table_and_keystore_mistakes_say_where() {
        let text = "[pkcs11]\nmodule = \"/usr/lib/softhsm/libsofthsm2.so\"\ntoken_label = \"bulwark\"\npin = \"1234\"\n[dnssec_policy.hsm]\nkeystore = \"pkcs11\"\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\ndnssec_policy = \"hsm\"\n";
        let s = settings(text).unwrap();
        let signing = s.zones[0].signing.as_ref().unwrap();
        let token = signing.pkcs11.as_ref().unwrap();
        assert_eq!(token.token_label, "bulwark");
        assert_eq!(signing.policy.keystore, crate::keystore::Keystore::Pkcs11);

        let text = "[pkcs11]\nmodule = \"/m.so\"\npin = \"1\"\npin_file = \"pin\"\n";
        let err = settings(text).unwrap_err();
        assert!(
            err.problems
                .iter()
                .any(|p| p.contains("bulwark.toml:4:12: pin_file: give `pin` or `pin_file`")),
            "{err}"
        );
        assert!(
            err.problems
                .iter()
                .any(|p| p.contains("`token_label` is required")),
            "{err}"
        );

        let text = "[dnssec_policy.hsm]\nkeystore = \"pkcs12\"\n[dnssec_policy.h2]\nkeystore = \"pkcs11\"\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\ndnssec_policy = \"h2\"\n";
        let err = settings(text).unwrap_err();
        assert!(
            err.problems
                .iter()
                .any(|p| p.contains("bulwark.toml:2:12: keystore: `pkcs12`")),
            "{err}"
        );
        assert!(
            err.problems.iter().any(|p| p.contains(
                "bulwark.toml:8:17: dnssec_policy: [dnssec_policy.h2] keeps keys in pkcs11"
            )),
            "{err}"
        );
    }

    #[test]
    fn tcp_limits_map_from_the_server_table() {
        let s = settings("[server]\ntcp_max_connections_per_client = 3\ntcp_max_queries_per_connection = 9\ntcp_message_timeout = 0\n").unwrap();
        assert_eq!(s.tcp_limits.max_connections_per_client, 3);
        assert_eq!(s.tcp_limits.max_queries_per_connection, 9);
        assert_eq!(s.tcp_limits.message_timeout, Duration::ZERO);
    }
}
