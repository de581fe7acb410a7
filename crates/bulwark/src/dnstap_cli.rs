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
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use bulwark_dnstap::frame::{write_control, write_data, ControlType, Frame, FrameReader};
use bulwark_dnstap::{Reader, CONTENT_TYPE};
use clap::{Args, Subcommand, ValueEnum};

#[derive(Debug, Args)]
pub struct DnstapArgs {
    #[command(subcommand)]
    pub command: DnstapCommand,
}

#[derive(Debug, Subcommand)]
pub enum DnstapCommand {
    /// Print the messages of a Frame Streams file.
    Read {
        /// The dnstap file (`-` reads standard input).
        file: PathBuf,
        /// `text`: one line per message (like dnstap-ldns); `yaml`: a
        /// document per message (like dnstap-ldns -y); `json`: one object per line.
        #[arg(long, value_enum, default_value_t = ReadFormat::Text)]
        format: ReadFormat,
    },
    /// Receive dnstap from a sender (knotd, unbound, bulwark) and write it to a file.
    #[command(group(clap::ArgGroup::new("listen").required(true).args(["unix", "tcp"])))]
    Capture {
        /// Listen on this Unix socket path (a stale socket file is replaced).
        #[arg(long, value_name = "PATH")]
        unix: Option<PathBuf>,
        /// Listen on this TCP address, e.g. 127.0.0.1:6000.
        #[arg(long, value_name = "ADDR:PORT")]
        tcp: Option<SocketAddr>,
        /// The Frame Streams file to write (replaced if it exists).
        #[arg(short = 'w', long = "write", value_name = "FILE")]
        write: PathBuf,
        /// Stop after this many messages.
        #[arg(long, value_name = "N")]
        count: Option<u64>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReadFormat {
    Text,
    Yaml,
    Json,
}

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
                (Some(p), _) => Listen::Unix(p.clone()),
                (None, Some(a)) => Listen::Tcp(*a),
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

#[derive(Debug, Clone)]
enum Listen {
    Unix(PathBuf),
    Tcp(SocketAddr),
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Unix(p) => write!(f, "unix:{}", p.display()),
            Listen::Tcp(a) => write!(f, "tcp:{a}"),
        }
    }
}

/// An accepted sender, as a blocking std stream.
#[derive(Debug)]
enum Conn {
    Unix(std::os::unix::net::UnixStream),
    Tcp(std::net::TcpStream),
}

impl Conn {
    fn try_clone(&self) -> io::Result<Conn> {
        Ok(match self {
            Conn::Unix(s) => Conn::Unix(s.try_clone()?),
            Conn::Tcp(s) => Conn::Tcp(s.try_clone()?),
        })
    }

    /// Ends a blocked read on another clone: it returns end of stream.
    fn shutdown(&self) {
        let _ = match self {
            Conn::Unix(s) => s.shutdown(std::net::Shutdown::Both),
            Conn::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Unix(s) => s.read(buf),
            Conn::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Unix(s) => s.write(buf),
            Conn::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Unix(s) => s.flush(),
            Conn::Tcp(s) => s.flush(),
        }
    }
}

enum Listener {
    Unix(tokio::net::UnixListener),
    Tcp(tokio::net::TcpListener),
}

impl Listener {
    fn bind(listen: &Listen) -> anyhow::Result<Listener> {
        match listen {
            Listen::Unix(path) => {
                remove_stale_socket(path)?;
                let l = tokio::net::UnixListener::bind(path)
                    .with_context(|| format!("cannot listen on {}", path.display()))?;
                Ok(Listener::Unix(l))
            }
            Listen::Tcp(addr) => {
                let l = std::net::TcpListener::bind(addr)
                    .with_context(|| format!("cannot listen on {addr}"))?;
                l.set_nonblocking(true)?;
                Ok(Listener::Tcp(tokio::net::TcpListener::from_std(l)?))
            }
        }
    }

    /// What it listens on, with a TCP port 0 resolved to the port bound.
    fn bound(&self, listen: &Listen) -> Listen {
        match (self, listen) {
            (Listener::Tcp(l), Listen::Tcp(a)) => Listen::Tcp(l.local_addr().unwrap_or(*a)),
            (_, other) => other.clone(),
        }
    }

    async fn accept(&self) -> io::Result<(Conn, String)> {
        let (conn, peer) = match self {
            Listener::Unix(l) => {
                let (s, _) = l.accept().await?;
                let s = s.into_std()?;
                s.set_nonblocking(false)?;
                (Conn::Unix(s), "a Unix socket peer".to_string())
            }
            Listener::Tcp(l) => {
                let (s, peer) = l.accept().await?;
                let s = s.into_std()?;
                s.set_nonblocking(false)?;
                (Conn::Tcp(s), peer.to_string())
            }
        };
        Ok((conn, peer))
    }
}

