//! `bulwark serve`: wires configuration, zones, sockets, signals and the control
//! socket together, and runs until SIGTERM, SIGINT or `ctl stop`.

use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context;
use arc_swap::ArcSwap;
use bulwark_auth::{AnswerConfig, CookiePolicy};
use bulwark_guard::{Rrl, RrlConfig};
use bulwark_net::{
    bind_tcp, bind_udp, serve_tcp, BoundTcp, Fragmentation, NetError, Shutdown, TcpConfig,
    TcpStats, UdpConfig, UdpListeners, UdpWorkers,
};
use tokio::signal::unix::{signal, SignalKind};

use crate::cli::ServeArgs;
use crate::clock::CoarseClock;
use crate::commands::{ControlPlane, Status, TcpCounts};
use crate::config;
use crate::cookie_secrets::{self, CookieSecrets};
use crate::demo::{self, DemoZone};
use crate::handler::{ListenerAcls, ServerHandler, Shared};
use crate::logging;
use crate::recursion::Recursion;
use crate::settings::{Settings, ZoneAcls, ZoneSpec};
use crate::stats::StatsRegistry;
use crate::tap::TapSource;
use crate::via::Via;
use crate::zones::Zones;

/// Re-signs signed zones when their pass is due (see `zone_signer`). It looks
/// again at least every minute, so zones added by a reload are picked up.
async fn resign_forever(app: Arc<App>) {
    const LONGEST_WAIT: u64 = 60;
    loop {
        let now = crate::signing::unix_now();
        let wait = app
            .zones
            .next_resign()
            .map_or(LONGEST_WAIT, |due| due.saturating_sub(now))
            .clamp(1, LONGEST_WAIT);
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_secs(wait)) => {}
            _ = app.shutdown.wait() => return,
        }
        let pass = Arc::clone(&app);
        let now = crate::signing::unix_now();
        match tokio::task::spawn_blocking(move || pass.zones.resign_due(now)).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(zones = n, "signing pass done"),
            Err(e) => tracing::error!(error = %e, "signing pass failed"),
        }
    }
}

/// Where the zone list comes from on a reload.
#[derive(Debug)]
pub(crate) enum ZoneSource {
    /// Re-read the configuration file and flags.
    Config(Box<ServeArgs>),
    /// The built-in demo zone.
    Demo(Vec<ZoneSpec>),
}

/// The running server, shared by the signal handler and the control socket.
#[derive(Debug)]
pub struct App {
    pub(crate) source: ZoneSource,
    /// The addresses asked for at start, to notice a reload that changes them.
    pub(crate) listen: Vec<SocketAddr>,
    pub(crate) zones: Arc<Zones>,
    /// The TSIG keys signed requests are checked against; swapped on reload.
    pub(crate) keyring: Arc<ArcSwap<bulwark_xfr::tsig::KeyRing>>,
    pub(crate) shutdown: Shutdown,
    pub(crate) udp: Mutex<Option<UdpWorkers>>,
    /// The AF_XDP paths (`[[xdp]]`), one per interface.
    pub(crate) xdp: Mutex<Vec<bulwark_net::XdpWorkers>>,
    pub(crate) tcp_stats: Arc<TcpStats>,
    /// DNS over TLS connections; counted only when a DoT listener is bound.
    pub(crate) tls_stats: Arc<TcpStats>,
    /// DNS over HTTPS connections (HTTP/2, HTTP/1.1 and HTTP/3), likewise.
    pub(crate) https_stats: Arc<TcpStats>,
    /// DNS over QUIC connections, likewise.
    pub(crate) quic_stats: Arc<TcpStats>,
    /// The encrypted listeners' addresses and kinds, for `ctl status`.
    pub(crate) encrypted_bound: Mutex<Vec<(SocketAddr, &'static str)>>,
    /// Each DoT listener's certificate, read again on reload.
    pub(crate) tls_certificates: Mutex<Vec<Arc<bulwark_net::ServerCertificate>>>,
    pub(crate) started: Instant,
    /// Swapped on reload with the zone list.
    pub(crate) zone_acls: Arc<ArcSwap<ZoneAcls>>,
    pub(crate) rrl: Option<Arc<Rrl>>,
    pub(crate) cookies: Option<Arc<CookieSecrets>>,
    pub(crate) stats: Arc<StatsRegistry>,
    /// `None` when dnstap is off.
    pub(crate) dnstap: Option<Arc<TapSource>>,
    /// Per-packet events, counted for metrics and logged a few a second.
    pub(crate) reporter: Arc<crate::diagnostics::Reporter>,
    /// The worker count and bound addresses, for `ctl status`.
    pub(crate) threads: usize,
    pub(crate) bound: Mutex<Vec<SocketAddr>>,
    /// `None` when `[resolver]` is absent. Its cache lives as long as the
    /// server: a reload keeps it.
    pub(crate) recursion: Option<Recursion>,
    pub(crate) clock: CoarseClock,
    /// Started with `--test-clock`: `ctl test-clock advance` may move it.
    pub(crate) test_clock: bool,
}

impl App {
    /// Re-reads the zone list and reloads every zone on a blocking thread.
    pub async fn reload(self: &Arc<Self>) -> (bool, Vec<String>) {
        tracing::info!("reloading zones");
        crate::service::notify_reloading();
        let mut result = self.reload_zones().await;
        let certificates = self
            .tls_certificates
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default();
        let failed = crate::encrypted::reload_certificates(&certificates);
        if !failed.is_empty() {
            result.0 = false;
            result.1.extend(failed);
        }
        if let Some(tap) = &self.dnstap {
            tap.rotate();
        }
        crate::service::notify_ready();
        result
    }

