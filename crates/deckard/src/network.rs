//! The simulated internet: one UDP socket and one TCP listener on port 53
//! for every server address of the scenario, each served by a thread, all
//! answering from the scenario as Deckard's `Scenario.reply` does:
//!
//! 1. The server address counts only if some range names it; any other
//!    bound address (the root hint or forwarder when no range names it, an
//!    address from a `REPLY` step) is "unknown" and every range accepts it.
//! 2. The first range eligible for the current step and that address
//!    answers: its first entry that matches the query. If none matches, the
//!    answer is SERVFAIL and the scenario fails at the end ("the scenario
//!    does not define all necessary answers").
//! 3. With no eligible range, a `REPLY` step whose id is the current one or
//!    later and whose entry matches answers, once.
//! 4. Otherwise SERVFAIL, and the scenario fails at the end.
//!
//! TCP is framed as RFC 1035 §4.2.2 says (a two-octet length before each
//! message); a connection stays open for more queries until the resolver
//! closes it. Every query is recorded with how it was answered, for the
//! failure messages.
//!
//! Must be started inside the scenario's network namespace
//! (`bulwark_testkit::netns`), with the addresses already on `lo`.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::answer::answer;
use crate::matching::match_entry;
use crate::message::{question_text, Message};
use crate::scenario::{Scenario, StepKind};

/// DNS.
const PORT: u16 = 53;
/// How often a server thread looks at the stop flag.
const POLL: Duration = Duration::from_millis(50);
/// At most this many non-matching entries are listed for a SERVFAIL.
const MAX_REASONS: usize = 12;

/// How a query from the resolver was dealt with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Answered from this entry (`FILE:LINE` and where it sits).
    Answered(String),
    /// The entry says `do_not_answer`.
    Silent(String),
    /// Nothing in the scenario answers it: SERVFAIL was sent, and the
    /// scenario fails. The reasons say what was tried.
    Unanswered(Vec<String>),
    /// Not a DNS message bulwark-proto could read; not answered.
    Unreadable(String),
}

/// One query the resolver sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryRecord {
    /// The step being played when it arrived.
    pub step: u32,
    pub server: IpAddr,
    pub client: SocketAddr,
    pub tcp: bool,
    /// The question and flags, in one line.
    pub query: String,
    pub outcome: Outcome,
}

impl fmt::Display for QueryRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "step {}: {} -> {} {}: {}",
            self.step,
            self.client.ip(),
            self.server,
            if self.tcp { "TCP" } else { "UDP" },
            self.query
        )?;
        match &self.outcome {
            Outcome::Answered(by) => write!(f, "\n      answered by {by}"),
            Outcome::Silent(by) => write!(f, "\n      not answered (do_not_answer) by {by}"),
            Outcome::Unreadable(e) => write!(f, "\n      unreadable: {e}"),
            Outcome::Unanswered(reasons) => {
                write!(f, "\n      NO ANSWER IN THE SCENARIO (SERVFAIL sent)")?;
                for r in reasons {
                    write!(f, "\n        {r}")?;
                }
                Ok(())
            }
        }
    }
}

/// What the server threads share.
struct Shared {
    scenario: Scenario,
    /// Addresses some range names.
    known: Vec<IpAddr>,
    step: AtomicU32,
    stop: AtomicBool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// `REPLY` steps already used, by index in `scenario.steps`.
    used_replies: Vec<usize>,
    /// Times each range entry answered, by (range, entry) index.
    fired: Vec<(usize, usize)>,
    log: Vec<QueryRecord>,
    /// For answers that do not copy the query's id.
    next_id: u16,
    /// Connection threads, joined at stop.
    connections: Vec<JoinHandle<()>>,
}

/// The running simulated network. Stopped (threads joined, sockets closed)
/// by [`Network::stop`] or on drop.
pub struct Network {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl fmt::Debug for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Network")
            .field("scenario", &self.shared.scenario.name)
            .field("threads", &self.threads.len())
            .finish()
    }
}

