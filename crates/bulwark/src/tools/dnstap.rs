//! `bulwark dnstap read FILE` and `bulwark dnstap capture`.
//!
//! `read` prints the messages of a Frame Streams file (ours, fstrm_capture's,
//! Knot's or Unbound's). `capture` is the receiving end of bidirectional Frame
//! Streams (the handshake READY/ACCEPT/START ... STOP/FINISH that knotd,
//! unbound and bulwark speak over a Unix or TCP socket), writing what it
//! receives to one unidirectional Frame Streams file that `read`, dnstap-ldns
//! or any dnstap reader understands. It serves one sender at a time; another
//! sender waits in the listen queue until the current one ends.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use bulwark_dnstap::capture::{self, Receiver};
use bulwark_dnstap::{sender, Reader};
use bulwark_net::{Stream, StreamAddr, StreamListener};

use crate::cli::dnstap::{DnstapArgs, DnstapCommand, ReadFormat};

pub fn run(args: &DnstapArgs) -> ExitCode {
    match &args.command {
        DnstapCommand::Read { file, format } => read(file, *format),
        DnstapCommand::Capture {
            unix,
            tcp,
            write,
            count,
        } => {
            let listen = match (unix, tcp) {
                (Some(p), _) => StreamAddr::Unix(p.clone()),
                (None, Some(a)) => StreamAddr::Tcp(*a),
                (None, None) => {
                    eprintln!("bulwark dnstap capture: give --unix PATH or --tcp ADDR:PORT");
                    return ExitCode::FAILURE;
                }
            };
            match capture(&listen, write, *count) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("bulwark dnstap capture: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// read
// ---------------------------------------------------------------------------

fn read(file: &Path, format: ReadFormat) -> ExitCode {
    let input: Box<dyn Read> = if file == Path::new("-") {
        Box::new(io::stdin().lock())
    } else {
        match File::open(file) {
            Ok(f) => Box::new(io::BufReader::new(f)),
            Err(e) => {
                eprintln!("{}: cannot open: {e}", file.display());
                return ExitCode::FAILURE;
            }
        }
    };
    let reader = match Reader::new(input) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{}: not a dnstap Frame Streams file: {e}", file.display());
            return ExitCode::FAILURE;
        }
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let render = match format {
        ReadFormat::Text => bulwark_dnstap::format::text,
        ReadFormat::Yaml => bulwark_dnstap::format::yaml,
        ReadFormat::Json => bulwark_dnstap::format::json,
    };
    let mut seen: u64 = 0;
    for message in reader {
        seen = seen.saturating_add(1);
        let printed = match message {
            Ok(m) => {
                let mut text = render(&m);
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                out.write_all(text.as_bytes())
            }
            Err(e) => {
                let _ = out.flush();
                eprintln!("{}: message {seen}: {e}", file.display());
                return ExitCode::FAILURE;
            }
        };
        if let Err(e) = printed {
            // `| head` closing the pipe is not an error worth a message.
            return if e.kind() == io::ErrorKind::BrokenPipe {
                ExitCode::SUCCESS
            } else {
                eprintln!("bulwark dnstap read: stdout: {e}");
                ExitCode::FAILURE
            };
        }
    }
    match out.flush() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bulwark dnstap read: stdout: {e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------
// capture
// ---------------------------------------------------------------------------

/// How one sender's stream ended.
#[derive(Debug)]
enum Ended {
    /// The sender sent STOP (answered with FINISH) or closed the connection.
    Sender,
    /// `--count` messages have been written.
    CountReached,
}

fn capture(listen: &StreamAddr, path: &Path, count: Option<u64>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let file = File::create(path).with_context(|| format!("{}: cannot create", path.display()))?;
    let mut out = BufWriter::new(file);
    // A unidirectional stream: START once, the data frames of every sender,
    // STOP when we are done.
    sender::start(&mut out).with_context(|| format!("{}: cannot write", path.display()))?;
    let result = runtime.block_on(receive(listen, out, count));
    if let StreamAddr::Unix(p) = listen {
        let _ = std::fs::remove_file(p);
    }
    let (mut out, written) = result?;
    sender::stop(&mut out)
        .and_then(|()| out.flush())
        .and_then(|()| out.get_ref().sync_all())
        .with_context(|| format!("{}: cannot write", path.display()))?;
    eprintln!(
        "bulwark dnstap capture: wrote {written} messages to {}",
        path.display()
    );
    Ok(())
}

/// Accepts senders one after another until a signal or `--count`.
async fn receive(
    listen: &StreamAddr,
    mut out: BufWriter<File>,
    count: Option<u64>,
) -> anyhow::Result<(BufWriter<File>, u64)> {
    use tokio::signal::unix::{signal, SignalKind};

    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let listener = StreamListener::bind(listen)
        .and_then(StreamListener::into_async)
        .with_context(|| format!("cannot listen on {listen}"))?;
    // The address bound, so that `--tcp 127.0.0.1:0` can be used: whoever
    // started the capture reads its port here.
    eprintln!(
        "bulwark dnstap capture: listening on {}",
        listener.local_addr()
    );
    let mut written: u64 = 0;
    loop {
        if count.is_some_and(|n| written >= n) {
            return Ok((out, written));
        }
        let (conn, peer) = tokio::select! {
            accepted = listener.accept() => accepted.context("accept")?,
            _ = interrupt.recv() => return Ok((out, written)),
            _ = terminate.recv() => return Ok((out, written)),
        };
        eprintln!("bulwark dnstap capture: connection from {peer}");
        let stopper = conn.try_clone()?;
        let limit = count.map(|n| n.saturating_sub(written));
        let mut copying = tokio::task::spawn_blocking(move || copy_sender(conn, out, limit));
        let ((returned, copied, outcome), signalled) = tokio::select! {
            done = &mut copying => (done?, false),
            _ = interrupt.recv() => { let _ = stopper.shutdown(); (copying.await?, true) }
            _ = terminate.recv() => { let _ = stopper.shutdown(); (copying.await?, true) }
        };
        out = returned;
        written = written.saturating_add(copied);
        match outcome {
            Ok(Ended::CountReached) => return Ok((out, written)),
            Ok(Ended::Sender) => {
                eprintln!("bulwark dnstap capture: {peer} done ({copied} messages)");
            }
            // A bad sender ends its own connection, not the capture.
            Err(e) => eprintln!("bulwark dnstap capture: {peer}: {e:#}"),
        }
        if signalled {
            return Ok((out, written));
        }
    }
}

/// The bidirectional handshake with one sender, then its data frames into
/// `out`. Gives `out` back with the number of messages copied, whatever
/// happened, so what was received is kept.
fn copy_sender(
    conn: Stream,
    mut out: BufWriter<File>,
    limit: Option<u64>,
) -> (BufWriter<File>, u64, anyhow::Result<Ended>) {
    let mut copied = 0u64;
    let outcome = copy_frames(conn, &mut out, limit, &mut copied);
    (out, copied, outcome)
}

fn copy_frames(
    conn: Stream,
    out: &mut BufWriter<File>,
    limit: Option<u64>,
    copied: &mut u64,
) -> anyhow::Result<Ended> {
    // Frame Streams bidirectional handshake: READY (offering content
    // types) → ACCEPT (the one we take) → START.
    let mut receiver = Receiver::handshake(conn).context("handshake")?;
    eprintln!("bulwark dnstap capture: receiving");
    match receiver.copy_frames(out, limit, copied)? {
        capture::Ended::Limit => Ok(Ended::CountReached),
        capture::Ended::Stop => {
            // A sender that closes right after STOP (unbound does) has
            // what it needs; a FINISH it cannot read is no failure.
            let _ = receiver.finish();
            Ok(Ended::Sender)
        }
        capture::Ended::Closed => Ok(Ended::Sender),
    }
}