    async fn reload_zones(self: &Arc<Self>) -> (bool, Vec<String>) {
        let specs = match &self.source {
            ZoneSource::Demo(specs) => specs.clone(),
            ZoneSource::Config(args) => match config::load(args) {
                Ok(s) => {
                    if s.listen != self.listen {
                        tracing::warn!("listen addresses changed in the configuration; they take effect on restart");
                    }
                    self.zone_acls.store(Arc::new(s.zone_acls));
                    self.keyring.store(Arc::clone(&s.keyring));
                    match crate::upstream_tls::prepare(&s.tls_remotes) {
                        Ok(tls) => crate::replication::client::set_tls_remotes(tls),
                        Err(e) => {
                            tracing::error!(error = %format!("{e:#}"), "TLS settings of the primaries not reloaded");
                        }
                    }
                    s.zones
                }
                Err(e) => {
                    for p in &e.problems {
                        tracing::error!("{p}");
                    }
                    tracing::warn!("configuration has errors; nothing reloaded");
                    let mut lines =
                        vec!["error: configuration has errors; nothing reloaded".to_string()];
                    lines.extend(e.problems);
                    return (false, lines);
                }
            },
        };
        let app = Arc::clone(self);
        let report = match tokio::task::spawn_blocking(move || app.zones.load(&specs)).await {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, "zone reload task failed");
                return (false, vec![format!("error: reload failed: {e}")]);
            }
        };
        let ok = report.all_loaded();
        tracing::info!(zones = self.zones.current().len(), ok, "reload done");
        let mut lines = Vec::new();
        if !ok {
            lines.push("error: some zones failed to load".to_string());
        }
        lines.extend(report.lines());
        (ok, lines)
    }
}

impl App {
    /// Each AF_XDP path: how it runs and what it counted.
    fn xdp_figures(&self) -> Vec<(bulwark_net::XdpInfo, bulwark_net::XdpStats)> {
        self.xdp
            .lock()
            .map(|g| g.iter().map(|w| (w.info().clone(), w.stats())).collect())
            .unwrap_or_default()
    }

    /// Every statistic, read from the parts that count.
    fn metric_families(&self) -> Vec<crate::stats::Family> {
        let udp = self
            .udp
            .lock()
            .ok()
            .and_then(|g| g.as_ref().map(UdpWorkers::stats))
            .unwrap_or_default();
        let encrypted_on = self.tls_certificates.lock().is_ok_and(|c| !c.is_empty());
        crate::stats::collect::families(&crate::stats::collect::Sources {
            registry: &self.stats,
            udp,
            xdp: self.xdp_figures(),
            tcp: &self.tcp_stats,
            tls: encrypted_on.then_some(&*self.tls_stats),
            https: encrypted_on.then_some(&*self.https_stats),
            quic: encrypted_on.then_some(&*self.quic_stats),
            events: self.reporter.counts(),
            rrl: self.rrl.as_ref().map(|r| r.stats()),
            cookie_rotations: self
                .cookies
                .as_ref()
                .map(|c| c.rotations.load(std::sync::atomic::Ordering::Relaxed)),
            dnstap: self.dnstap.as_ref().map(|t| t.counters()),
            zones: &self.zones,
            uptime: self.started.elapsed(),
            resolver: self.recursion.as_ref().map(Recursion::figures),
        })
    }
}