impl Network {
    /// Binds every server address of the scenario on UDP and TCP port 53
    /// and starts answering. The addresses must be on an interface already.
    pub fn start(scenario: &Scenario, first_step: u32) -> io::Result<Network> {
        let mut known = Vec::new();
        for r in &scenario.ranges {
            for a in &r.addresses {
                if !known.contains(a) {
                    known.push(*a);
                }
            }
        }
        let shared = Arc::new(Shared {
            scenario: scenario.clone(),
            known,
            step: AtomicU32::new(first_step),
            stop: AtomicBool::new(false),
            state: Mutex::new(State {
                next_id: 0x5eed,
                ..State::default()
            }),
        });
        let mut network = Network {
            shared: Arc::clone(&shared),
            threads: Vec::new(),
        };
        for address in scenario.server_addresses() {
            let udp = UdpSocket::bind((address, PORT))
                .map_err(|e| io::Error::new(e.kind(), format!("UDP {address}:{PORT}: {e}")))?;
            let tcp = TcpListener::bind((address, PORT))
                .map_err(|e| io::Error::new(e.kind(), format!("TCP {address}:{PORT}: {e}")))?;
            let s = Arc::clone(&shared);
            network
                .threads
                .push(spawn(&format!("udp {address}"), move || {
                    serve_udp(&s, &udp, address)
                })?);
            let s = Arc::clone(&shared);
            network
                .threads
                .push(spawn(&format!("tcp {address}"), move || {
                    serve_tcp(&s, &tcp, address)
                })?);
        }
        Ok(network)
    }

    /// The step being played: range eligibility and `REPLY` steps depend on it.
    pub fn set_step(&self, id: u32) {
        self.shared.step.store(id, Ordering::SeqCst);
    }

    /// Every query received so far.
    pub fn queries(&self) -> Vec<QueryRecord> {
        self.shared.lock().log.clone()
    }

    /// How many queries have been received so far.
    pub fn query_count(&self) -> usize {
        self.shared.lock().log.len()
    }

    /// `MANDATORY` entries that never answered, as `FILE:LINE`.
    pub fn mandatory_not_fired(&self) -> Vec<String> {
        let state = self.shared.lock();
        let s = &self.shared.scenario;
        let mut out = Vec::new();
        for (ri, range) in s.ranges.iter().enumerate() {
            for (ei, entry) in range.entries.iter().enumerate() {
                if entry.mandatory && !state.fired.contains(&(ri, ei)) {
                    out.push(s.at(entry.line));
                }
            }
        }
        out
    }

    /// Stops every thread and closes every socket.
    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let connections = std::mem::take(&mut self.shared.lock().connections);
        for t in connections {
            let _ = t.join();
        }
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        self.stop();
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(name.to_string()).spawn(f)
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking server thread must not hide the log from the report.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The answer to one query (`None`: send nothing), recorded.
    fn handle(
        &self,
        server: IpAddr,
        client: SocketAddr,
        tcp: bool,
        wire: &[u8],
    ) -> Option<Vec<u8>> {
        let step = self.step.load(Ordering::SeqCst);
        let mut record = QueryRecord {
            step,
            server,
            client,
            tcp,
            query: String::new(),
            outcome: Outcome::Unreadable(String::new()),
        };
        let query = match Message::from_wire(wire) {
            Ok(q) => q,
            Err(e) => {
                record.query = format!("{} octets", wire.len());
                record.outcome = Outcome::Unreadable(e);
                self.lock().log.push(record);
                return None;
            }
        };
        record.query = summary(&query);
        let mut state = self.lock();
        let (reply, outcome) = self.reply(&mut state, step, server, tcp, &query);
        record.outcome = outcome;
        state.log.push(record);
        reply
    }

