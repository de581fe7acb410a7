//! The Prometheus endpoint: `GET /metrics` over HTTP/1.1 on the address in
//! `[prometheus] listen` (off by default). The HTTP side (a small HTTP/1.1
//! responder with its limits) is `bulwark_net`'s; the body (the statistics in
//! the Prometheus text format) is ours.

use std::net::SocketAddr;
use std::sync::OnceLock;

use bulwark_net::{bind_metrics, serve_metrics, MetricsBody, MetricsListener, Shutdown};

use crate::settings::PrometheusSettings;

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
    #[test]
    fn the_body_is_served_as_prometheus_text_format_0_0_4() {
        assert_eq!(
            crate::stats::render::PROMETHEUS_CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8"
        );
    }
}