impl ControlPlane for App {
    fn status(&self) -> Status {
        Status {
            uptime: self.started.elapsed(),
            listen: self.bound.lock().map(|b| b.clone()).unwrap_or_default(),
            encrypted: self
                .encrypted_bound
                .lock()
                .map(|b| b.clone())
                .unwrap_or_default(),
            encrypted_counts: [
                TcpCounts::of(&self.tls_stats),
                TcpCounts::of(&self.https_stats),
                TcpCounts::of(&self.quic_stats),
            ],
            udp_workers: self.threads,
            control: crate::control::socket_in_use().map(std::path::Path::to_path_buf),
            prometheus: crate::metrics_http::listening(),
            udp: self
                .udp
                .lock()
                .ok()
                .and_then(|g| g.as_ref().map(UdpWorkers::stats)),
            tcp: TcpCounts::of(&self.tcp_stats),
            xdp: self.xdp_figures(),
            rrl: self.rrl.as_ref().map(|r| r.stats()),
            cookies: self.cookies.as_ref().map(|c| {
                (
                    c.rotating,
                    c.rotations.load(std::sync::atomic::Ordering::Relaxed),
                )
            }),
        }
    }

    fn zones(&self) -> &Arc<Zones> {
        &self.zones
    }

    fn metrics(&self) -> Vec<crate::stats::Family> {
        self.metric_families()
    }

    fn stop(&self) {
        self.shutdown.trigger();
    }

    fn reload_configuration(
        self: Arc<Self>,
    ) -> Pin<Box<dyn Future<Output = (bool, Vec<String>)> + Send>> {
        Box::pin(async move { App::reload(&self).await })
    }

    fn resolver_cache(&self) -> Option<&bulwark_resolver::Cache> {
        self.recursion.as_ref().map(|r| &**r.cache())
    }

    fn trust_anchors(&self) -> Option<Vec<String>> {
        self.recursion.as_ref().map(|r| r.trust_anchor_report())
    }

    fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    fn advance_test_clock(&self, seconds: u64) -> Result<u64, String> {
        if !self.test_clock {
            return Err(
                "the clock is real: only a server started with --test-clock may be moved"
                    .to_string(),
            );
        }
        self.clock.advance(seconds);
        tracing::info!(seconds, now = self.clock.now(), "test clock advanced");
        Ok(self.clock.now())
    }
}

/// The shared rate limiter, or `None` when RRL is off. Its hash is keyed at
/// random so that nobody can aim their queries at one bucket.
fn rate_limiter(config: &RrlConfig) -> anyhow::Result<Option<Arc<Rrl>>> {
    if config.responses_per_second == 0 {
        return Ok(None);
    }
    let seed =
        u64::from_ne_bytes(cookie_secrets::random_bytes().context("cannot seed the rate limiter")?);
    Ok(Some(Arc::new(Rrl::new(RrlConfig {
        seed,
        ..config.clone()
    }))))
}

/// The listeners' ACLs keyed by the addresses actually bound (`bound` is in the
/// order of `settings.listen`; a configured port 0 becomes the real port).
/// The bound addresses of the configured listen addresses `configured`
/// (port 0 is replaced by the port the kernel gave).
fn bound_addresses(
    settings: &Settings,
    configured: &[SocketAddr],
    bound: &[SocketAddr],
) -> Vec<SocketAddr> {
    configured
        .iter()
        .filter_map(|c| {
            let i = settings.listen.iter().position(|a| a == c)?;
            bound.get(i).copied()
        })
        .collect()
}

fn listener_acls(settings: &Settings, bound: &[SocketAddr]) -> ListenerAcls {
    let by_address = settings
        .listener_acls
        .iter()
        .filter_map(|(configured, acl)| {
            let i = settings.listen.iter().position(|a| a == configured)?;
            Some((*bound.get(i)?, Arc::clone(acl)))
        })
        .collect();
    ListenerAcls {
        all: settings.listener_acl.clone(),
        by_address,
    }
}

