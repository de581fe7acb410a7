//! The control socket's commands, run against the live server.
//!
//! A command is a line of words: the command's own words (`zone status`), then
//! its arguments (`example.com.`). [`COMMANDS`] lists them all; a new command is
//! one more entry there and one function. The reply is `ok` or `error: ...` as
//! its first line, then lines of detail.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bulwark_guard::RrlStats;
use bulwark_net::{TcpStats, UdpStats};
use bulwark_resolver::cache::ServersFlushed;

use crate::stats::Family;
use crate::zones::{ZoneInfo, ZoneOutcome, Zones};

/// What the commands can see and do of the running server. The server
/// implements it; the commands know nothing else of it.
pub trait ControlPlane: Send + Sync + 'static {
    /// The facts `ctl status` reports.
    fn status(&self) -> Status;
    fn zones(&self) -> &Arc<Zones>;
    /// Every statistic, as `ctl stats` and the metrics endpoint show them.
    fn metrics(&self) -> Vec<Family>;
    /// Starts the server's shutdown.
    fn stop(&self);
    /// Reads the configuration again and reloads every zone: whether all
    /// loaded, and the lines that say how.
    fn reload_configuration(
        self: Arc<Self>,
    ) -> Pin<Box<dyn Future<Output = (bool, Vec<String>)> + Send>>;
    /// The resolver's cache; `None` when recursion is off.
    fn resolver_cache(&self) -> Option<&bulwark_resolver::Cache>;
    /// The managed trust anchors' keys (RFC 5011); `None` without a
    /// resolver.
    fn trust_anchors(&self) -> Option<Vec<String>>;
    /// The server's time (the test clock's when there is one), Unix ms.
    fn now_ms(&self) -> u64;
    /// Moves the clock `seconds` forward and returns the new Unix time;
    /// refused unless the server was started with a test clock.
    fn advance_test_clock(&self, seconds: u64) -> Result<u64, String>;
}

/// What `ctl status` reports, gathered by the server.
#[derive(Debug, Clone, Default)]
pub struct Status {
    pub uptime: Duration,
    /// The addresses bound, UDP and TCP on each.
    pub listen: Vec<SocketAddr>,
    /// The encrypted listeners: each address with `tls`, `https`, `quic`
    /// or `h3`, and the connection counters of each kind (DoT, DoH with
    /// HTTP/3, DoQ).
    pub encrypted: Vec<(SocketAddr, &'static str)>,
    pub encrypted_counts: [TcpCounts; 3],
    pub udp_workers: usize,
    pub control: Option<PathBuf>,
    pub prometheus: Option<SocketAddr>,
    /// `None` before the workers start.
    pub udp: Option<UdpStats>,
    pub tcp: TcpCounts,
    /// Each AF_XDP path (`[[xdp]]`): how it runs and its counts.
    pub xdp: Vec<(bulwark_net::XdpInfo, bulwark_net::XdpStats)>,
    /// `None` when rate limiting is off.
    pub rrl: Option<RrlStats>,
    /// `None` when cookies are off: whether the secret is random (and
    /// rotated), and how many rotations there were.
    pub cookies: Option<(bool, u64)>,
}

/// The TCP counters `ctl status` shows.
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpCounts {
    pub accepted: u64,
    pub rejected: u64,
    pub queries: u64,
    pub idle: u64,
    pub message_timeout: u64,
    pub evicted: u64,
    pub rejected_for_client: u64,
    pub rejected_total: u64,
}

impl TcpCounts {
    pub fn of(t: &TcpStats) -> TcpCounts {
        let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        TcpCounts {
            accepted: load(&t.accepted),
            rejected: load(&t.rejected),
            queries: load(&t.queries),
            idle: load(&t.idle),
            message_timeout: load(&t.message_timeout),
            evicted: load(&t.evicted),
            rejected_for_client: load(&t.too_many_for_client),
            rejected_total: load(&t.too_many_total),
        }
    }
}

/// What a command answers: success or failure, and the lines to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub ok: bool,
    /// Without the leading `ok` line; a failure's first line is `error: ...`.
    pub lines: Vec<String>,
}