    fn reply(
        &self,
        state: &mut State,
        step: u32,
        server: IpAddr,
        tcp: bool,
        query: &Message,
    ) -> (Option<Vec<u8>>, Outcome) {
        let s = &self.scenario;
        let address = self.known.contains(&server).then_some(server);
        state.next_id = state.next_id.wrapping_mul(25_173).wrapping_add(13_849);
        let own_id = state.next_id;
        if let Some((ri, range)) = s
            .ranges
            .iter()
            .enumerate()
            .find(|(_, r)| r.eligible(step, address))
        {
            let mut reasons = Vec::new();
            for (ei, entry) in range.entries.iter().enumerate() {
                let transport = if entry.transport_matches(tcp) {
                    Ok(())
                } else {
                    Err(format!(
                        "entry at line {}: the query came over {}",
                        entry.line,
                        if tcp { "TCP" } else { "UDP" }
                    ))
                };
                if let Err(why) = transport {
                    if reasons.len() < MAX_REASONS {
                        reasons.push(why);
                    }
                    continue;
                }
                match match_entry(entry, query) {
                    Ok(()) => {
                        state.fired.push((ri, ei));
                        let by = format!(
                            "{} (RANGE {}-{} at line {})",
                            s.at(entry.line),
                            range.from,
                            range.to,
                            range.line
                        );
                        return match answer(entry, query, own_id) {
                            Some(wire) => (Some(wire), Outcome::Answered(by)),
                            None => (None, Outcome::Silent(by)),
                        };
                    }
                    Err(m) => {
                        if reasons.len() < MAX_REASONS {
                            reasons.push(format!(
                                "entry at line {}: {}",
                                entry.line,
                                one_line(&m.to_string())
                            ));
                        }
                    }
                }
            }
            reasons.insert(
                0,
                format!(
                    "RANGE {}-{} at {} is eligible, but none of its {} entries matches:",
                    range.from,
                    range.to,
                    s.at(range.line),
                    range.entries.len()
                ),
            );
            return (
                Some(Message::servfail_for(query).to_wire()),
                Outcome::Unanswered(reasons),
            );
        }
        for (si, st) in s.steps.iter().enumerate() {
            if st.kind != StepKind::Reply || st.id < step || state.used_replies.contains(&si) {
                continue;
            }
            let Some(entry) = &st.entry else { continue };
            if entry.transport_matches(tcp) && match_entry(entry, query).is_ok() {
                state.used_replies.push(si);
                let by = format!("{} (STEP {} REPLY)", s.at(entry.line), st.id);
                return match answer(entry, query, own_id) {
                    Some(wire) => (Some(wire), Outcome::Answered(by)),
                    None => (None, Outcome::Silent(by)),
                };
            }
        }
        let reason = format!(
            "no RANGE is eligible for step {step} at {server}, and no unused REPLY step from {step} on matches"
        );
        (
            Some(Message::servfail_for(query).to_wire()),
            Outcome::Unanswered(vec![reason]),
        )
    }
}

/// A mismatch in one line (sections span several).
fn one_line(text: &str) -> String {
    text.lines().map(str::trim).collect::<Vec<_>>().join(" ")
}

/// `qname class type`, the header flags and `DO`, for the query log.
fn summary(q: &Message) -> String {
    let question = q
        .question
        .first()
        .map_or("<no question>".to_string(), question_text);
    let flags = crate::message::flags_text(&q.flags);
    let edns = match &q.edns {
        Some(e) if e.dnssec_ok => " +edns DO",
        Some(_) => " +edns",
        None => "",
    };
    format!("{question} [{flags}]{edns}")
}

fn serve_udp(shared: &Arc<Shared>, socket: &UdpSocket, address: IpAddr) {
    if socket.set_read_timeout(Some(POLL)).is_err() {
        return;
    }
    let mut buf = vec![0u8; 65535];
    while !shared.stop.load(Ordering::SeqCst) {
        let Ok((n, client)) = socket.recv_from(&mut buf) else {
            continue;
        };
        let Some(query) = buf.get(..n) else { continue };
        if let Some(reply) = shared.handle(address, client, false, query) {
            let _ = socket.send_to(&reply, client);
        }
    }
}