/// RFC 7828 §3.1: the edns-tcp-keepalive TIMEOUT is in units of 100 ms.
pub(crate) fn keepalive_units(idle: std::time::Duration) -> u16 {
    u16::try_from(idle.as_millis() / 100).unwrap_or(u16::MAX)
}

/// Fresh ports tried for a listen address of port 0 whose UDP side is taken.
const EPHEMERAL_PORT_TRIES: u32 = 8;

/// Binds TCP, then UDP (one socket per worker) on every address. TCP goes first:
/// its listener does not share ports, so a second server on the same address
/// fails here instead of silently splitting the UDP traffic through SO_REUSEPORT.
///
/// A port of 0 takes the port the kernel gives the TCP listener for UDP too
/// (one port per address, as clients expect). When some other socket already
/// holds that port for UDP, a fresh TCP port is taken (while the old one is
/// still held, so the kernel cannot hand it back) and UDP tried again.
fn bind_all(
    addrs: &[SocketAddr],
    threads: usize,
) -> Result<(UdpListeners, Vec<BoundTcp>), NetError> {
    bind_all_with(addrs, threads, bind_udp)
}

/// [`bind_all`] with the UDP side's binding passed in, so that a test can
/// find a port taken.
fn bind_all_with(
    addrs: &[SocketAddr],
    threads: usize,
    bind_udp: impl Fn(&[SocketAddr], usize) -> Result<UdpListeners, NetError>,
) -> Result<(UdpListeners, Vec<BoundTcp>), NetError> {
    let mut tcp = addrs
        .iter()
        .map(|a| bind_tcp(*a))
        .collect::<Result<Vec<_>, _>>()?;
    let mut fresh_ports = 0;
    loop {
        let bound: Vec<SocketAddr> = tcp
            .iter()
            .zip(addrs)
            .map(|(l, a)| l.local_addr().unwrap_or(*a))
            .collect();
        let err = match bind_udp(&bound, threads) {
            Ok(udp) => return Ok((udp, tcp)),
            Err(e) => e,
        };
        let taken_ephemeral = match &err {
            NetError::Bind { proto, addr, .. } if *proto == "udp" && err.is_addr_in_use() => bound
                .iter()
                .zip(addrs)
                .position(|(b, configured)| b == addr && configured.port() == 0),
            _ => None,
        };
        let Some(i) = taken_ephemeral.filter(|_| fresh_ports < EPHEMERAL_PORT_TRIES) else {
            return Err(err);
        };
        fresh_ports = fresh_ports.saturating_add(1);
        let (Some(configured), Some(slot)) = (addrs.get(i), tcp.get_mut(i)) else {
            return Err(err);
        };
        tracing::debug!(port = ?bound.get(i), "UDP port taken; trying another for port 0");
        *slot = bind_tcp(*configured)?;
    }
}

/// The demo's listener: 127.0.0.1:5300, or the next free port.
fn bind_demo(threads: usize) -> Result<(UdpListeners, Vec<BoundTcp>), NetError> {
    let mut last = None;
    for offset in 0..demo::DEMO_PORT_TRIES {
        let port = demo::DEMO_PORT.saturating_add(offset);
        match bind_all(&[SocketAddr::new(demo::DEMO_ADDR, port)], threads) {
            Err(e) if e.is_addr_in_use() => last = Some(e),
            r => return r,
        }
    }
    Err(last
        .unwrap_or_else(|| NetError::Listener(std::io::Error::from(std::io::ErrorKind::AddrInUse))))
}