impl Reply {
    pub fn ok(lines: Vec<String>) -> Reply {
        Reply { ok: true, lines }
    }

    pub fn error(message: impl std::fmt::Display) -> Reply {
        Reply {
            ok: false,
            lines: vec![format!("error: {message}")],
        }
    }

    /// The reply as sent on the socket: `ok` or `error: ...` first.
    pub fn to_wire(&self) -> String {
        let mut out = String::new();
        if self.ok {
            out.push_str("ok\n");
        } else if !self.lines.first().is_some_and(|l| l.starts_with("error:")) {
            out.push_str("error: failed\n");
        }
        for l in &self.lines {
            out.push_str(l);
            out.push('\n');
        }
        out
    }
}

type BoxedReply = Pin<Box<dyn Future<Output = Reply> + Send>>;

/// How a command runs.
#[derive(Clone, Copy)]
enum Run {
    /// Quick, and never blocks: runs on the control task.
    Now(fn(&dyn ControlPlane, &[String]) -> Reply),
    /// May take long (reading zone files): its own future.
    Later(fn(Arc<dyn ControlPlane>, Vec<String>) -> BoxedReply),
}

/// One control command.
#[derive(Clone, Copy)]
struct CommandSpec {
    /// The command's words, e.g. `["zone", "status"]`.
    words: &'static [&'static str],
    /// Its arguments as shown in help, e.g. `"ZONE"`, `"[--json]"`.
    usage: &'static str,
    min_args: usize,
    max_args: usize,
    run: Run,
}

/// Every control command. Longer word sequences are matched first.
const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        words: &["status"],
        usage: "",
        min_args: 0,
        max_args: 0,
        run: Run::Now(|plane, _| Reply::ok(status_lines(&plane.status(), plane.zones()))),
    },
    CommandSpec {
        words: &["reload"],
        usage: "",
        min_args: 0,
        max_args: 0,
        run: Run::Later(|plane, _| {
            Box::pin(async move {
                let (ok, lines) = plane.reload_configuration().await;
                Reply { ok, lines }
            })
        }),
    },
    CommandSpec {
        words: &["stop"],
        usage: "",
        min_args: 0,
        max_args: 0,
        run: Run::Now(|plane, _| {
            tracing::info!("stop requested over the control socket");
            plane.stop();
            Reply::ok(vec!["stopping".to_string()])
        }),
    },
    CommandSpec {
        words: &["zone", "list"],
        usage: "",
        min_args: 0,
        max_args: 0,
        run: Run::Now(|plane, _| Reply::ok(zone_list(&plane.zones().infos()))),
    },
    CommandSpec {
        words: &["zone", "status"],
        usage: "ZONE",
        min_args: 1,
        max_args: 1,
        run: Run::Now(zone_status),
    },
    CommandSpec {
        words: &["zone", "reload"],
        usage: "ZONE",
        min_args: 1,
        max_args: 1,
        run: Run::Later(|app, args| Box::pin(zone_reload(app, args))),
    },
    CommandSpec {
        words: &["zone", "read"],
        usage: "ZONE",
        min_args: 1,
        max_args: 1,
        run: Run::Now(zone_read),
    },
    CommandSpec {
        words: &["zone", "sign"],
        usage: "ZONE",
        min_args: 1,
        max_args: 1,
        run: Run::Later(|app, args| Box::pin(zone_sign(app, args))),
    },
    CommandSpec {
        words: &["stats"],
        usage: "[--json]",
        min_args: 0,
        max_args: 1,
        run: Run::Now(stats),
    },
    CommandSpec {
        words: &["cache", "stats"],
        usage: "",
        min_args: 0,
        max_args: 0,
        run: Run::Now(cache_stats),
    },
    CommandSpec {
        words: &["cache", "flush"],
        usage: "",
        min_args: 0,
        max_args: 0,
        run: Run::Now(|plane, _| cache_flush(plane, Flush::All)),
    },
    CommandSpec {
        words: &["cache", "flush", "name"],
        usage: "NAME",
        min_args: 1,
        max_args: 1,
        run: Run::Now(|plane, args| cache_flush(plane, Flush::Name(args))),
    },
    CommandSpec {
        words: &["cache", "flush", "zone"],
        usage: "ZONE",
        min_args: 1,
        max_args: 1,
        run: Run::Now(|plane, args| cache_flush(plane, Flush::Zone(args))),
    },
    CommandSpec {
        words: &["cache", "flush-infra"],
        usage: "[ADDRESS]",
        min_args: 0,
        max_args: 1,
        run: Run::Now(cache_flush_infra),
    },
    CommandSpec {
        words: &["anchors"],
        usage: "",
        min_args: 0,
        max_args: 0,
        run: Run::Now(|plane, _| match plane.trust_anchors() {
            Some(lines) => Reply::ok(lines),
            None => no_resolver(),
        }),
    },
    CommandSpec {
        words: &["nta", "add"],
        usage: "ZONE [SECONDS]",
        min_args: 1,
        max_args: 2,
        run: Run::Now(nta_add),
    },
    CommandSpec {
        words: &["nta", "remove"],
        usage: "ZONE",
        min_args: 1,
        max_args: 1,
        run: Run::Now(nta_remove),
    },
    CommandSpec {
        words: &["nta", "list"],
        usage: "",
        min_args: 0,
        max_args: 0,
        run: Run::Now(nta_list),
    },
    CommandSpec {
        words: &["test-clock", "advance"],
        usage: "SECONDS",
        min_args: 1,
        max_args: 1,
        run: Run::Now(test_clock_advance),
    },
];