/// A socket file left by a previous run would make bind fail; anything else
/// at that path is not ours to delete.
fn remove_stale_socket(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::FileTypeExt as _;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => std::fs::remove_file(path)
            .with_context(|| format!("cannot remove the old socket {}", path.display())),
        Ok(_) => anyhow::bail!("{}: exists and is not a socket", path.display()),
        Err(_) => Ok(()),
    }
}

/// How one sender's stream ended.
#[derive(Debug)]
enum Ended {
    /// The sender sent STOP (answered with FINISH) or closed the connection.
    Sender,
    /// `--count` messages have been written.
    CountReached,
}

fn capture(listen: &Listen, path: &Path, count: Option<u64>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let file = File::create(path).with_context(|| format!("{}: cannot create", path.display()))?;
    let mut out = BufWriter::new(file);
    // A unidirectional stream: START once, the data frames of every sender,
    // STOP when we are done.
    write_control(&mut out, ControlType::Start, Some(CONTENT_TYPE))
        .with_context(|| format!("{}: cannot write", path.display()))?;
    let result = runtime.block_on(receive(listen, out, count));
    if let Listen::Unix(p) = listen {
        let _ = std::fs::remove_file(p);
    }
    let (mut out, written) = result?;
    write_control(&mut out, ControlType::Stop, None)
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
    listen: &Listen,
    mut out: BufWriter<File>,
    count: Option<u64>,
) -> anyhow::Result<(BufWriter<File>, u64)> {
    use tokio::signal::unix::{signal, SignalKind};

    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let listener = Listener::bind(listen)?;
    // The address bound, so that `--tcp 127.0.0.1:0` can be used: whoever
    // started the capture reads its port here.
    eprintln!(
        "bulwark dnstap capture: listening on {}",
        listener.bound(listen)
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
            _ = interrupt.recv() => { stopper.shutdown(); (copying.await?, true) }
            _ = terminate.recv() => { stopper.shutdown(); (copying.await?, true) }
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
    conn: Conn,
    mut out: BufWriter<File>,
    limit: Option<u64>,
) -> (BufWriter<File>, u64, anyhow::Result<Ended>) {
    let mut copied = 0u64;
    let outcome = copy_frames(conn, &mut out, limit, &mut copied);
    (out, copied, outcome)
}

fn copy_frames(
    conn: Conn,
    out: &mut BufWriter<File>,
    limit: Option<u64>,
    copied: &mut u64,
) -> anyhow::Result<Ended> {
    let mut frames = FrameReader::new(io::BufReader::new(conn));
    // Frame Streams bidirectional handshake: READY (offering content
    // types) → ACCEPT (the one we take) → START.
    let ready = frames
        .expect_control(ControlType::Ready)
        .context("waiting for READY")?;
    if !ready.allows(CONTENT_TYPE) {
        anyhow::bail!(
            "the sender offers {}, not protobuf:dnstap.Dnstap",
            ready.describe_content_types()
        );
    }
    {
        let stream = frames.get_mut().get_mut();
        write_control(stream, ControlType::Accept, Some(CONTENT_TYPE))?;
        stream.flush()?;
    }
    let start = frames
        .expect_control(ControlType::Start)
        .context("waiting for START")?;
    if !start.allows(CONTENT_TYPE) {
        anyhow::bail!(
            "the sender started {}, not protobuf:dnstap.Dnstap",
            start.describe_content_types()
        );
    }
    eprintln!("bulwark dnstap capture: receiving");
    loop {
        if limit.is_some_and(|n| *copied >= n) {
            out.flush()?;
            return Ok(Ended::CountReached);
        }
        match frames.read_frame()? {
            Some(Frame::Data(payload)) => {
                write_data(out, &payload)?;
                *copied = copied.saturating_add(1);
            }
            Some(Frame::Control(c)) if c.kind == ControlType::Stop => {
                out.flush()?;
                // A sender that closes right after STOP (unbound does) has
                // what it needs; a FINISH it cannot read is no failure.
                let stream = frames.get_mut().get_mut();
                let _ =
                    write_control(stream, ControlType::Finish, None).and_then(|()| stream.flush());
                return Ok(Ended::Sender);
            }
            Some(Frame::Control(c)) => {
                anyhow::bail!("unexpected {:?} control frame after START", c.kind)
            }
            None => {
                out.flush()?;
                return Ok(Ended::Sender);
            }
        }
    }
}