pub fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let demo_mode = args.config.is_none() && args.zone.is_empty();
    let settings: Settings = match config::load(&args) {
        Ok(s) => s,
        Err(e) => {
            for p in &e.problems {
                eprintln!("{p}");
            }
            anyhow::bail!("invalid configuration");
        }
    };
    logging::init(settings.log_format, &settings.log_level)?;
    if let Some(file) = &settings.config_file {
        tracing::info!(file = %file.display(), "configuration loaded");
    }
    // Emptied now, before privileges are dropped: see `ready_file`.
    let mut ready_file = match &args.ready_file {
        Some(path) => Some(crate::ready_file::ReadyFile::open(path)?),
        None => None,
    };

    let demo_zone = if demo_mode {
        Some(DemoZone::write().context("cannot write the demo zone to a temporary file")?)
    } else {
        None
    };
    let source = match &demo_zone {
        Some(d) => ZoneSource::Demo(d.spec().into_iter().collect()),
        None => ZoneSource::Config(Box::new(args.clone())),
    };
    let initial_specs = match &source {
        ZoneSource::Demo(specs) => specs.clone(),
        ZoneSource::Config(_) => settings.zones.clone(),
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(settings.threads.max(1))
        .thread_name("bulwark-rt")
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let _entered = runtime.enter();

    // Signals first: SIGHUP's default action would kill a server that is still loading.
    let mut sighup = signal(SignalKind::hangup()).context("SIGHUP handler")?;
    let mut sigterm = signal(SignalKind::terminate()).context("SIGTERM handler")?;
    let mut sigint = signal(SignalKind::interrupt()).context("SIGINT handler")?;

    let shutdown = Shutdown::new()?;
    let store = match &settings.storage {
        Some(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            let store = bulwark_store::Store::open(path)
                .map_err(|e| anyhow::anyhow!("cannot open the storage: {e}"))?;
            tracing::info!(file = %path.display(), "storage opened");
            Some(Arc::new(store))
        }
        None => None,
    };
    let clock = match args.test_clock {
        Some(start) => {
            tracing::warn!(start, "test clock: the server's time starts at {start} and moves only with it or `ctl test-clock`");
            CoarseClock::starting_at(start)
        }
        None => CoarseClock::new(),
    };
    let rrl = rate_limiter(&settings.rrl)?;
    let dnstap = match &settings.dnstap {
        Some(d) => Some(TapSource::start(d).context("cannot start dnstap")?),
        None => None,
    };
    let app = Arc::new(App {
        source,
        listen: settings.listen.clone(),
        zones: Arc::new(Zones::new(store.clone())),
        keyring: Arc::new(ArcSwap::new(Arc::clone(&settings.keyring))),
        shutdown: shutdown.clone(),
        udp: Mutex::new(None),
        xdp: Mutex::new(Vec::new()),
        tcp_stats: Arc::new(TcpStats::default()),
        tls_stats: Arc::new(TcpStats::default()),
        https_stats: Arc::new(TcpStats::default()),
        quic_stats: Arc::new(TcpStats::default()),
        encrypted_bound: Mutex::new(Vec::new()),
        tls_certificates: Mutex::new(Vec::new()),
        started: Instant::now(),
        zone_acls: Arc::new(ArcSwap::from_pointee(settings.zone_acls.clone())),
        rrl: rrl.clone(),
        cookies: if settings.cookies.enabled {
            Some(Arc::new(
                CookieSecrets::new(&settings.cookies).context("cannot make a cookie secret")?,
            ))
        } else {
            None
        },
        stats: StatsRegistry::new(&settings.statistics),
        dnstap: dnstap.clone(),
        reporter: Arc::new(crate::diagnostics::Reporter::new(clock.clone())),
        threads: settings.threads,
        bound: Mutex::new(Vec::new()),
        recursion: match &settings.resolver {
            Some(r) => {
                let _runtime = runtime.enter();
                let tap = dnstap.as_ref().and_then(|t| t.resolver_tap());
                Some(Recursion::start(
                    r,
                    clock.clone(),
                    tap,
                    rrl.clone(),
                    store.clone(),
                    &shutdown,
                )?)
            }
            None => None,
        },
        clock: clock.clone(),
        test_clock: args.test_clock.is_some(),
    });
    // Subscribed before the first load, so the load's events reach it.
    // Before the first refresh: primaries asked over TLS (XoT).
    crate::replication::client::set_tls_remotes(crate::upstream_tls::prepare(
        &settings.tls_remotes,
    )?);
    let replication = crate::replication::Replication::start(&app.zones, &shutdown);
    let report = app.zones.load(&initial_specs);
    tracing::info!(
        zones = app.zones.current().len(),
        failed = report
            .outcomes
            .len()
            .saturating_sub(app.zones.current().len()),
        "zones loaded"
    );

    let control = match &settings.control_socket {
        Some(path) => Some((
            crate::control::bind(path, settings.control_mode)?,
            path.clone(),
        )),
        None => None,
    };
    let prometheus = match &settings.prometheus {
        Some(p) => Some(crate::metrics_http::bind(p)?),
        None => None,
    };

    let (udp, tcp) = if demo_mode && !settings.listen_given {
        bind_demo(settings.threads)?
    } else {
        bind_all(&settings.listen, settings.threads)?
    };
    let fragmentation = Fragmentation::for_max_payload(settings.max_udp_payload);
    if fragmentation != Fragmentation::Never {
        udp.set_fragmentation(fragmentation)?;
    }
    let encrypted = if demo_mode && !settings.listen_given {
        crate::encrypted::TlsListeners::bind_demo()?
    } else {
        crate::encrypted::TlsListeners::bind(&settings)?
    };
    let encrypted_addrs = encrypted.local_addrs();
    let first_of = |kind: &str| {
        encrypted_addrs
            .iter()
            .find(|(_, k)| *k == kind)
            .map(|(a, _)| *a)
    };
    if let Ok(mut c) = app.tls_certificates.lock() {
        *c = encrypted.certificates();
    }
    if let Ok(mut b) = app.encrypted_bound.lock() {
        b.clone_from(&encrypted_addrs);
    }
    // AF_XDP needs CAP_NET_ADMIN and CAP_BPF: attached before they go.
    let xdp_bound = settings
        .xdp
        .iter()
        .map(bulwark_net::bind_xdp)
        .collect::<Result<Vec<_>, _>>()?;
    let addrs = udp.local_addrs().to_vec();
    if let Ok(mut b) = app.bound.lock() {
        b.clone_from(&addrs);
    }
    // Everything privileged (sockets on port 53, the control socket, log files)
    // is open: from here on the server runs as the configured user.
    let control_path: Vec<&std::path::Path> = settings
        .control_socket
        .iter()
        .map(|p| p.as_path())
        .collect();
    crate::privileges::drop_privileges(settings.run_as.as_ref(), &control_path)?;

    let answer_config = Arc::new(AnswerConfig {
        max_udp_payload: settings.max_udp_payload,
        chaos: settings.chaos.clone(),
        nsid: settings.nsid.clone(),
        cookies: CookiePolicy {
            require_for_udp_above: settings.cookies.require_for_udp_above,
        },
        tcp_keepalive: Some(keepalive_units(settings.tcp_idle_timeout)),
    });
    let shared = Shared {
        config: answer_config,
        zones: app.zones.snapshot(),
        listener_acls: Arc::new(listener_acls(&settings, &addrs)),
        zone_acls: Arc::clone(&app.zone_acls),
        rrl: app.rrl.clone(),
        cookies: app.cookies.as_ref().map(|c| Arc::clone(&c.current)),
        clock,
        stats: Arc::clone(&app.stats),
        dnstap: app.dnstap.clone(),
        query_log: settings.query_log,
        replication: crate::replication::serve::ReplicationShared {
            zones: Arc::clone(&app.zones),
            keyring: Arc::clone(&app.keyring),
            secondaries: Arc::clone(&replication.secondaries),
            runtime: runtime.handle().clone(),
            reporter: Arc::clone(&app.reporter),
        },
        reporter: Arc::clone(&app.reporter),
        recursion: app.recursion.clone().map(|r| {
            let quiet = bound_addresses(&settings, &settings.listeners_without_recursion, &addrs);
            r.without_recursion_on(quiet)
        }),
    };
    runtime.spawn(shared.clock.clone().run(shutdown.clone()));
    runtime.spawn(Arc::clone(&app.reporter).run_summaries(shutdown.clone()));
    let make_udp_handler =
        |_| ServerHandler::new(&shared, Via::Udp).with_response_cache(settings.response_cache);
    // Tasks beside the resolver's driver, or threads of their own
    // (bulwark_net::udp, docs/configuration.md `udp_workers`).
    let workers = if settings.udp_workers == crate::settings::UdpWorkerMode::Runtime {
        udp.spawn_tasks(
            runtime.handle(),
            &UdpConfig::default(),
            make_udp_handler,
            &shutdown,
        )?
    } else {
        udp.spawn(&UdpConfig::default(), make_udp_handler, &shutdown)?
    };
    if let Ok(mut g) = app.udp.lock() {
        *g = Some(workers);
    }
    for bound in xdp_bound {
        let info = bound.info();
        let make =
            |_| ServerHandler::new(&shared, Via::Udp).with_response_cache(settings.response_cache);
        let workers = bound.spawn(make, &shutdown)?;
        tracing::info!(
            interface = %info.interface,
            queues = ?info.queues,
            native = info.native,
            zero_copy = info.zero_copy,
            "serving UDP through AF_XDP"
        );
        if let Ok(mut g) = app.xdp.lock() {
            g.push(workers);
        }
    }
    let tcp_config = TcpConfig {
        idle_timeout: settings.tcp_idle_timeout,
        max_connections: settings.tcp_max_connections,
        max_connections_per_client: settings.tcp_limits.max_connections_per_client,
        max_queries_per_connection: settings.tcp_limits.max_queries_per_connection,
        message_timeout: settings.tcp_limits.message_timeout,
        ..TcpConfig::default()
    };
    {
        let shared = shared.clone();
        let make = move || ServerHandler::new(&shared, Via::Tcp);
        let (stats, shutdown) = (Arc::clone(&app.tcp_stats), shutdown.clone());
        runtime.spawn(async move {
            if let Err(e) = serve_tcp(tcp, tcp_config, make, stats, shutdown.clone()).await {
                tracing::error!(error = %e, "TCP listeners failed; stopping");
                shutdown.trigger();
            }
        });
    }
    crate::encrypted::serve(
        encrypted,
        &settings,
        &shared,
        [
            Arc::clone(&app.tls_stats),
            Arc::clone(&app.https_stats),
            Arc::clone(&app.quic_stats),
        ],
        &shutdown,
        runtime.handle(),
    )?;
    if let Some(secrets) = &app.cookies {
        runtime.spawn(cookie_secrets::rotate_forever(
            Arc::clone(secrets),
            settings.cookies.rotate_after,
            shutdown.clone(),
        ));
    }
    if let Some((listener, path)) = control {
        tracing::info!(socket = %path.display(), "control socket ready");
        let plane: Arc<dyn ControlPlane> = Arc::clone(&app) as Arc<dyn ControlPlane>;
        runtime.spawn(crate::control::serve(listener, plane, shutdown.clone()));
    }
    if let Some(listener) = prometheus {
        let app = Arc::clone(&app);
        runtime.spawn(crate::metrics_http::serve(
            listener,
            move || app.metrics(),
            shutdown.clone(),
        ));
    }
    runtime.spawn(resign_forever(Arc::clone(&app)));
    {
        let app = Arc::clone(&app);
        runtime.spawn(async move {
            loop {
                tokio::select! {
                    _ = sighup.recv() => {
                        tracing::info!("SIGHUP: reloading");
                        let _ = app.reload().await;
                    }
                    _ = sigterm.recv() => {
                        tracing::info!("SIGTERM: stopping");
                        app.shutdown.trigger();
                        return;
                    }
                    _ = sigint.recv() => {
                        tracing::info!("SIGINT: stopping");
                        app.shutdown.trigger();
                        return;
                    }
                    _ = app.shutdown.wait() => return,
                }
            }
        });
    }

    for a in &addrs {
        tracing::info!(address = %a, threads = settings.threads, "listening on UDP and TCP");
    }
    for (a, kind) in &encrypted_addrs {
        tracing::info!(address = %a, kind, "listening for encrypted DNS");
    }
    if demo_mode {
        if let Some(a) = addrs.first() {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(
                demo::banner(
                    *a,
                    demo::Encrypted {
                        dot: first_of("tls"),
                        doh: first_of("https"),
                        doq: first_of("quic"),
                        doh3: first_of("h3"),
                    },
                )
                .as_bytes(),
            );
            let _ = out.flush();
        }
    }
    tracing::info!("ready");
    if let Some(file) = ready_file.as_mut() {
        file.write_ready(&crate::ready_file::Bound {
            dns: &addrs,
            encrypted: &encrypted_addrs,
            prometheus: crate::metrics_http::listening(),
            control: settings.control_socket.as_deref(),
        });
    }
    crate::service::notify_ready();

    runtime.block_on(shutdown.wait());
    crate::service::notify_stopping();
    if let Some(file) = ready_file.take() {
        file.withdraw();
    }
    let xdp: Vec<_> = app
        .xdp
        .lock()
        .map(|mut g| g.drain(..).collect())
        .unwrap_or_default();
    for w in xdp {
        let interface = w.info().interface.clone();
        let s = w.join();
        tracing::info!(
            %interface,
            received = s.received,
            responded = s.responded,
            "AF_XDP workers stopped"
        );
    }
    let workers = app.udp.lock().ok().and_then(|mut g| g.take());
    if let Some(w) = workers {
        let s = w.join();
        tracing::info!(
            received = s.received,
            responded = s.responded,
            "UDP workers stopped"
        );
    }
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    // Changes not yet in their zone files are in the journal too; writing
    // them now spares the next start replaying them.
    crate::replication::flush_files(&app.zones);
    if let Some(tap) = &app.dnstap {
        tap.stop();
    }
    if let Some(path) = &settings.control_socket {
        let _ = std::fs::remove_file(path);
    }
    drop(demo_zone);
    tracing::info!("stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )]
    use super::*;

    #[test]
    fn port_zero_binds_udp_and_tcp_on_one_port_per_address() {
        let addrs: Vec<SocketAddr> = vec![
            "127.0.0.1:0".parse().unwrap(),
            "127.0.0.2:0".parse().unwrap(),
        ];
        let (udp, tcp) = bind_all(&addrs, 2).unwrap();
        let udp_addrs = udp.local_addrs();
        assert_eq!(udp_addrs.len(), 2);
        for ((u, t), asked) in udp_addrs.iter().zip(&tcp).zip(&addrs) {
            assert_ne!(u.port(), 0);
            assert_eq!(*u, t.local_addr().unwrap());
            assert_eq!(u.ip(), asked.ip());
        }
    }

    /// What `bind_udp` says when another socket holds the port for UDP
    /// (`bulwark-net` checks that it says so).
    fn udp_taken(addr: SocketAddr) -> NetError {
        NetError::Bind {
            proto: "udp",
            addr,
            cause: std::io::ErrorKind::AddrInUse.into(),
        }
    }

    #[test]
    fn a_fixed_port_already_held_for_udp_is_an_error_not_another_port() {
        // A port nobody holds for TCP, so that only UDP is taken.
        let port = bind_tcp("127.0.0.1:0".parse().unwrap())
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let tries = std::cell::Cell::new(0);
        let err = bind_all_with(&[addr], 1, |addrs, _| {
            tries.set(tries.get() + 1);
            Err(udp_taken(addrs[0]))
        })
        .unwrap_err();
        assert!(err.is_addr_in_use(), "{err}");
        assert_eq!(tries.get(), 1, "a configured port is not replaced");
    }

    #[test]
    fn port_zero_whose_udp_side_is_taken_moves_both_to_a_fresh_port() {
        let addrs: Vec<SocketAddr> = vec!["127.0.0.1:0".parse().unwrap()];
        let tried = std::cell::RefCell::new(Vec::new());
        let (udp, tcp) = bind_all_with(&addrs, 1, |bound, threads| {
            tried.borrow_mut().push(bound[0]);
            if tried.borrow().len() < 3 {
                return Err(udp_taken(bound[0]));
            }
            bind_udp(bound, threads)
        })
        .unwrap();
        let tried = tried.into_inner();
        assert_eq!(tried.len(), 3);
        assert_ne!(tried[0].port(), tried[1].port(), "a fresh TCP port");
        assert_eq!(udp.local_addrs()[0], tcp[0].local_addr().unwrap());
        assert_eq!(udp.local_addrs()[0], tried[2]);
    }

    #[test]
    fn port_zero_gives_up_after_a_few_fresh_ports() {
        let addrs: Vec<SocketAddr> = vec!["127.0.0.1:0".parse().unwrap()];
        let tries = std::cell::Cell::new(0u32);
        let err = bind_all_with(&addrs, 1, |bound, _| {
            tries.set(tries.get() + 1);
            Err(udp_taken(bound[0]))
        })
        .unwrap_err();
        assert!(err.is_addr_in_use(), "{err}");
        assert_eq!(tries.get(), EPHEMERAL_PORT_TRIES + 1);
    }
}