fn no_resolver() -> Reply {
    Reply::error("recursion is off: the configuration has no [resolver] section".to_string())
}

/// `cache stats`: what the resolver's cache holds and how it has done.
fn cache_stats(plane: &dyn ControlPlane, _: &[String]) -> Reply {
    let Some(cache) = plane.resolver_cache() else {
        return no_resolver();
    };
    let s = cache.stats();
    Reply::ok(vec![
        format!("entries {}", s.entries),
        format!("bytes {}", s.bytes),
        format!("hits {}", s.hits),
        format!("misses {}", s.misses),
        format!("inserts {}", s.inserts),
        format!("evictions {}", s.evictions),
    ])
}

enum Flush<'a> {
    All,
    Name(&'a [String]),
    Zone(&'a [String]),
}

/// `cache flush [name NAME | zone ZONE]`: forgets cached data.
fn cache_flush(plane: &dyn ControlPlane, what: Flush<'_>) -> Reply {
    let Some(cache) = plane.resolver_cache() else {
        return no_resolver();
    };
    let name_of = |args: &[String]| parse_zone(args.first().map_or("", String::as_str));
    let removed = match what {
        Flush::All => cache.flush_all(),
        Flush::Name(args) => match name_of(args) {
            Ok(n) => cache.flush_name(&n),
            Err(r) => return r,
        },
        Flush::Zone(args) => match name_of(args) {
            Ok(n) => cache.flush_zone(&n),
            Err(r) => return r,
        },
    };
    Reply::ok(vec![format!("flushed {removed} entries")])
}

/// `cache flush-infra [ADDRESS]`: the resolver forgets what it knows of
/// every server, or of one (Unbound's `flush_infra all|IP`).
fn cache_flush_infra(plane: &dyn ControlPlane, args: &[String]) -> Reply {
    let Some(cache) = plane.resolver_cache() else {
        return no_resolver();
    };
    match args.first() {
        None => {
            cache.flush_servers(ServersFlushed::All);
            Reply::ok(vec!["forgetting what is known of every server".to_string()])
        }
        Some(text) => match text.parse::<std::net::IpAddr>() {
            Ok(ip) => {
                cache.flush_servers(ServersFlushed::One(ip));
                Reply::ok(vec![format!("forgetting what is known of {ip}")])
            }
            Err(_) => Reply::error(format!(
                "`{text}` is not a server address: give an IPv4 or IPv6 address"
            )),
        },
    }
}

/// How long a negative trust anchor set at run time lasts unless told
/// (BIND's `nta-lifetime`), and the longest it may (RFC 7646 §5: a week).
const NTA_LIFETIME_SECS: u64 = 3600;
const NTA_MAX_LIFETIME_SECS: u64 = 7 * 86_400;

/// `nta add ZONE [SECONDS]`: stop validating ZONE (RFC 7646) for SECONDS
/// (an hour unless given, a week at most), and forget what the cache
/// judged of it.
fn nta_add(plane: &dyn ControlPlane, args: &[String]) -> Reply {
    let Some(cache) = plane.resolver_cache() else {
        return no_resolver();
    };
    let zone = match parse_zone(args.first().map_or("", String::as_str)) {
        Ok(z) => z,
        Err(r) => return r,
    };
    let seconds = match args.get(1) {
        None => NTA_LIFETIME_SECS,
        Some(text) => match text.parse::<u64>() {
            Ok(s) if (1..=NTA_MAX_LIFETIME_SECS).contains(&s) => s,
            _ => {
                return Reply::error(format!(
                "`{text}` is not a lifetime: give seconds, 1 to {NTA_MAX_LIFETIME_SECS} (a week)"
            ))
            }
        },
    };
    let now = plane.now_ms();
    let until = now.saturating_add(seconds.saturating_mul(1000));
    if !cache.negative_anchors().add(&zone, Some(until), now) {
        return Reply::error(format!(
            "too many negative trust anchors (at most {})",
            bulwark_resolver::negative_anchors::MAX_NEGATIVE_ANCHORS
        ));
    }
    let flushed = cache.flush_zone(&zone);
    Reply::ok(vec![format!(
        "{zone} not validated for {seconds} s (flushed {flushed} entries)"
    )])
}

/// `nta remove ZONE`: validate ZONE again.
fn nta_remove(plane: &dyn ControlPlane, args: &[String]) -> Reply {
    let Some(cache) = plane.resolver_cache() else {
        return no_resolver();
    };
    let zone = match parse_zone(args.first().map_or("", String::as_str)) {
        Ok(z) => z,
        Err(r) => return r,
    };
    if !cache.negative_anchors().remove(&zone) {
        return Reply::error(format!("{zone} is no negative trust anchor"));
    }
    let flushed = cache.flush_zone(&zone);
    Reply::ok(vec![format!(
        "{zone} validated again (flushed {flushed} entries)"
    )])
}

/// `nta list`: the negative trust anchors, and the seconds each has left.
fn nta_list(plane: &dyn ControlPlane, _: &[String]) -> Reply {
    let Some(cache) = plane.resolver_cache() else {
        return no_resolver();
    };
    let now = plane.now_ms();
    let lines = cache
        .negative_anchors()
        .list(now)
        .into_iter()
        .map(|(zone, until)| match until {
            Some(end) => format!("{zone} {}", end.saturating_sub(now) / 1000),
            None => format!("{zone} configured"),
        })
        .collect();
    Reply::ok(lines)
}

/// `test-clock advance SECONDS` (hidden from `ctl --help`).
fn test_clock_advance(plane: &dyn ControlPlane, args: &[String]) -> Reply {
    let text = args.first().map_or("", String::as_str);
    let Ok(seconds) = text.parse::<u64>() else {
        return Reply::error(format!("`{text}` is not a number of seconds"));
    };
    match plane.advance_test_clock(seconds) {
        Ok(now) => Reply::ok(vec![format!("now {now}")]),
        Err(e) => Reply::error(e),
    }
}

/// Runs one control command line against `plane`.
pub async fn run(plane: Arc<dyn ControlPlane>, line: &str) -> Reply {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some(spec) = find(&words) else {
        return Reply::error(format!(
            "unknown command `{}` (commands: {})",
            line.trim(),
            command_list()
        ));
    };
    let args: Vec<String> = words
        .get(spec.words.len()..)
        .unwrap_or_default()
        .iter()
        .map(|s| (*s).to_string())
        .collect();
    if args.len() < spec.min_args || args.len() > spec.max_args {
        return Reply::error(format!("usage: {}", usage(spec)));
    }
    match spec.run {
        Run::Now(f) => f(plane.as_ref(), &args),
        Run::Later(f) => f(plane, args).await,
    }
}

/// `ctl status`: who is running, where, and with what. The `udp`, `tcp`,
/// `rrl` and `cookies` lines are kept in their long-standing form.
fn status_lines(s: &Status, zones: &Zones) -> Vec<String> {
    let mut lines = vec![
        format!("version {}", env!("CARGO_PKG_VERSION")),
        format!("uptime {}s", s.uptime.as_secs()),
    ];
    lines.extend(s.listen.iter().map(|a| format!("listen {a} udp tcp")));
    lines.extend(
        s.encrypted
            .iter()
            .map(|(a, kind)| format!("listen {a} {kind}")),
    );
    lines.push(format!("udp workers {}", s.udp_workers));
    let infos = zones.infos();
    let served = infos.iter().filter(|i| i.served.is_some()).count();
    lines.push(format!("zones {served} loaded of {}", infos.len()));
    match &s.control {
        Some(p) => lines.push(format!("control {}", p.display())),
        None => lines.push("control off".to_string()),
    }
    match s.prometheus {
        Some(a) => lines.push(format!("prometheus http://{a}/metrics")),
        None => lines.push("prometheus off".to_string()),
    }
    if let Some(u) = &s.udp {
        lines.push(format!(
            "udp received {} responded {} dropped {} truncated {} send_errors {}",
            u.received, u.responded, u.dropped, u.truncated, u.send_errors
        ));
    }
    for (info, x) in &s.xdp {
        let queues: Vec<String> = info.queues.iter().map(u32::to_string).collect();
        lines.push(format!(
            "xdp {} queues {} {} {}",
            info.interface,
            queues.join(","),
            if info.native { "native" } else { "generic" },
            if info.zero_copy { "zero-copy" } else { "copy" },
        ));
        lines.push(format!(
            "xdp {} received {} responded {} dropped {} truncated {} send_errors {} kernel_dropped {}",
            info.interface,
            x.received,
            x.responded,
            x.dropped,
            x.truncated,
            x.send_errors,
            x.kernel
                .rx_dropped
                .saturating_add(x.kernel.rx_ring_full)
                .saturating_add(x.kernel.rx_fill_ring_empty)
                .saturating_add(x.kernel.rx_invalid),
        ));
    }
    let t = &s.tcp;
    lines.push(format!(
        "tcp accepted {} rejected {} queries {}",
        t.accepted, t.rejected, t.queries
    ));
    lines.push(format!(
        "tcp closed idle {} message_timeout {} evicted {} rejected_for_client {} rejected_total {}",
        t.idle, t.message_timeout, t.evicted, t.rejected_for_client, t.rejected_total
    ));
    for (kind, c) in ["tls", "https", "quic"].iter().zip(&s.encrypted_counts) {
        if s.encrypted.iter().any(|(_, k)| k == kind) {
            lines.push(format!(
                "{kind} accepted {} rejected {} queries {}",
                c.accepted, c.rejected, c.queries
            ));
        }
    }
    match &s.rrl {
        Some(r) => lines.push(format!(
            "rrl passed {} dropped {} slipped {}",
            r.passed, r.dropped, r.slipped
        )),
        None => lines.push("rrl off".to_string()),
    }
    match s.cookies {
        Some((rotating, rotations)) => lines.push(format!(
            "cookies on secret {} rotations {rotations}",
            if rotating { "random" } else { "configured" },
        )),
        None => lines.push("cookies off".to_string()),
    }
    lines
}

/// The entry whose words start `words`, the longest such.
fn find(words: &[&str]) -> Option<&'static CommandSpec> {
    COMMANDS
        .iter()
        .filter(|c| {
            words.len() >= c.words.len()
                && c.words
                    .iter()
                    .zip(words)
                    .all(|(a, b)| a.eq_ignore_ascii_case(b))
        })
        .max_by_key(|c| c.words.len())
}

