//! The HTTP/2 streams of one DoH connection, run inside that connection's
//! own task rather than as tasks of their own.
//!
//! hyper hands every request stream to an executor. With tokio's, each
//! stream is spawned: its future is moved into a new task, and when it has
//! queued its response it wakes the connection's task, which tokio runs
//! next (the woken task takes its LIFO slot). That task then writes the one
//! response waiting. Measured under h2load (16 connections, 32 streams
//! each), the server made 3.3 `writev` calls (TLS records, TCP segments,
//! loopback deliveries) for every read of requests. Here the connection's
//! task polls the connection, then every stream that read brought in, then
//! the connection again: the responses those streams queued leave in one
//! write, as h2o's and nghttp2's servers send them.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures_util::stream::{FuturesUnordered, StreamExt};

type StreamFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// How many times one poll goes round (connection, streams, connection)
/// before it lets other tasks run: a client that keeps the streams busy
/// does not keep the thread.
const ROUNDS_PER_POLL: usize = 8;

/// The executor hyper is given: it keeps the streams it is handed for the
/// [`StreamRunner`] of the same connection.
#[derive(Clone, Default)]
pub(crate) struct StreamInbox(Arc<Mutex<Vec<StreamFuture>>>);

impl<F> hyper::rt::Executor<F> for StreamInbox
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, stream: F) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Box::pin(stream));
    }
}

/// The streams of one connection, polled by the connection's task.
pub(crate) struct StreamRunner {
    inbox: StreamInbox,
    running: FuturesUnordered<StreamFuture>,
}

impl StreamRunner {
    pub(crate) fn new(inbox: StreamInbox) -> StreamRunner {
        StreamRunner {
            inbox,
            running: FuturesUnordered::new(),
        }
    }

    /// Polls `conn` and the streams it started until neither makes progress;
    /// ready with `conn`'s output when the connection ends. Streams still
    /// running then end with it: their client is gone.
    pub(crate) fn poll_drive<C: Future>(
        &mut self,
        mut conn: Pin<&mut C>,
        cx: &mut Context<'_>,
    ) -> Poll<C::Output> {
        for _ in 0..ROUNDS_PER_POLL {
            if let Poll::Ready(out) = conn.as_mut().poll(cx) {
                return Poll::Ready(out);
            }
            self.take_new();
            let mut finished = false;
            while let Poll::Ready(Some(())) = self.running.poll_next_unpin(cx) {
                finished = true;
            }
            if !finished {
                return Poll::Pending;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Streams in flight: started and not yet finished.
    #[cfg(test)]
    fn in_flight(&self) -> usize {
        self.running.len()
    }

    fn take_new(&mut self) {
        let mut inbox = self.inbox.0.lock().unwrap_or_else(PoisonError::into_inner);
        self.running.extend(inbox.drain(..));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use hyper::rt::Executor;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A connection stand-in that hands out `n` streams on its first poll,
    /// each counting itself done, and ends once it has seen them all done.
    struct FakeConn {
        exec: StreamInbox,
        n: usize,
        started: bool,
        done: Arc<AtomicUsize>,
        polls: usize,
    }

    impl Future for FakeConn {
        type Output = usize;
        fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<usize> {
            self.polls = self.polls.saturating_add(1);
            if !self.started {
                self.started = true;
                for _ in 0..self.n {
                    let done = Arc::clone(&self.done);
                    self.exec.execute(async move {
                        done.fetch_add(1, Ordering::Relaxed);
                    });
                }
                return Poll::Pending;
            }
            if self.done.load(Ordering::Relaxed) == self.n {
                Poll::Ready(self.polls)
            } else {
                Poll::Pending
            }
        }
    }

    #[test]
    fn streams_run_in_the_connections_poll_and_the_connection_sees_them_done() {
        let inbox = StreamInbox::default();
        let mut runner = StreamRunner::new(inbox.clone());
        let done = Arc::new(AtomicUsize::new(0));
        let mut conn = FakeConn {
            exec: inbox,
            n: 32,
            started: false,
            done: Arc::clone(&done),
            polls: 0,
        };
        let mut cx = Context::from_waker(std::task::Waker::noop());
        // One poll: the connection starts 32 streams, they all finish, and
        // the connection is polled again (to write their answers) and ends.
        let out = runner.poll_drive(Pin::new(&mut conn), &mut cx);
        assert_eq!(out, Poll::Ready(2));
        assert_eq!(done.load(Ordering::Relaxed), 32);
        assert_eq!(runner.in_flight(), 0);
    }

    #[test]
    fn a_stream_that_waits_keeps_the_poll_pending_and_is_dropped_with_the_connection() {
        let inbox = StreamInbox::default();
        let mut runner = StreamRunner::new(inbox.clone());
        // What the waiting stream holds: freed only when the stream is.
        let held = Arc::new(());
        let in_stream = Arc::clone(&held);
        inbox.execute(async move {
            let _held = in_stream;
            std::future::pending::<()>().await;
        });
        let mut conn = std::future::pending::<()>();
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(runner.poll_drive(Pin::new(&mut conn), &mut cx).is_pending());
        assert_eq!(runner.in_flight(), 1);
        assert_eq!(Arc::strong_count(&held), 2);
        drop(runner);
        drop(inbox);
        assert_eq!(Arc::strong_count(&held), 1);
    }
}
