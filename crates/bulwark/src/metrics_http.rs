//! The Prometheus endpoint: `GET /metrics` over HTTP/1.1 on the address in
//! `[prometheus] listen` (off by default). The HTTP side (a small HTTP/1.1
//! responder with its limits) is `bulwark_net`'s; the configuration and the
//! body (the statistics in the Prometheus text format) are ours.

use std::net::SocketAddr;
use std::sync::OnceLock;

use bulwark_net::{bind_metrics, serve_metrics, MetricsBody, MetricsListener, Shutdown};
use serde::Deserialize;
use toml::Spanned;

use crate::defences::Locate;

/// `[prometheus]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrometheusSection {
    pub listen: Option<Spanned<String>>,
}

/// `[prometheus]`, validated; `None` in `Settings` when off.
#[derive(Debug, Clone)]
pub struct PrometheusSettings {
    pub listen: SocketAddr,
}

impl PrometheusSettings {
    /// Off unless `listen` is given; `listen` is `IP:PORT` (`[IPv6]:PORT`).
    pub fn resolve(
        s: &PrometheusSection,
        loc: &dyn Locate,
        problems: &mut Vec<String>,
    ) -> Option<PrometheusSettings> {
        let listen = s.listen.as_ref()?;
        match listen.get_ref().trim().parse::<SocketAddr>() {
            Ok(addr) => Some(PrometheusSettings { listen: addr }),
            Err(e) => {
                problems.push(loc.at(
                    listen.span(),
                    format!(
                        "[prometheus] listen: `{}`: {e} (expected IP:PORT, like 127.0.0.1:9153)",
                        listen.get_ref()
                    ),
                ));
                None
            }
        }
    }
}

/// The address the endpoint is bound to, for `ctl status`.
static LISTENING: OnceLock<SocketAddr> = OnceLock::new();

/// The endpoint's bound address, when it is on.
pub fn listening() -> Option<SocketAddr> {
    LISTENING.get().copied()
}

/// Binds the endpoint (before privileges are dropped).
pub fn bind(settings: &PrometheusSettings) -> anyhow::Result<MetricsListener> {
    let listener = bind_metrics(settings.listen).map_err(|e| {
        anyhow::anyhow!("[prometheus] listen {}: cannot bind: {e}", settings.listen)
    })?;
    let _ = LISTENING.set(listener.local_addr().unwrap_or(settings.listen));
    Ok(listener)
}

/// Serves scrapes until `shutdown`: `families`, rendered in the Prometheus
/// text format at each scrape.
pub async fn serve(
    listener: MetricsListener,
    families: impl Fn() -> Vec<crate::stats::Family> + Send + Sync + 'static,
    shutdown: Shutdown,
) {
    if let Ok(a) = listener.local_addr() {
        tracing::info!(address = %a, "Prometheus endpoint ready");
    }
    let body = MetricsBody {
        content_type: crate::stats::render::PROMETHEUS_CONTENT_TYPE,
        render: move || crate::stats::render::prometheus(&families()),
    };
    serve_metrics(listener, body, shutdown).await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn the_body_is_served_as_prometheus_text_format_0_0_4() {
        assert_eq!(
            crate::stats::render::PROMETHEUS_CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8"
        );
    }

    struct At;
    impl Locate for At {
        fn at(&self, span: std::ops::Range<usize>, message: String) -> String {
            format!("f.toml:{}: {message}", span.start)
        }
    }

    #[test]
    fn listen_is_off_by_default_and_checked_when_given() {
        let mut problems = Vec::new();
        assert!(
            PrometheusSettings::resolve(&PrometheusSection::default(), &At, &mut problems)
                .is_none()
        );
        let good = PrometheusSection {
            listen: Some(Spanned::new(3..17, "127.0.0.1:9153".to_string())),
        };
        let s = PrometheusSettings::resolve(&good, &At, &mut problems).unwrap();
        assert_eq!(s.listen, "127.0.0.1:9153".parse().unwrap());
        let bad = PrometheusSection {
            listen: Some(Spanned::new(3..12, "localhost".to_string())),
        };
        assert!(PrometheusSettings::resolve(&bad, &At, &mut problems).is_none());
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with("f.toml:3: [prometheus] listen: `localhost`"));
    }
}