fn usage(spec: &CommandSpec) -> String {
    let mut u = spec.words.join(" ");
    if !spec.usage.is_empty() {
        u.push(' ');
        u.push_str(spec.usage);
    }
    u
}

fn command_list() -> String {
    COMMANDS.iter().map(usage).collect::<Vec<_>>().join(", ")
}

fn parse_zone(text: &str) -> Result<bulwark_proto::Name, Reply> {
    crate::settings::parse_origin(text)
        .map_err(|e| Reply::error(format!("`{text}` is not a zone name: {e}")))
}

fn unknown_zone(origin: &bulwark_proto::Name) -> Reply {
    Reply::error(format!(
        "unknown zone {origin}: it is not in the configuration"
    ))
}

/// `ctl zone list`: `ORIGIN SERIAL FILE`, one line per configured zone.
fn zone_list(infos: &[ZoneInfo]) -> Vec<String> {
    infos
        .iter()
        .map(|i| match &i.served {
            Some(c) => format!("{} {} {}", i.origin, serial_text(c.serial), i.file),
            None => format!("{} - {} (not loaded)", i.origin, i.file),
        })
        .collect()
}

fn zone_status(plane: &dyn ControlPlane, args: &[String]) -> Reply {
    let origin = match parse_zone(args.first().map_or("", String::as_str)) {
        Ok(o) => o,
        Err(r) => return r,
    };
    match plane.zones().info(&origin) {
        Some(info) => Reply::ok(zone_status_lines(&info)),
        None => unknown_zone(&origin),
    }
}

