//! The configuration: one TOML file (every table `deny_unknown_fields`), command
//! line flags laid over it, validated into the [`Settings`] the server runs
//! with. Each section is read and validated in its own module; this one reads
//! the file and runs them in order. Every error names where it is:
//! `FILE:LINE:COL: message`, or the flag.
//!
//! Depends on `settings` (what it builds), `cli` (the flags) and external
//! crates only: no runtime module.

mod control;
mod defences;
mod dnssec;
mod dnstap;
mod observability;
mod pkcs11;
mod replication;
mod resolver;
mod server;
mod source;
mod template;
#[cfg(test)]
mod tests;
mod tls;
mod tsig;
mod xdp;
mod zone;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bulwark_auth::ChaosIdentity;
use serde::Deserialize;

use crate::cli::ServeArgs;
use crate::settings::{Pkcs11Settings, Settings};
pub use pkcs11::read_pin_file;
use source::Source;

/// The file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    #[serde(default)]
    pub server: server::ServerSection,
    #[serde(default)]
    pub control: control::ControlSection,
    #[serde(default)]
    pub log: observability::LogSection,
    #[serde(default, rename = "zone")]
    pub zones: Vec<zone::ZoneSection>,
    /// Addresses with their own ACL, served beside `[server] listen`.
    #[serde(default, rename = "listener")]
    pub listeners: Vec<server::ListenerSection>,
    /// Named ACLs, referred to by `[server] acl` and `[[zone]] acl`.
    #[serde(default)]
    pub acl: BTreeMap<String, defences::AclSection>,
    #[serde(default)]
    pub rrl: defences::RrlSection,
    #[serde(default)]
    pub cookies: defences::CookiesSection,
    #[serde(default)]
    pub statistics: observability::StatisticsSection,
    #[serde(default)]
    pub prometheus: observability::PrometheusSection,
    #[serde(default)]
    pub dnstap: dnstap::DnstapSection,
    /// Named signing policies, referred to by `[[zone]] dnssec_policy`.
    #[serde(default)]
    pub dnssec_policy: BTreeMap<String, dnssec::PolicySection>,
    /// The HSM for policies with `keystore = "pkcs11"`.
    pub pkcs11: Option<pkcs11::Pkcs11Section>,
    /// TSIG keys, referred to by remotes and ACLs.
    #[serde(default)]
    pub tsig_key: BTreeMap<String, tsig::TsigKeySection>,
    /// Other servers: primaries to pull from, secondaries to notify.
    #[serde(default)]
    pub remote: BTreeMap<String, replication::RemoteSection>,
    /// Settings of the zones a consumed catalog brings.
    #[serde(default)]
    pub template: BTreeMap<String, template::TemplateSection>,
    /// Recursion: present turns it on.
    pub resolver: Option<resolver::ResolverSection>,
    /// Interfaces served through AF_XDP.
    #[serde(default)]
    pub xdp: Vec<xdp::XdpSection>,
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
pub fn load_pkcs11(path: &Path) -> Result<Option<Pkcs11Settings>, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::one(format!("{}: cannot read: {e}", path.display())))?;
    let parsed = parse_file(path, &text)?;
    let source = Source {
        file: path,
        text: &text,
    };
    let base_dir = path.parent().unwrap_or(Path::new(""));
    let mut problems = Vec::new();
    let settings = pkcs11::build_pkcs11(
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

/// Validates every section, in an order that reports problems as a reader
/// of the file meets them: the tables a zone refers to before the zones.
fn resolve(
    f: ConfigFile,
    args: &ServeArgs,
    src: &Source<'_>,
    config_file: Option<PathBuf>,
    base_dir: &Path,
) -> Result<Settings, ConfigError> {
    let mut problems = Vec::new();
    let p = &mut problems;

    let (mut listen, mut listen_given) =
        server::listen_addresses(&args.listen, &f.server, !f.listeners.is_empty(), src, p);
    let threads = server::threads(args.threads, &f.server);
    let udp_workers = server::udp_workers(&f.server, src, p);
    let xdp = xdp::build_xdp(&f.xdp, src, p);
    let limits = server::build_limits(&f.server, src, p);
    let tls_limits = server::tls_limits(&f.server, src, p);
    let log_format = observability::build_log_format(args.log_format, &f.log);
    let log_level = observability::build_log_level(args.log_level.as_ref(), &f.log, src, p);
    let control_mode = control::resolve_mode(f.control.mode.as_ref(), src, p);
    let statistics = observability::build_statistics(&f.statistics);
    let prometheus = observability::build_prometheus(&f.prometheus, src, p);
    let dnstap = dnstap::build_dnstap(
        &f.dnstap,
        args.dnstap.as_deref(),
        base_dir,
        f.resolver.is_some(),
        src,
        p,
    );
    let run_as = server::build_run_as(f.server.user.as_ref(), f.server.group.as_ref(), src, p);
    let control_socket =
        control::control_socket(args.control_socket.as_ref(), &f.control, base_dir);

    let acls = defences::build_acls(&f.acl, src, p);
    let listener_acl = f
        .server
        .acl
        .as_ref()
        .and_then(|r| defences::find_acl(r, &acls, src, p));
    // `[[listener]]` addresses join `listen`; the `--listen` flags replace both.
    let listeners = if args.listen.is_empty() {
        server::listeners(
            &f.listeners,
            &acls,
            &mut listen,
            &mut listen_given,
            base_dir,
            src,
            p,
        )
    } else {
        server::Listeners::default()
    };
    let registry =
        replication::build_registry(&f.tsig_key, &f.remote, &f.acl, &acls, base_dir, src, p);
    let rrl = defences::build_rrl(&f.rrl, src, p);
    let cookies = defences::build_cookies(&f.cookies, src, p);
    let nsid = defences::build_nsid(f.server.nsid.as_ref(), f.server.nsid_hex.as_ref(), src, p);

    let policies = dnssec::build_policies(&f.dnssec_policy, src, p);
    let key_directory = base_dir.join(f.server.key_directory.as_deref().unwrap_or("keys"));
    let pkcs11 = pkcs11::build_pkcs11(
        f.pkcs11.as_ref(),
        base_dir,
        &src.file.display().to_string(),
        src,
        p,
    )
    .map(Arc::new);
    let signing = dnssec::SigningDefaults {
        policies: &policies,
        pkcs11: pkcs11.as_ref(),
        pkcs11_written: f.pkcs11.is_some(),
        key_directory: &key_directory,
        base_dir,
    };
    let templates = template::build_templates(src.file, &f.template, &registry, &signing, src, p);
    // Generated catalogs must exist for the zones that name them.
    zone::check_catalog_members(&f.zones, src, p);
    let tables = zone::ZoneTables {
        acls: &acls,
        registry: &registry,
        templates: &templates,
        signing: &signing,
    };
    let (zones, zone_acls) = zone::build_zones(&f.zones, &args.zone, &tables, src, p);
    let resolver = resolver::build_resolver(f.resolver.as_ref(), base_dir, src, p);

    if !problems.is_empty() {
        return Err(ConfigError { problems });
    }
    let storage = server::storage(
        args.storage.as_ref(),
        &f.server,
        &zones,
        config_file.is_some(),
        base_dir,
    );
    Ok(Settings {
        config_file,
        listen,
        listen_given,
        threads,
        udp_workers,
        max_udp_payload: limits.max_udp_payload,
        response_cache: limits.response_cache,
        tcp_idle_timeout: limits.tcp_idle_timeout,
        tcp_max_connections: limits.tcp_max_connections,
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
        listener_acls: listeners.acls,
        listeners_without_recursion: listeners.without_recursion,
        zone_acls,
        rrl,
        cookies,
        nsid,
        tcp_limits: limits.tcp,
        control_mode,
        statistics,
        prometheus,
        dnstap,
        run_as,
        query_log: f.log.queries.unwrap_or(false),
        keyring: Arc::new(registry.keyring()),
        tls_remotes: registry.tls_remotes.clone(),
        storage,
        resolver,
        tls_listeners: listeners.tls,
        tls_limits,
        xdp,
    })
}
