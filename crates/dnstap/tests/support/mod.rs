//! A writer for tests: what bulwark's writer thread does with a [`Drain`],
//! done on the test's own thread into memory, so the queues and the codec can
//! be checked without sockets, files or threads in the crate.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;

use bulwark_dnstap::schema::Dnstap;
use bulwark_dnstap::{sender, Drain, Reader, Sink, SinkConfig, Tap};

pub struct TestWriter {
    pub sink: Sink,
    /// `None` once finished.
    drain: Option<Drain>,
    /// The data frames written so far.
    pub frames: Vec<u8>,
    /// Whether chunks reach the output (false: as if the destination is down).
    pub output_up: bool,
}

impl TestWriter {
    pub fn new(config: &SinkConfig) -> TestWriter {
        let (sink, drain) = Sink::new(config).unwrap();
        TestWriter {
            sink,
            drain: Some(drain),
            frames: Vec::new(),
            output_up: true,
        }
    }

    pub fn tap(&self) -> Tap {
        self.sink.tap()
    }

    /// One round over the queues, as the writer thread makes it.
    pub fn drain_round(&mut self) -> usize {
        let (frames, up) = (&mut self.frames, self.output_up);
        self.drain.as_mut().unwrap().drain_round(|chunk| {
            if up {
                frames.extend_from_slice(chunk);
            }
            up
        })
    }

    /// Rounds until the queues are empty.
    pub fn drain_all(&mut self) -> usize {
        let mut moved = 0;
        loop {
            let round = self.drain_round();
            if round == 0 {
                return moved;
            }
            moved += round;
        }
    }

    pub fn sweep(&mut self) {
        self.drain.as_mut().unwrap().sweep();
    }

    /// What a stopping writer does: what is queued now, then no more.
    pub fn stop(&mut self) {
        let Some(mut drain) = self.drain.take() else {
            return;
        };
        let (frames, up) = (&mut self.frames, self.output_up);
        drain.drain_for_stop(|chunk| {
            if up {
                frames.extend_from_slice(chunk);
            }
            up
        });
        drain.finish();
    }

    /// The frames as a unidirectional stream (a file's contents).
    pub fn stream(&self) -> Vec<u8> {
        let mut out = Vec::new();
        sender::start(&mut out).unwrap();
        out.extend_from_slice(&self.frames);
        sender::stop(&mut out).unwrap();
        out
    }

    pub fn messages(&self) -> Vec<Dnstap> {
        let stream = self.stream();
        Reader::new(stream.as_slice())
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
    }

    /// Writes the stream to a file, for the tools that read files.
    pub fn write_file(&self, path: &Path) {
        let mut file = std::fs::File::create(path).unwrap();
        file.write_all(&self.stream()).unwrap();
    }
}