/// `zone read ZONE`: the zone as served (signatures and chain included for a
/// zone bulwark signs), as a master file, like `knotc zone-read`.
fn zone_read(plane: &dyn ControlPlane, args: &[String]) -> Reply {
    let origin = match parse_zone(args.first().map_or("", String::as_str)) {
        Ok(o) => o,
        Err(r) => return r,
    };
    let set = plane.zones().current();
    match set.get(&origin) {
        Some(zone) => {
            let records: Vec<bulwark_proto::Record> = zone.records().collect();
            Reply::ok(
                bulwark_zone::print_zone(&records)
                    .lines()
                    .map(str::to_string)
                    .collect(),
            )
        }
        None if plane.zones().info(&origin).is_some() => {
            Reply::error(format!("zone {origin} is configured but not loaded"))
        }
        None => unknown_zone(&origin),
    }
}

fn unix_rfc3339(seconds: u64) -> String {
    SystemTime::UNIX_EPOCH
        .checked_add(std::time::Duration::from_secs(seconds))
        .map_or_else(|| "-".to_string(), rfc3339)
}

/// `ctl zone status ZONE`: `key: value` lines.
fn zone_status_lines(info: &ZoneInfo) -> Vec<String> {
    let secondary = info.timers.is_some() || info.role == "secondary";
    let mut lines = vec![
        format!("zone: {}", info.origin),
        format!("role: {}", info.role),
    ];
    match &info.served {
        Some(c) => {
            lines.push(format!("serial: {}", serial_text(c.serial)));
            lines.push(format!("file: {}", info.file));
            lines.push(
                if secondary {
                    "loaded from: transfer"
                } else {
                    "loaded from: file"
                }
                .to_string(),
            );
            lines.push(format!("loaded at: {}", rfc3339(c.loaded_at)));
            lines.push(format!(
                "file modified: {}",
                c.file_modified.map_or_else(|| "-".to_string(), rfc3339)
            ));
            lines.push(format!("names: {}", c.names));
        }
        None => {
            lines.push("serial: -".to_string());
            lines.push(format!("file: {}", info.file));
            lines.push(
                if secondary {
                    "loaded from: - (no current copy: waiting for a transfer, or expired)"
                } else {
                    "loaded from: - (not loaded: the file failed)"
                }
                .to_string(),
            );
        }
    }
    match info.served.as_ref().and_then(|c| c.signed.as_ref()) {
        Some(state) => {
            lines.push(format!(
                "dnssec: signed at {}, {} signatures ({} kept from the last pass), valid until {}",
                unix_rfc3339(state.signed_at),
                state.signatures,
                state.kept,
                unix_rfc3339(state.expires)
            ));
            lines.push(format!("next signing: {}", unix_rfc3339(state.next_resign)));
            for (tag, algorithm, role) in &state.keys {
                lines.push(format!("key: {tag} algorithm {algorithm} {role}"));
            }
        }
        None => lines.push("dnssec: unsigned".to_string()),
    }
    if let Some(t) = &info.timers {
        lines.push(format!(
            "last refresh: {} from {}",
            if t.last_refresh == 0 {
                "-".to_string()
            } else {
                unix_rfc3339(t.last_refresh)
            },
            t.primary.as_deref().unwrap_or("-")
        ));
        lines.push(format!("next refresh: {}", unix_rfc3339(t.next_refresh)));
        lines.push(format!(
            "expires: {}",
            if t.expire_at == 0 {
                "-".to_string()
            } else {
                unix_rfc3339(t.expire_at)
            }
        ));
    }
    lines
}