fn serve_tcp(shared: &Arc<Shared>, listener: &TcpListener, address: IpAddr) {
    if listener.set_nonblocking(true).is_err() {
        return;
    }
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, client)) => {
                let s = Arc::clone(shared);
                let t = spawn(&format!("tcp {address} {client}"), move || {
                    serve_connection(&s, stream, address, client);
                });
                if let Ok(t) = t {
                    shared.lock().connections.push(t);
                }
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

fn serve_connection(shared: &Shared, mut stream: TcpStream, address: IpAddr, client: SocketAddr) {
    if stream.set_nonblocking(false).is_err() || stream.set_read_timeout(Some(POLL)).is_err() {
        return;
    }
    loop {
        let mut len = [0u8; 2];
        if !read_full(shared, &mut stream, &mut len) {
            return;
        }
        let mut query = vec![0u8; usize::from(u16::from_be_bytes(len))];
        if !read_full(shared, &mut stream, &mut query) {
            return;
        }
        if let Some(reply) = shared.handle(address, client, true, &query) {
            let Ok(n) = u16::try_from(reply.len()) else {
                continue;
            };
            let mut framed = n.to_be_bytes().to_vec();
            framed.extend_from_slice(&reply);
            if stream.write_all(&framed).is_err() {
                return;
            }
        }
    }
}

/// Fills `buf`; `false` at the end of the stream, on an error, or when the
/// network stops.
fn read_full(shared: &Shared, stream: &mut TcpStream, buf: &mut [u8]) -> bool {
    let mut filled = 0;
    while filled < buf.len() {
        if shared.stop.load(Ordering::SeqCst) {
            return false;
        }
        let Some(rest) = buf.get_mut(filled..) else {
            return false;
        };
        match stream.read(rest) {
            Ok(0) => return false,
            Ok(n) => filled += n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_str;
    use std::path::Path;

    /// Two ranges for one server in different step windows, a range for
    /// any address, and two one-shot REPLY steps.
    const SCENARIO: &str = "stub-addr: 192.0.2.1\nCONFIG_END\nSCENARIO_BEGIN t\n\
        RANGE_BEGIN 0 10\nADDRESS 192.0.2.1\n\
        ENTRY_BEGIN\nMATCH opcode qtype qname\nADJUST copy_id\nREPLY QR AA NOERROR\nSECTION QUESTION\nexample. IN A\nSECTION ANSWER\nexample. IN A 10.0.0.1\nENTRY_END\n\
        ENTRY_BEGIN\nMATCH opcode qname\nADJUST copy_id do_not_answer\nREPLY QR\nSECTION QUESTION\nsilent.example. IN A\nENTRY_END\n\
        RANGE_END\n\
        RANGE_BEGIN 11 20\nADDRESS 192.0.2.1\n\
        ENTRY_BEGIN\nMATCH opcode qtype qname\nADJUST copy_id\nREPLY QR AA NOERROR\nSECTION QUESTION\nexample. IN A\nSECTION ANSWER\nexample. IN A 10.0.0.2\nENTRY_END\n\
        RANGE_END\n\
        STEP 1 QUERY\nENTRY_BEGIN\nREPLY RD\nSECTION QUESTION\nexample. IN A\nENTRY_END\n\
        STEP 30 REPLY\nENTRY_BEGIN\nMATCH opcode qname\nADJUST copy_id\nREPLY QR AA\nSECTION QUESTION\nlate. IN A\nSECTION ANSWER\nlate. IN A 10.0.0.3\nENTRY_END\n\
        STEP 40 REPLY\nENTRY_BEGIN\nMATCH opcode qname\nADJUST copy_id\nREPLY QR AA\nSECTION QUESTION\nlate. IN A\nSECTION ANSWER\nlate. IN A 10.0.0.4\nENTRY_END\n\
        SCENARIO_END\n";

    fn shared() -> Shared {
        let scenario = parse_str(Path::new("t.rpl"), SCENARIO).unwrap();
        Shared {
            known: vec!["192.0.2.1".parse().unwrap()],
            scenario,
            step: AtomicU32::new(1),
            stop: AtomicBool::new(false),
            state: Mutex::new(State::default()),
        }
    }

    fn ask(s: &Shared, step: u32, server: &str, qname: &str) -> (Option<Message>, Outcome) {
        s.step.store(step, Ordering::SeqCst);
        let mut q = Message {
            id: 0x4242,
            question: vec![bulwark_proto::message::Question {
                qname: qname.parse().unwrap(),
                qtype: bulwark_proto::Rtype::A,
                qclass: bulwark_proto::Class::IN,
            }],
            ..Message::default()
        };
        q.flags.cd = true;
        let reply = s.handle(
            server.parse().unwrap(),
            "127.127.0.2:5353".parse().unwrap(),
            false,
            &q.to_wire(),
        );
        let outcome = s.lock().log.last().unwrap().outcome.clone();
        (reply.map(|r| Message::from_wire(&r).unwrap()), outcome)
    }

    fn address_in(m: &Message) -> String {
        m.answer[0].rdata.to_string()
    }

    #[test]
    fn the_range_of_the_current_step_answers() {
        let s = shared();
        let (a, outcome) = ask(&s, 1, "192.0.2.1", "EXAMPLE.");
        let a = a.unwrap();
        assert_eq!((a.id, address_in(&a).as_str()), (0x4242, "10.0.0.1"));
        assert!(matches!(outcome, Outcome::Answered(by) if by.starts_with("t.rpl:")));
        let (a, _) = ask(&s, 15, "192.0.2.1", "example.");
        assert_eq!(address_in(&a.unwrap()), "10.0.0.2");
    }

    #[test]
    fn a_server_no_range_names_is_answered_by_any_eligible_range() {
        let s = shared();
        let (a, _) = ask(&s, 1, "198.51.100.7", "example.");
        assert_eq!(address_in(&a.unwrap()), "10.0.0.1");
    }

    #[test]
    fn match_tcp_and_udp_choose_by_transport() {
        let text = "CONFIG_END\nSCENARIO_BEGIN t\nRANGE_BEGIN 0 10\nADDRESS 192.0.2.1\n\
            ENTRY_BEGIN\nMATCH opcode qname tcp\nADJUST copy_id\nREPLY QR AA\nSECTION QUESTION\nexample. IN A\nSECTION ANSWER\nexample. IN A 10.0.0.1\nENTRY_END\n\
            ENTRY_BEGIN\nMATCH opcode qname udp\nADJUST copy_id\nREPLY QR AA TC\nSECTION QUESTION\nexample. IN A\nENTRY_END\n\
            RANGE_END\nSCENARIO_END\n";
        let s = Shared {
            known: vec!["192.0.2.1".parse().unwrap()],
            scenario: parse_str(Path::new("t.rpl"), text).unwrap(),
            step: AtomicU32::new(1),
            stop: AtomicBool::new(false),
            state: Mutex::new(State::default()),
        };
        let q = Message {
            id: 7,
            question: vec![bulwark_proto::message::Question {
                qname: "example.".parse().unwrap(),
                qtype: bulwark_proto::Rtype::A,
                qclass: bulwark_proto::Class::IN,
            }],
            ..Message::default()
        };
        let client = "127.127.0.2:5353".parse().unwrap();
        let server = "192.0.2.1".parse().unwrap();
        let over = |tcp| {
            Message::from_wire(&s.handle(server, client, tcp, &q.to_wire()).unwrap()).unwrap()
        };
        let udp = over(false);
        assert!(udp.flags.tc && udp.answer.is_empty());
        let tcp = over(true);
        assert!(!tcp.flags.tc);
        assert_eq!(address_in(&tcp), "10.0.0.1");
    }

    #[test]
    fn do_not_answer_sends_nothing_and_is_recorded() {
        let s = shared();
        let (a, outcome) = ask(&s, 1, "192.0.2.1", "silent.example.");
        assert!(a.is_none());
        assert!(matches!(outcome, Outcome::Silent(_)));
    }

    #[test]
    fn a_query_no_entry_matches_gets_servfail_and_is_unanswered() {
        let s = shared();
        let (a, outcome) = ask(&s, 1, "192.0.2.1", "other.");
        let a = a.unwrap();
        assert_eq!(a.rcode, bulwark_proto::Rcode::SERVFAIL);
        assert_eq!(a.id, 0x4242);
        let Outcome::Unanswered(reasons) = outcome else {
            panic!("{outcome:?}")
        };
        assert!(
            reasons[0].contains("RANGE 0-10 at t.rpl:4 is eligible"),
            "{reasons:?}"
        );
        assert!(reasons[1].contains("entry at line 6: qname"), "{reasons:?}");
    }

    #[test]
    fn reply_steps_answer_once_each_in_order_when_no_range_is_eligible() {
        let s = shared();
        let (a, _) = ask(&s, 25, "192.0.2.1", "late.");
        assert_eq!(address_in(&a.unwrap()), "10.0.0.3");
        let (a, _) = ask(&s, 25, "192.0.2.1", "late.");
        assert_eq!(address_in(&a.unwrap()), "10.0.0.4");
        let (a, outcome) = ask(&s, 25, "192.0.2.1", "late.");
        assert_eq!(a.unwrap().rcode, bulwark_proto::Rcode::SERVFAIL);
        assert!(matches!(outcome, Outcome::Unanswered(_)));
        // A REPLY step before the current one is not used.
        let s = shared();
        let (a, _) = ask(&s, 35, "192.0.2.1", "late.");
        assert_eq!(address_in(&a.unwrap()), "10.0.0.4");
    }

    #[test]
    fn unreadable_queries_are_recorded_and_not_answered() {
        let s = shared();
        let reply = s.handle(
            "192.0.2.1".parse().unwrap(),
            "127.0.0.1:1".parse().unwrap(),
            true,
            &[1, 2, 3],
        );
        assert!(reply.is_none());
        assert!(matches!(s.lock().log[0].outcome, Outcome::Unreadable(_)));
    }
}
