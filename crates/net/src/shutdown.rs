//! One signal that stops every listener: an eventfd the UDP workers with several
//! sockets poll beside them (so they wake at once, without receive timeouts;
//! a worker with one socket sleeps in recvmmsg and is woken by `UdpWorkers::join`
//! shutting that socket for reading), and a watch channel the TCP tasks await.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::watch;

use crate::error::NetError;
use crate::sys;

/// Cheap to clone; every clone triggers and observes the same shutdown.
#[derive(Debug, Clone)]
pub struct Shutdown {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    eventfd: OwnedFd,
    triggered: AtomicBool,
    watch: watch::Sender<bool>,
}

impl Shutdown {
    pub fn new() -> Result<Shutdown, NetError> {
        let eventfd = sys::eventfd().map_err(NetError::Shutdown)?;
        let (watch, _) = watch::channel(false);
        Ok(Shutdown {
            inner: Arc::new(Inner {
                eventfd,
                triggered: AtomicBool::new(false),
                watch,
            }),
        })
    }

    /// Starts the shutdown; idempotent.
    pub fn trigger(&self) {
        if !self.inner.triggered.swap(true, Ordering::SeqCst) {
            // The eventfd stays readable from now on (level-triggered poll), so
            // every worker sees it, however many there are.
            sys::eventfd_signal(self.inner.eventfd.as_raw_fd());
            self.inner.watch.send_replace(true);
        }
    }

    pub fn is_triggered(&self) -> bool {
        self.inner.triggered.load(Ordering::SeqCst)
    }

    /// Resolves once [`Shutdown::trigger`] has been called.
    pub async fn wait(&self) {
        let mut rx = self.inner.watch.subscribe();
        // An error means the sender is gone, which cannot happen while `self` lives;
        // either way there is nothing more to wait for.
        let _ = rx.wait_for(|t| *t).await;
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.inner.eventfd.as_raw_fd()
    }
}