async fn zone_reload(plane: Arc<dyn ControlPlane>, args: Vec<String>) -> Reply {
    let origin = match parse_zone(args.first().map_or("", String::as_str)) {
        Ok(o) => o,
        Err(r) => return r,
    };
    tracing::info!(zone = %origin, "reloading one zone");
    let task = {
        let origin = origin.clone();
        let zones = Arc::clone(plane.zones());
        tokio::task::spawn_blocking(move || zones.reload_one(&origin))
    };
    match task.await {
        Ok(Ok(outcome)) => {
            let ok = matches!(outcome, ZoneOutcome::Loaded { .. });
            let report = crate::zones::LoadReport {
                outcomes: vec![outcome],
                removed: Vec::new(),
            };
            let mut lines = Vec::new();
            if !ok {
                lines.push(format!("error: zone {origin} failed to load"));
            }
            lines.extend(report.lines());
            Reply { ok, lines }
        }
        Ok(Err(crate::zones::ZoneReloadError::NotConfigured)) => unknown_zone(&origin),
        Err(e) => Reply::error(format!("zone reload failed: {e}")),
    }
}

/// `zone sign ZONE`: a signing pass now, which also reads the key files
/// again (after `bulwark keys rollover` or `bulwark keys ds-seen`).
async fn zone_sign(plane: Arc<dyn ControlPlane>, args: Vec<String>) -> Reply {
    let origin = match parse_zone(args.first().map_or("", String::as_str)) {
        Ok(o) => o,
        Err(r) => return r,
    };
    tracing::info!(zone = %origin, "signing pass requested");
    let task = {
        let (origin, zones) = (origin.clone(), Arc::clone(plane.zones()));
        tokio::task::spawn_blocking(move || zones.resign_now(&origin))
    };
    match task.await {
        Ok(Ok(Some(()))) => match plane.zones().info(&origin) {
            Some(info) => Reply::ok(zone_status_lines(&info)),
            None => unknown_zone(&origin),
        },
        Ok(Ok(None)) => Reply::error(format!(
            "zone {origin} is not signed by bulwark (no dnssec_policy)"
        )),
        Ok(Err(problems)) => Reply {
            ok: false,
            lines: std::iter::once(format!(
                "error: signing {origin} failed; the previous copy is served"
            ))
            .chain(problems.into_iter().map(|p| format!("  {p}")))
            .collect(),
        },
        Err(e) => Reply::error(format!("zone sign failed: {e}")),
    }
}

fn stats(plane: &dyn ControlPlane, args: &[String]) -> Reply {
    let families = plane.metrics();
    match args.first().map(String::as_str) {
        None => Reply::ok(
            crate::stats::render::text(&families)
                .lines()
                .map(str::to_string)
                .collect(),
        ),
        Some("--json" | "json") => Reply::ok(vec![crate::stats::render::json(&families)]),
        Some(other) => Reply::error(format!(
            "stats: unknown option `{other}` (usage: stats [--json])"
        )),
    }
}

fn serial_text(serial: Option<u32>) -> String {
    serial.map_or_else(|| "-".to_string(), |s| s.to_string())
}

/// A time as RFC 3339 UTC, to the second: `2026-11-22T09:00:00Z`.
fn rfc3339(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day), after
/// Howard Hinnant's `civil_from_days`, for days on or after the epoch.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Shift the epoch to 0000-03-01 so leap days fall at the end of a year.
    let z = days.saturating_add(719_468);
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe
        .saturating_sub(doe / 1460)
        .saturating_add(doe / 36_524)
        .saturating_sub(doe / 146_096))
        / 365;
    let doy = doe.saturating_sub(
        (365u64.saturating_mul(yoe))
            .saturating_add(yoe / 4)
            .saturating_sub(yoe / 100),
    );
    let mp = (5u64.saturating_mul(doy).saturating_add(2)) / 153;
    let d = doy
        .saturating_sub((153u64.saturating_mul(mp).saturating_add(2)) / 5)
        .saturating_add(1);
    let m = if mp < 10 {
        mp.saturating_add(3)
    } else {
        mp.saturating_sub(9)
    };
    let y = yoe
        .saturating_add(era.saturating_mul(400))
        .saturating_add(u64::from(m <= 2));
    (y, m, d)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn longest_command_words_win() {
        assert_eq!(
            find(&["zone", "status", "a."]).unwrap().words,
            ["zone", "status"]
        );
        assert_eq!(find(&["stats", "--json"]).unwrap().words, ["stats"]);
        assert!(find(&["zone"]).is_none());
        assert!(find(&["frobnicate"]).is_none());
        assert!(find(&[]).is_none());
    }

    #[test]
    fn every_command_has_a_unique_word_sequence() {
        for (i, a) in COMMANDS.iter().enumerate() {
            for b in COMMANDS.iter().skip(i + 1) {
                assert_ne!(a.words, b.words);
            }
            assert!(a.min_args <= a.max_args);
        }
    }

    #[test]
    fn wire_reply_starts_with_ok_or_error() {
        assert_eq!(Reply::ok(vec!["a".into()]).to_wire(), "ok\na\n");
        assert_eq!(Reply::error("no").to_wire(), "error: no\n");
        let bare = Reply {
            ok: false,
            lines: vec!["detail".into()],
        };
        assert_eq!(bare.to_wire(), "error: failed\ndetail\n");
    }

    #[test]
    fn times_are_rfc3339_utc() {
        let t = |s: u64| rfc3339(SystemTime::UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(t(0), "1970-01-01T00:00:00Z");
        assert_eq!(t(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(t(1_798_761_599), "2026-12-31T23:59:59Z");
        assert_eq!(t(4_107_542_400), "2100-03-01T00:00:00Z");
    }

    #[test]
    fn zone_status_has_placeholder_lines_for_later_features() {
        let info = ZoneInfo {
            origin: "example.com.".parse().unwrap(),
            file: "/z/example.com.zone".to_string(),
            role: "primary",
            timers: None,
            served: Some(crate::zones::ServedCopy {
                serial: Some(7),
                names: 3,
                loaded_at: SystemTime::UNIX_EPOCH,
                file_modified: None,
                signed: None,
            }),
        };
        assert_eq!(
            zone_status_lines(&info),
            [
                "zone: example.com.",
                "role: primary",
                "serial: 7",
                "file: /z/example.com.zone",
                "loaded from: file",
                "loaded at: 1970-01-01T00:00:00Z",
                "file modified: -",
                "names: 3",
                "dnssec: unsigned",
            ]
        );
        assert_eq!(zone_list(&[info]), ["example.com. 7 /z/example.com.zone"]);
    }
}
